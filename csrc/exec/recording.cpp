#include "exec/recording.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <c10/util/Exception.h>

#include "exec/exec.h"

namespace torch_tpu::exec {

namespace {

std::atomic<uint64_t> next_recording_id{1};

bool is_current_contents(const c10::StorageImpl& impl, const StorageData* data) {
  return impl.data_ptr().get_context() == data;
}

}  // namespace

// ------------------------------------------------------------------ Recording

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
  ir::Value p = graph_.param(ir::Type{sd.dtype, {len}});
  params_.push_back(sd.buffer);
  buffer_params_.emplace(sd.buffer.get(), p);
  return p;
}

c10::ScalarType Recording::contents_dtype(const StorageData& sd) const {
  return holds(sd) ? graph_.type(writes_[sd.pending_write].value).dtype : sd.dtype;
}

void Recording::write(const c10::Storage& storage, ir::Value flat) {
  StorageData& sd = storage_data(storage);
  use_device(sd.device);
  int previous = holds(sd) ? sd.pending_write : -1;
  writes_.push_back({storage.getWeakStorageImpl(), &sd, flat, previous, runtime::OpNameScope::current()});
  sd.pending_in = id_;
  sd.pending_write = static_cast<int>(writes_.size()) - 1;
}

void Recording::forget(StorageData& sd) {
  if (!holds(sd)) return;
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

Recording::Mark Recording::mark() const {
  Mark m;
  m.graph = graph_.mark();
  m.params = params_.size();
  m.writes = writes_.size();
  m.ops = ops_.size();
  m.device = device_;
  for (auto& p : pools_) m.pool_bytes.push_back(p.bytes.size());
  return m;
}

void Recording::rollback(const Mark& m) {
  for (size_t i = writes_.size(); i-- > m.writes;) {
    Write& w = writes_[i];
    auto impl = w.storage.lock();
    if (impl && is_current_contents(*impl, w.data) && w.data->pending_write == static_cast<int>(i)) {
      w.data->pending_write = w.previous;
      if (w.previous < 0) w.data->pending_in = 0;
    }
  }
  writes_.erase(writes_.begin() + m.writes, writes_.end());
  for (size_t i = m.params; i < params_.size(); ++i)
    if (params_[i]) buffer_params_.erase(params_[i].get());
  params_.resize(m.params);
  pools_.resize(m.pool_bytes.size());
  for (size_t i = 0; i < pools_.size(); ++i) {
    pools_[i].bytes.resize(m.pool_bytes[i]);
    int64_t count = static_cast<int64_t>(m.pool_bytes[i] / c10::elementSize(pools_[i].dtype));
    graph_.set_param_type(pools_[i].param, ir::Type{pools_[i].dtype, {count}});
  }
  graph_.truncate(m.graph);
  ops_.resize(m.ops);
  device_ = m.device;
}

std::exception_ptr Recording::run_outputs(const std::vector<size_t>& writes, const std::vector<PJRT_Buffer*>& args,
                                          std::vector<const char*>& failed_ops) {
  std::vector<ir::Value> outs;
  for (size_t i : writes) outs.push_back(writes_[i].value);
  // Only what the outputs need runs: dead intermediates cost neither compile
  // time nor a different cache key.
  std::vector<size_t> kept;
  auto pruned = graph_.pruned(outs, kept);
  std::vector<PJRT_Buffer*> kept_args;
  if (pruned) {
    for (size_t k : kept) kept_args.push_back(args[k]);
  } else {
    graph_.set_outputs(outs);
  }
  const ir::Graph& program = pruned ? *pruned : graph_;
  try {
    auto buffers = run(program, pruned ? kept_args : args, device_);
    ran_ = std::make_shared<ir::Graph>(program);
    for (size_t k = 0; k < writes.size(); ++k) {
      StorageData* sd = writes_[writes[k]].data;
      sd->buffer = std::move(buffers[k]);
      sd->dtype = program.type(program.outputs()[k]).dtype;
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
  auto first = run_outputs({writes.begin(), writes.begin() + half}, args, failed_ops);
  auto second = run_outputs({writes.begin() + half, writes.end()}, args, failed_ops);
  return first ? first : second;
}

std::shared_ptr<ir::Graph> Recording::run_live_writes(size_t end) {
  // Outputs: the latest write of each storage that is still alive.
  std::vector<size_t> targets;
  std::vector<c10::Storage> alive;
  for (size_t i = 0; i < end; ++i) {
    Write& w = writes_[i];
    auto impl = w.storage.lock();
    if (!impl || !is_current_contents(*impl, w.data) || !holds(*w.data) ||
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
    auto& rt = runtime::Runtime::get();
    for (auto& pool : pools_) {
      int64_t count = static_cast<int64_t>(pool.bytes.size() / c10::elementSize(pool.dtype));
      params_[pool.param_index] = rt.to_device(pool.bytes.data(), pool.dtype, {count}, device_);
      metrics().bytes_to_device += pool.bytes.size();
    }
    std::vector<PJRT_Buffer*> args;
    args.reserve(params_.size());
    for (auto& b : params_) args.push_back(b->get());
    error = run_outputs(targets, args, failed_ops);
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

std::shared_ptr<ir::Graph> Recording::execute() {
  auto ran = run_live_writes(writes_.size());
  reset();
  return ran;
}

std::shared_ptr<ir::Graph> Recording::execute_before(const Mark& m) {
  auto ran = run_live_writes(m.writes);
  // What was recorded after the mark stays; it no longer reaches the values
  // that just ran (they now live in buffers), so the next run prunes them.
  device_ = -1;
  return ran;
}

void Recording::reset() {
  id_ = next_recording_id++;
  graph_ = ir::Graph();
  device_ = -1;
  ops_.clear();
  params_.clear();
  buffer_params_.clear();
  pools_.clear();
  writes_.clear();
}

// ------------------------------------------------------------------ fused mode

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  TORCH_CHECK_VALUE(end && *end == '\0' && n > 0, name, " must be a positive integer, got '", v, "'");
  return n;
}

// Split rules for training loops that never read a value back: when a graph
// reaches the size bound, look for a period in the recent sequence of op
// signatures; once found, flush at fixed phases of that period, so every
// iteration runs the same few programs instead of drifting windows that each
// compile anew.
class Rhythm {
 public:
  // Called after each recorded op; returns whether to flush now.
  bool on_op(uint64_t signature) {
    // The op one period ago must match, or the loop changed: back to the size bound.
    if (period_ && count_ >= period_ && history_[(count_ - period_) % kHistory] != signature) period_ = 0;
    history_[count_ % kHistory] = signature;
    ++count_;
    return period_ && ((count_ - anchor_) % period_) % chunk_ == 0;
  }

  // The graph hit the size bound holding `ops_in_graph` ops. Returns whether
  // a period was found (the caller flushes either way).
  bool detect(uint64_t ops_in_graph) {
    uint64_t n = std::min<uint64_t>(count_, kHistory);
    if (n < 4) return false;
    // Polynomial prefix hashes over the last n signatures.
    std::vector<uint64_t> h(n + 1, 0), pw(n + 1, 1);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t s = history_[(count_ - n + i) % kHistory];
      h[i + 1] = h[i] * kBase + (s | 1);
      pw[i + 1] = pw[i] * kBase;
    }
    auto range = [&](uint64_t a, uint64_t b) { return h[b] - h[a] * pw[b - a]; };
    for (uint64_t p = 1; 2 * p <= n; ++p) {
      // At least two periods, and a whole graph's worth of ops, must repeat:
      // a short run of equal ops is not a loop.
      uint64_t len = std::max<uint64_t>(2 * p, ops_in_graph);
      if (len > n) break;
      if (range(n - len, n - p) != range(n - len + p, n)) continue;
      uint64_t chunk = std::max<uint64_t>(ops_in_graph, 1);
      if (p <= chunk) {
        period_ = p * (chunk / p);
        chunk_ = period_;
      } else {
        period_ = p;
        chunk_ = chunk;
      }
      if (period_ > kHistory) {
        period_ = 0;
        return false;
      }
      anchor_ = count_;
      return true;
    }
    return false;
  }

  bool active() const { return period_ != 0; }
  void stop() { period_ = 0; }

 private:
  static constexpr uint64_t kHistory = 1 << 16;
  static constexpr uint64_t kBase = 0x100000001b3ULL;
  std::vector<uint64_t> history_ = std::vector<uint64_t>(kHistory, 0);
  uint64_t count_ = 0;
  uint64_t period_ = 0, chunk_ = 1, anchor_ = 0;
};

struct Fused {
  std::recursive_mutex mutex;
  Recording recording;
  int open_ops = 0;
  int64_t max_nodes = env_int("TORCH_TPU_FUSED_MAX_NODES", 20000);
  bool log = std::getenv("TORCH_TPU_LOG_FLUSHES") && *std::getenv("TORCH_TPU_LOG_FLUSHES") &&
             std::string(std::getenv("TORCH_TPU_LOG_FLUSHES")) != "0";
  Rhythm rhythm;
  std::shared_ptr<ir::Graph> last;
};

Fused& state() {
  static Fused* f = new Fused();  // never destroyed: storages may outlive static destruction
  return *f;
}

void count_flush(Fused& f, const char* reason, std::shared_ptr<ir::Graph> ran, size_t ops) {
  Metrics& m = metrics();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.flushes[reason]++;
  }
  if (f.log) {
    std::fprintf(stderr, "torch_tpu: flush (%s): %zu ops recorded, %zu nodes run, %zu outputs\n", reason, ops,
                 ran->num_nodes(), ran->outputs().size());
  }
  f.last = std::move(ran);
}

void flush_locked(Fused& f, const char* reason) {
  TORCH_INTERNAL_ASSERT(f.open_ops == 0, "tpu: a flush (", reason, ") was requested while an op was recording");
  Recording& r = f.recording;
  if (!r.has_writes()) return;
  std::vector<const char*> names = r.ops();
  std::shared_ptr<ir::Graph> ran;
  try {
    ran = r.execute();
  } catch (c10::Error& e) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 12; ++i) list += std::string(i ? ", " : "") + names[i];
    if (names.size() > 12) list += ", ...";
    e.add_context("In a fused program of " + std::to_string(names.size()) + " ops run at a flush for '" + reason +
                  "'; its ops: " + list + ".");
    throw;
  }
  if (ran) count_flush(f, reason, std::move(ran), names.size());
}

}  // namespace

