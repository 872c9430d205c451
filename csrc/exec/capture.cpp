// compile mode: a captured graph replayed as one program per call.
#include "exec/capture.h"

#include <cstring>
#include <unordered_map>

#include <c10/util/Exception.h>

#include "exec/cache.h"
#include "exec/exec.h"
#include "exec/fused.h"
#include "exec/metrics.h"
#include "exec/trace.h"

namespace torch_tpu::exec {

namespace {

// The eager mode the caller had; a capture records in fused mode.
Mode mode_before_capture = Mode::Strict;
Recording* capturing = nullptr;

bool is_tpu(const at::Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

// A tpu tensor over `storage` with the given layout, made directly (no
// dispatch): the graph's outputs are views the program already computed.
at::Tensor view_of(c10::Storage storage, const c10::ScalarType dtype, c10::IntArrayRef sizes,
                   c10::IntArrayRef strides, int64_t offset) {
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                    caffe2::TypeMeta::fromScalarType(dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, offset);
  return t;
}

runtime::BufferPtr zeros(const ir::Type& type, int device) {
  std::vector<char> bytes(type.nbytes(), 0);
  return upload(bytes.data(), type.dtype, type.shape, device);
}

// Gives a storage's buffer the dims a captured program declared for it (a
// program run since may have produced it in another shape): one reshape.
void reshape_contents(StorageData& sd, const ir::Shape& dims, int device) {
  ir::Graph g;
  g.output(ir::reshape(g, g.param(ir::Type{sd.dtype, sd.buffer->dims()}), dims));
  auto out = run(g, {sd.buffer.get()}, device);
  set_contents(sd, std::move(out[0]), sd.dtype);
}

void restore_mode() {
  capturing = nullptr;
  end_capture();
  set_mode(mode_before_capture);
}

}  // namespace

void capture_begin(const std::vector<at::Tensor>& inputs) {
  mode_before_capture = mode();
  set_mode(Mode::Fused);
  try {
    capturing = &begin_capture();
    for (const at::Tensor& t : inputs) {
      if (!is_tpu(t)) continue;
      StorageData& sd = storage_data(t);
      if (sd.buffer || t.storage().nbytes() == 0) continue;
      int64_t len = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
      set_contents(sd, zeros(ir::Type{t.scalar_type(), {len}}, sd.device), t.scalar_type());
    }
  } catch (...) {
    restore_mode();
    throw;
  }
}

void capture_abort() { restore_mode(); }

bool capture_active() { return capturing != nullptr; }

std::string layout_signature(const std::vector<at::Tensor>& inputs) {
  std::vector<int64_t> words;
  words.reserve(inputs.size() * 12);
  std::unordered_map<const void*, int64_t> storages;
  for (const at::Tensor& t : inputs) {
    if (!t.defined()) {
      words.push_back(-1);
      continue;
    }
    words.push_back(static_cast<int64_t>(t.device().type()) << 16 | (t.device().index() + 1) << 8 |
                    static_cast<int64_t>(t.scalar_type()));
    words.push_back(t.dim());
    for (int64_t d : t.sizes()) words.push_back(d);
    for (int64_t d : t.strides()) words.push_back(d);
    if (is_tpu(t)) {
      words.push_back(t.storage_offset());
      words.push_back(static_cast<int64_t>(t.storage().nbytes()));
      const void* key = t.storage().unsafeGetStorageImpl();
      words.push_back(storages.emplace(key, static_cast<int64_t>(storages.size())).first->second);
    }
  }
  return std::string(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int64_t));
}

std::shared_ptr<CapturedGraph> capture_end(const std::vector<at::Tensor>& inputs,
                                           const std::vector<at::Tensor>& outputs, std::string& why_not) {
  TORCH_INTERNAL_ASSERT(capturing, "tpu: capture_end without capture_begin");
  Recording& r = *capturing;
  why_not = end_capture();
  if (!why_not.empty()) {
    restore_mode();
    return nullptr;
  }
  auto cg = std::make_shared<CapturedGraph>();
  try {
    std::unordered_map<const StorageData*, int> storage_input;
    std::unordered_map<const runtime::Buffer*, int> buffer_input;
    cg->input_nbytes_.assign(inputs.size(), 0);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const at::Tensor& t = inputs[i];
      if (is_tpu(t)) {
        const StorageData& sd = storage_data(t);
        storage_input.emplace(&sd, static_cast<int>(i));
        if (sd.buffer) buffer_input.emplace(sd.buffer.get(), static_cast<int>(i));
        cg->input_nbytes_[i] = t.storage().nbytes();
      }
    }
    std::vector<ir::Value> outs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!is_tpu(inputs[i])) continue;
      const StorageData& sd = storage_data(inputs[i]);
      if (storage_input.at(&sd) != static_cast<int>(i) || !r.holds(sd)) continue;
      outs.push_back(r.output_value(sd));
      cg->written_inputs_.push_back(static_cast<int>(i));
    }
    std::unordered_map<const StorageData*, int> new_storage;
    for (const at::Tensor& t : outputs) {
      TORCH_INTERNAL_ASSERT(is_tpu(t), "tpu: a captured graph's outputs must be tpu tensors");
      CapturedGraph::Output o;
      o.dtype = t.scalar_type();
      o.sizes = t.sizes().vec();
      o.strides = t.strides().vec();
      o.offset = t.storage_offset();
      const StorageData& sd = storage_data(t);
      if (auto it = storage_input.find(&sd); it != storage_input.end()) {
        o.input = it->second;
      } else if (auto it = new_storage.find(&sd); it != new_storage.end()) {
        o.new_storage = it->second;
      } else if (r.holds(sd) || !sd.buffer) {
        // A storage the graph made: fresh for every run (one never written
        // stays unwritten and reads as zeros).
        o.new_storage = static_cast<int>(cg->new_storages_.size());
        new_storage.emplace(&sd, o.new_storage);
        cg->new_storages_.push_back({t.storage().nbytes(), r.holds(sd) ? r.contents_dtype(sd) : sd.dtype, -1});
        if (r.holds(sd)) {
          cg->new_storages_.back().output = static_cast<int>(outs.size() - cg->written_inputs_.size());
          outs.push_back(r.output_value(sd));
        }
      } else {
        o.constant = t.storage();
      }
      cg->outputs_.push_back(std::move(o));
    }

    std::vector<size_t> kept;
    auto pruned = r.graph().pruned(outs, kept);
    if (pruned) {
      cg->plain_.graph = std::move(*pruned);
    } else {
      cg->plain_.graph = r.graph();
      cg->plain_.graph.set_outputs(outs);
    }
    cg->pools_ = r.host_pools();
    cg->constant_pools_.resize(cg->pools_.size());
    std::unordered_map<size_t, int> pool_of_param;
    for (size_t p = 0; p < cg->pools_.size(); ++p) pool_of_param.emplace(cg->pools_[p].param_index, static_cast<int>(p));
    for (size_t k : kept) {
      CapturedGraph::Param p;
      const runtime::BufferPtr& buffer = r.param_buffers()[k];
      if (!buffer) {
        p.pool = pool_of_param.at(k);
      } else if (auto it = buffer_input.find(buffer.get()); it != buffer_input.end()) {
        p.input = it->second;
      } else {
        p.constant = buffer;
      }
      cg->params_.push_back(std::move(p));
    }
    for (const Recording::RandomDraw& d : r.random_draws()) cg->random_states_.push_back({d.pool, d.start, d.generator});
    cg->donating_.graph = cg->plain_.graph;
    ir::Graph& program = cg->donating_.graph;
    for (size_t k = 0; k < cg->written_inputs_.size(); ++k) {
      for (size_t p = 0; p < cg->params_.size(); ++p) {
        if (cg->params_[p].input != cg->written_inputs_[k]) continue;
        if (program.type(program.params()[p]) == program.type(program.outputs()[k])) {
          program.alias(p, k);
          cg->donated_inputs_.push_back(cg->written_inputs_[k]);
        }
      }
    }
    cg->device_ = r.device() < 0 ? current_device() : r.device();
  } catch (...) {
    r.abandon();
    restore_mode();
    throw;
  }
  r.abandon();
  restore_mode();

  // This call's results: the program's first run, with the random states
  // drawn while recording.
  auto buffers = cg->execute(inputs, /*draw_random=*/false);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const CapturedGraph::Output& o = cg->outputs_[i];
    if (o.new_storage < 0) continue;
    const CapturedGraph::NewStorage& ns = cg->new_storages_[o.new_storage];
    StorageData& sd = storage_data(outputs[i]);
    if (ns.output >= 0 && buffers[ns.output]) set_contents(sd, std::move(buffers[ns.output]), ns.contents);
  }
  return cg;
}

