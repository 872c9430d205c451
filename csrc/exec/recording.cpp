// Recording: a program under construction, its parameters, host pools and
// writes, and running it (with partial results kept on failure).
#include "exec/recording.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include <c10/util/Exception.h>

#include "exec/cache.h"
#include "exec/exec.h"
#include "exec/metrics.h"
#include "exec/trace.h"

namespace torch_tpu::exec {

namespace {

std::atomic<uint64_t> next_recording_id{1};

bool is_current_contents(const c10::intrusive_ptr<c10::StorageImpl>& impl, const StorageData* data) {
  // A storage's own record is its DataPtr's context; only a pointer alias needs the lookup.
  return impl->data_ptr().get_context() == data || find_storage_data(c10::Storage(impl)) == data;
}

// An input buffer that only the recording's parameter list holds: the
// tensors that read it died while the program was pending.
bool held_only_by_recording(const runtime::BufferPtr& b) { return b && b.use_count() == 1; }

}  // namespace

Recording::Recording() : id_(next_recording_id++) {}

void Recording::use_device(int device) {
  if (device_ < 0) device_ = device;
  TORCH_CHECK(device_ == device, "Expected all tensors to be on the same device, but found at least two devices, tpu:",
              device_, " and tpu:", device, "!");
}

ir::Value Recording::read(const c10::Storage& storage) {
  StorageData& sd = storage_data(storage);
  use_device(sd.device);
  if (holds(sd)) return writes_[sd.pending_write].value;
  if (!sd.buffer) return -1;
  auto found = buffer_params_.find(sd.buffer.get());
  if (found != buffer_params_.end()) return found->second;
  int64_t len = static_cast<int64_t>(sd.nbytes / c10::elementSize(sd.dtype));
  // The parameter has the buffer's dims; what reads it sees the flat contents.
  ir::Type type{sd.dtype, sd.buffer->dims()};
  TORCH_INTERNAL_ASSERT(type.numel() == len, "tpu: a storage's buffer does not hold its ", len, " elements");
  ir::Value flat = ir::reshape(graph_, graph_.param(type), {len});
  params_.push_back(sd.buffer);
  buffer_params_.emplace(sd.buffer.get(), flat);
  input_bytes_ += static_cast<int64_t>(sd.buffer->nbytes());
  return flat;
}

ir::Value Recording::output_value(const StorageData& sd) {
  ir::Value flat = writes_[sd.pending_write].value;
  const ir::Type& type = graph_.type(flat);
  // Replacing a buffer of the same type lets the run reuse it (donation).
  if (sd.buffer && sd.dtype == type.dtype && ir::Type{type.dtype, sd.buffer->dims()}.numel() == type.numel())
    return ir::reshape(graph_, flat, sd.buffer->dims());
  // Otherwise the shape it was computed in: XLA's kernels then read it as
  // such in later programs (a reduction over a flat parameter's reshape is
  // not handed to the CPU plugin's fast reduction library).
  int producer = graph_.producer(flat);
  if (producer >= 0 && graph_.node(producer).op == "stablehlo.reshape") return graph_.operands(graph_.node(producer))[0];
  return flat;
}

int64_t Recording::dead_input_bytes() const {
  int64_t bytes = 0;
  for (const runtime::BufferPtr& b : params_)
    if (held_only_by_recording(b)) bytes += static_cast<int64_t>(b->nbytes());
  return bytes;
}

c10::ScalarType Recording::contents_dtype(const StorageData& sd) const {
  return holds(sd) ? graph_.type(writes_[sd.pending_write].value).dtype : sd.dtype;
}

void Recording::write(const c10::Storage& storage, ir::Value flat) {
  StorageData& sd = storage_data_for_write(storage);
  use_device(sd.device);
  int previous = holds(sd) ? sd.pending_write : -1;
  if (previous < 0) {
    sd.pending_first = !sd.buffer;
    if (sd.pending_first) count_live_pending(+1, sd.nbytes);
  }
  // A pointer alias's write must land even if the alias dies first: it is kept until the run.
  writes_.push_back({storage.getWeakStorageImpl(), is_pointer_alias(storage) ? storage : c10::Storage(), &sd, flat,
                     previous, runtime::OpNameScope::current()});
  sd.pending_in = id();
  sd.pending_write = static_cast<int>(writes_.size()) - 1;
}

int64_t Recording::mark_results(size_t first_write) {
  int64_t marked = 0;
  for (size_t i = first_write; i < writes_.size(); ++i) {
    Write& w = writes_[i];
    auto impl = w.storage.lock();  // a temporary of the op may have died already
    if (!impl || !is_current_contents(impl, w.data) || !w.data->pending_first || w.data->fused_result) continue;
    w.data->fused_result = true;
    ++marked;
  }
  return marked;
}

void Recording::forget(StorageData& sd) {
  if (!holds(sd)) return;
  if (sd.pending_first) count_live_pending(-1, sd.nbytes);
  sd.pending_first = false;
  sd.pending_in = 0;
  sd.pending_write = -1;
}

std::pair<ir::Value, int64_t> Recording::host_value(const void* data, c10::ScalarType dtype, int64_t count) {
  HostPool* pool = nullptr;
  for (auto& p : pools_)
    if (p.dtype == dtype) pool = &p;
  if (!pool) {
    ir::Value param = graph_.param(ir::Type{dtype, {0}});
    params_.push_back(nullptr);
    pools_.push_back({dtype, param, params_.size() - 1, {}});
    pool = &pools_.back();
  }
  size_t esize = c10::elementSize(dtype);
  int64_t start = static_cast<int64_t>(pool->bytes.size() / esize);
  const char* bytes = static_cast<const char*>(data);
  pool->bytes.insert(pool->bytes.end(), bytes, bytes + count * esize);
  graph_.set_param_type(pool->param, ir::Type{dtype, {start + count}});
  return {pool->param, start};
}

std::pair<ir::Value, int64_t> Recording::rng_state(at::Generator generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  auto state = generator.get<TpuGeneratorImpl>()->next_stream();
  auto slot = host_value(state.data(), c10::kUInt64, 2);
  size_t pool = 0;
  while (pools_[pool].param != slot.first) ++pool;
  random_draws_.push_back({pool, slot.second, std::move(generator)});
  return slot;
}

Recording::Mark Recording::mark() const {
  Mark m;
  m.graph = graph_.mark();
  m.params = params_.size();
  m.writes = writes_.size();
  m.ops = ops_.size();
  m.random_draws = random_draws_.size();
  m.device = device_;
  for (auto& p : pools_) m.pool_bytes.push_back(p.bytes.size());
  return m;
}

void Recording::rollback(const Mark& m) {
  for (size_t i = writes_.size(); i-- > m.writes;) {
    Write& w = writes_[i];
    auto impl = w.storage.lock();
    if (impl && is_current_contents(impl, w.data) && w.data->pending_write == static_cast<int>(i)) {
      w.data->pending_write = w.previous;
      if (w.previous < 0) {
        w.data->pending_in = 0;
        if (w.data->pending_first) count_live_pending(-1, w.data->nbytes);
        w.data->pending_first = false;
      }
    }
  }
  writes_.erase(writes_.begin() + m.writes, writes_.end());
  for (size_t i = m.params; i < params_.size(); ++i) {
    if (!params_[i]) continue;
    buffer_params_.erase(params_[i].get());
    input_bytes_ -= static_cast<int64_t>(params_[i]->nbytes());
  }
  params_.resize(m.params);
  pools_.resize(m.pool_bytes.size());
  for (size_t i = 0; i < pools_.size(); ++i) {
    pools_[i].bytes.resize(m.pool_bytes[i]);
    int64_t count = static_cast<int64_t>(m.pool_bytes[i] / c10::elementSize(pools_[i].dtype));
    graph_.set_param_type(pools_[i].param, ir::Type{pools_[i].dtype, {count}});
  }
  random_draws_.resize(m.random_draws);
  graph_.truncate(m.graph);
  ops_.resize(m.ops);
  device_ = m.device;
}

void Recording::donate_buffers(ir::Graph& program, const std::vector<runtime::Buffer*>& args,
                               const std::vector<size_t>& writes) {
  // An output that replaces a storage's contents may reuse the storage's old
  // buffer when nothing else can see that buffer any more: only the storage
  // and this recording's parameter list hold it. In-place updates (optimizer
  // steps, running stats) then need no second copy of their tensors.
  std::unordered_map<const runtime::Buffer*, size_t> arg_index;  // built at the first candidate
  bool indexed = false;
  auto index_args = [&] {
    if (indexed) return;
    for (size_t i = 0; i < args.size(); ++i) arg_index.emplace(args[i], i);
    indexed = true;
  };
  std::vector<bool> output_aliased(writes.size(), false);
  for (size_t k = 0; k < writes.size(); ++k) {
    const runtime::BufferPtr& old = writes_[writes[k]].data->buffer;
    if (!old || old.use_count() != 2) continue;
    index_args();
    auto it = arg_index.find(old.get());
    if (it == arg_index.end()) continue;
    if (program.type(program.params()[it->second]) != program.type(program.outputs()[k])) continue;
    program.alias(it->second, k);
    output_aliased[k] = true;
    arg_index.erase(it);  // one output per donated buffer
  }
  // Inputs whose tensors died while the program was pending (activations
  // that backward has consumed) are freed only when the run ends; given to
  // outputs of their type, they hold results instead of new memory, so the
  // program holds less than op-by-op execution, which frees them as it goes.
  // execute_before() keeps recording into the graph, whose later part may
  // still read them.
  if (keep_graph_) return;
  std::vector<size_t> dead;
  for (const runtime::BufferPtr& b : params_) {
    if (!held_only_by_recording(b)) continue;
    index_args();
    auto it = arg_index.find(b.get());
    if (it != arg_index.end()) dead.push_back(it->second);
  }
  std::sort(dead.begin(), dead.end());
  for (size_t k = 0; k < writes.size() && !dead.empty(); ++k) {
    if (output_aliased[k]) continue;
    const ir::Type& type = program.type(program.outputs()[k]);
    for (auto d = dead.begin(); d != dead.end(); ++d) {
      if (program.type(program.params()[*d]) != type) continue;
      program.alias(*d, k);
      dead.erase(d);
      break;
    }
  }
}

std::exception_ptr Recording::run_outputs(const std::vector<size_t>& writes, const std::vector<runtime::Buffer*>& args,
                                          bool donate, std::vector<const char*>& failed_ops) {
  std::vector<ir::Value> outs;
  for (size_t i : writes) outs.push_back(output_value(*writes_[i].data));
  // Only what the outputs need runs: dead intermediates cost neither compile
  // time nor a different cache key.
  std::vector<size_t> kept;
  auto pruned = graph_.pruned(outs, kept);
  std::vector<runtime::Buffer*> kept_args;
  if (pruned) {
    for (size_t k : kept) kept_args.push_back(args[k]);
  } else {
    graph_.set_outputs(outs);
  }
  ir::Graph& program = pruned ? *pruned : graph_;
  if (donate) donate_buffers(program, pruned ? kept_args : args, writes);
  try {
    auto buffers = run(program, pruned ? kept_args : args, device_, tiering_);
    // execute() starts graph_ afresh after the run, so the program can move
    // out; execute_before() keeps recording into it.
    ran_ = pruned || !keep_graph_ ? std::make_shared<ir::Graph>(std::move(program))
                                  : std::make_shared<ir::Graph>(program);
    for (size_t k = 0; k < writes.size(); ++k) {
      StorageData* sd = writes_[writes[k]].data;
      sd->buffer = std::move(buffers[k]);
      sd->dtype = ran_->type(ran_->outputs()[k]).dtype;
      sd->version++;
    }
    return nullptr;
  } catch (const c10::Error&) {
    if (writes.size() == 1) {
      failed_ops.push_back(writes_[writes[0]].op);
      return std::current_exception();
    }
  }
  size_t half = writes.size() / 2;
  // Retries keep every input: a buffer donated to one part is gone for the other.
  auto first = run_outputs({writes.begin(), writes.begin() + half}, args, false, failed_ops);
  auto second = run_outputs({writes.begin() + half, writes.end()}, args, false, failed_ops);
  return first ? first : second;
}

std::string Recording::ops_label() const {
  if (ops_.empty()) return "";  // debug and strict mode: the op's name scope says which
  std::string label;
  std::set<std::string_view> named;
  for (const char* op : ops_) {
    if (!op || !named.insert(op).second) continue;
    if (named.size() > 3) {
      label += ", ...";
      break;
    }
    label += (label.empty() ? "" : ", ") + std::string(op);
  }
  return label + " (" + std::to_string(ops_.size()) + " ops)";
}

std::shared_ptr<ir::Graph> Recording::run_live_writes(size_t end) {
  // Outputs: the latest write of each storage that is still alive.
  std::vector<size_t> targets;
  std::vector<c10::Storage> alive;
  for (size_t i = 0; i < end; ++i) {
    Write& w = writes_[i];
    auto impl = w.storage.lock();
    if (!impl || !is_current_contents(impl, w.data) || !holds(*w.data) ||
        w.data->pending_write != static_cast<int>(i))
      continue;
    alive.emplace_back(std::move(impl));
    targets.push_back(i);
  }
  if (targets.empty()) return nullptr;
  std::exception_ptr error;
  std::vector<const char*> failed_ops;
  ran_.reset();
  try {
    for (auto& pool : pools_) {
      int64_t count = static_cast<int64_t>(pool.bytes.size() / c10::elementSize(pool.dtype));
      params_[pool.param_index] = upload(pool.bytes.data(), pool.dtype, {count}, device_);
    }
    std::vector<runtime::Buffer*> args;
    args.reserve(params_.size());
    for (auto& b : params_) args.push_back(b.get());
    ProgramLabel label(ops_label());
    error = run_outputs(targets, args, true, failed_ops);
  } catch (...) {
    error = std::current_exception();
  }
  for (size_t i : targets) forget(*writes_[i].data);
  if (error) {
    reset();
    try {
      std::rethrow_exception(error);
    } catch (c10::Error& e) {
      if (!failed_ops.empty()) {
        std::string names;
        for (size_t i = 0; i < failed_ops.size() && i < 8; ++i)
          names += std::string(i ? ", " : "") + (failed_ops[i] ? failed_ops[i] : "?");
        if (failed_ops.size() > 8) names += ", ...";
        e.add_context("The results of " + names + " could not be computed; their tensors keep their previous values.");
      }
      throw;
    }
  }
  return std::move(ran_);
}

std::shared_ptr<ir::Graph> Recording::execute(Tiering tiering) {
  tiering_ = tiering;
  auto ran = run_live_writes(writes_.size());
  reset();
  return ran;
}

std::shared_ptr<ir::Graph> Recording::execute_before(const Mark& m) {
  keep_graph_ = true;
  std::shared_ptr<ir::Graph> ran;
  try {
    ran = run_live_writes(m.writes);
  } catch (...) {
    keep_graph_ = false;
    throw;
  }
  keep_graph_ = false;
  // What was recorded after the mark stays; it no longer reaches the values
  // that just ran (they now live in buffers), so the next run prunes them.
  device_ = -1;
  return ran;
}

void Recording::reset() {
  id_ = next_recording_id++;
  tiering_ = Tiering::BySize;
  live_pending_ = 0;
  live_pending_bytes_ = 0;
  graph_ = ir::Graph();
  device_ = -1;
  ops_.clear();
  params_.clear();
  buffer_params_.clear();
  input_bytes_ = 0;
  pools_.clear();
  random_draws_.clear();
  writes_.clear();
}

}  // namespace torch_tpu::exec