FusedLock lock_fused() { return FusedLock(state().mutex); }
Recording& fused() { return state().recording; }

FusedOpScope::FusedOpScope(const char* name) : lock_(state().mutex), name_(name) {
  Fused& f = state();
  f.open_ops++;
  mark_ = f.recording.mark();
}

FusedOpScope::~FusedOpScope() {
  if (done_) return;
  Fused& f = state();
  f.recording.rollback(mark_);
  f.open_ops--;
}

void FusedOpScope::bind_device(int device) {
  Fused& f = state();
  Recording& r = f.recording;
  if (r.device() < 0 || r.device() == device) return;
  // The shared program belongs to another device: run it first, if this op
  // has not started recording into it.
  // The shared program belongs to another device: run what was recorded
  // before this op. This op's own nodes so far are host values and constants
  // (reading or writing a tensor would have bound the device), which do not
  // depend on that work.
  TORCH_INTERNAL_ASSERT(f.open_ops == 1, "tpu: an op nested in another switched devices");
  auto ran = r.execute_before(mark_);
  if (ran) count_flush(f, "device_change", std::move(ran), r.num_ops());
  mark_.device = -1;
}

void FusedOpScope::done() {
  Fused& f = state();
  Recording& r = f.recording;
  // What identifies the op in a loop, independent of where flushes fell (which
  // changes how many nodes its reads need): its name and how many writes it made.
  uint64_t signature = reinterpret_cast<uintptr_t>(name_) * 0x9E3779B97F4A7C15ULL ^ (r.num_writes() - mark_.writes);
  r.add_op(name_);
  metrics().ops_deferred++;
  done_ = true;
  if (--f.open_ops > 0) return;
  bool window = f.rhythm.on_op(signature);
  size_t nodes = r.graph().num_nodes();
  if (window) {
    flush_locked(f, "window");
  } else if (static_cast<int64_t>(nodes) >= f.max_nodes) {
    if (f.rhythm.active()) {
      // A chunk grew far past the bound: the period no longer fits the loop.
      if (static_cast<int64_t>(nodes) < 4 * f.max_nodes) return;
      f.rhythm.stop();
    }
    f.rhythm.detect(r.num_ops());
    flush_locked(f, "graph_size");
  }
}