std::vector<runtime::BufferPtr> CapturedGraph::execute(const std::vector<at::Tensor>& inputs, bool draw_random) {
  TORCH_CHECK(inputs.size() == input_nbytes_.size(), "tpu: a compiled graph expected ", input_nbytes_.size(),
              " inputs, got ", inputs.size());
  const ir::Graph& program = plain_.graph;
  if (program.outputs().empty()) return {};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!input_nbytes_[i]) continue;
    TORCH_CHECK(is_tpu(inputs[i]) && inputs[i].storage().nbytes() == input_nbytes_[i],
                "tpu: input ", i, " of a compiled graph does not have the storage it was compiled for");
    materialize(storage_data(inputs[i]), "compiled_graph_input");
  }
  // A written copy-on-write input gets its own record before donation is decided.
  for (int i : written_inputs_) storage_data_for_write(inputs[i]);
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k].input < 0) continue;
    StorageData& sd = storage_data(inputs[params_[k].input]);
    const ir::Type& type = program.type(program.params()[k]);
    if (sd.buffer && sd.dtype == type.dtype && sd.buffer->dims() != type.shape) reshape_contents(sd, type.shape, device_);
  }
  // Pools holding random states get new ones and are uploaded for each run;
  // the others hold constants, uploaded once.
  std::vector<runtime::BufferPtr> pools(pools_.size());
  for (size_t p = 0; p < pools_.size(); ++p) {
    std::vector<char> bytes;
    for (const RandomState& r : random_states_) {
      if (r.pool != p) continue;
      if (bytes.empty()) bytes = pools_[p].bytes;
      if (!draw_random) continue;
      at::Generator generator = r.generator;
      std::lock_guard<std::mutex> lock(generator.mutex());
      auto state = generator.get<TpuGeneratorImpl>()->next_stream();
      std::memcpy(bytes.data() + r.start * sizeof(uint64_t), state.data(), sizeof(state));
    }
    if (bytes.empty() && constant_pools_[p]) {
      pools[p] = constant_pools_[p];
      continue;
    }
    const auto& pool = pools_[p];
    const std::vector<char>& contents = bytes.empty() ? pool.bytes : bytes;
    int64_t count = static_cast<int64_t>(contents.size() / c10::elementSize(pool.dtype));
    pools[p] = upload(contents.data(), pool.dtype, {count}, device_);
    if (bytes.empty()) constant_pools_[p] = pools[p];
  }
  std::vector<runtime::BufferPtr> held;  // zero-filled inputs, alive through the run
  std::vector<runtime::Buffer*> args;
  args.reserve(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const Param& p = params_[k];
    const ir::Type type = program.type(program.params()[k]);
    if (p.pool >= 0) {
      args.push_back(pools[p.pool].get());
    } else if (p.input >= 0) {
      StorageData& sd = storage_data(inputs[p.input]);
      if (!sd.buffer) {
        held.push_back(zeros(type, device_));
        args.push_back(held.back().get());
        continue;
      }
      TORCH_CHECK(sd.dtype == type.dtype, "tpu: input ", p.input, " of a compiled graph holds ", sd.dtype,
                  " data where the graph was compiled for ", type.dtype);
      args.push_back(sd.buffer.get());
    } else {
      args.push_back(p.constant.get());
    }
  }
  // Donate only when every such buffer is held by its storage alone (no
  // pending eager work, no other storage, no earlier run still reading it).
  bool donate = !donated_inputs_.empty();
  for (size_t i : donated_inputs_) donate &= storage_data(inputs[i]).buffer.use_count() == 1;
  Variant& variant = donate ? donating_ : plain_;
  ProgramLabel label("a torch.compile graph");
  if (!variant.exe) variant.exe = executable(variant.graph);
  auto outs = exec::run(variant.graph, *variant.exe, args, device_);
  for (size_t k = 0; k < written_inputs_.size(); ++k)
    set_contents(storage_data(inputs[written_inputs_[k]]), std::move(outs[k]), program.type(program.outputs()[k]).dtype);
  outs.erase(outs.begin(), outs.begin() + written_inputs_.size());
  return outs;
}

std::vector<at::Tensor> CapturedGraph::run(const std::vector<at::Tensor>& inputs) {
  auto buffers = execute(inputs, /*draw_random=*/true);
  std::vector<c10::Storage> storages;
  storages.reserve(new_storages_.size());
  for (const NewStorage& ns : new_storages_) {
    c10::Storage s(c10::Storage::use_byte_size_t(), ns.nbytes, tpu_allocator(), /*resizable=*/true);
    StorageData& sd = storage_data(s);
    sd.device = device_;
    if (ns.output >= 0) {
      sd.buffer = std::move(buffers[ns.output]);
      sd.dtype = ns.contents;
    }
    storages.push_back(std::move(s));
  }
  std::vector<at::Tensor> results;
  results.reserve(outputs_.size());
  for (const Output& o : outputs_) {
    c10::Storage storage = o.new_storage >= 0 ? storages[o.new_storage]
                           : o.input >= 0     ? inputs[o.input].storage()
                                              : o.constant;
    results.push_back(view_of(std::move(storage), o.dtype, o.sizes, o.strides, o.offset));
  }
  return results;
}

}  // namespace torch_tpu::exec