void flush(const char* reason) {
  Fused& f = state();
  FusedLock lock(f.mutex);
  flush_locked(f, reason);
}

void materialize(const StorageData& sd, const char* reason) {
  Fused& f = state();
  FusedLock lock(f.mutex);
  if (f.recording.holds(sd)) flush_locked(f, reason);
}

c10::ScalarType contents_dtype(const StorageData& sd) {
  Fused& f = state();
  FusedLock lock(f.mutex);
  return f.recording.contents_dtype(sd);
}

void set_contents(StorageData& sd, runtime::BufferPtr buffer, c10::ScalarType dtype) {
  {
    Fused& f = state();
    FusedLock lock(f.mutex);
    f.recording.forget(sd);
  }
  sd.buffer = std::move(buffer);
  sd.dtype = dtype;
  sd.version++;
}

std::string last_flushed_program() {
  Fused& f = state();
  FusedLock lock(f.mutex);
  return f.last ? f.last->to_mlir() : std::string();
}

int64_t set_fused_max_nodes(int64_t n) {
  TORCH_CHECK_VALUE(n > 0, "the fused graph bound must be positive, got ", n);
  Fused& f = state();
  FusedLock lock(f.mutex);
  std::swap(f.max_nodes, n);
  return n;
}

}  // namespace torch_tpu::exec
