// Collectives among the devices of one PJRT client: one replicated program
// per collective, run when every participating rank has arrived.
#include "distributed/in_process.h"

#include <optional>
#include <unordered_map>

#include <pybind11/pybind11.h>

#include "device/device.h"
#include "exec/exec.h"
#include "exec/fused.h"

namespace torch_tpu::distributed {

namespace {

// A buffer of exactly t's elements, in t's shape and dtype, after the work
// that produces them has run. Tensors that are not a whole storage of that
// shape (views, storages written in another shape or dtype) are copied first.
runtime::BufferPtr contents_of(const at::Tensor& t) {
  auto whole = [](const at::Tensor& c) -> runtime::BufferPtr {
    if (!c.is_contiguous() || c.storage_offset() != 0) return nullptr;
    StorageData& sd = storage_data(c);
    if (sd.nbytes != c.nbytes()) return nullptr;
    exec::materialize(sd, "collective");
    if (!sd.buffer || sd.dtype != c.scalar_type() || sd.buffer->dims() != c.sizes().vec()) return nullptr;
    return sd.buffer;
  };
  if (auto b = whole(t)) return b;
  auto b = whole(t.clone(at::MemoryFormat::Contiguous));
  TORCH_CHECK(b, "tpu: could not stage a tensor of shape ", t.sizes(), " for a collective");
  return b;
}

// A new tpu tensor whose contents are `buffer`.
at::Tensor tensor_of(runtime::BufferPtr buffer, c10::ScalarType dtype, int device) {
  at::Tensor t = at::empty(buffer->dims(), at::TensorOptions().dtype(dtype).device(c10::DeviceType::PrivateUse1, device));
  exec::set_contents(storage_data(t), std::move(buffer), dtype);
  return t;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return "[" + s + "]";
}

}  // namespace

void write_result(const at::Tensor& dst, const at::Tensor& result) {
  auto whole = [](const at::Tensor& t) {
    return t.is_contiguous() && t.storage_offset() == 0 && storage_data(t).nbytes == t.nbytes();
  };
  if (whole(dst) && whole(result) && dst.scalar_type() == result.scalar_type() && dst.numel() == result.numel() &&
      dst.device() == result.device()) {
    StorageData& from = storage_data(result);
    if (from.buffer && from.pending_in == 0 && from.dtype == result.scalar_type()) {
      exec::set_contents(storage_data_for_write(dst), from.buffer, from.dtype);
      dst.unsafeGetTensorImpl()->bump_version();  // what copy_ would do for autograd
      return;
    }
  }
  dst.copy_(result);
}

std::shared_ptr<InProcessGroup> InProcessGroup::join(const std::string& key, int size) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::weak_ptr<InProcessGroup>> groups;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = groups[key];
  auto group = slot.lock();
  if (!group) {
    group = std::make_shared<InProcessGroup>(size);
    slot = group;
  }
  TORCH_CHECK(group->size() == size, "tpu: in-process group '", key, "' has ", group->size(), " ranks, not ", size);
  return group;
}

void InProcessGroup::launch(Round& round, const std::string& op, const Build& build) {
  for (int r = 1; r < size_; ++r) {
    if (round.calls[r] == round.calls[0]) continue;
    std::string calls;
    for (int i = 0; i < size_; ++i) calls += "\n  rank " + std::to_string(i) + ": " + round.calls[i];
    TORCH_CHECK(false, "tpu: ", op, ": the ranks' calls do not match:", calls);
  }
  for (int r = 0; r < size_; ++r)
    for (int s = 0; s < r; ++s)
      TORCH_CHECK(round.devices[r] != round.devices[s], "tpu: ranks ", s, " and ", r,
                  " of an in-process group both use tpu:", round.devices[r],
                  "; each rank needs a device of its own (torch.tpu.set_device(rank))");
  lower::Graph graph;
  lower::Value operand = graph.param({round.dtype, round.shape});
  graph.output(build(graph, operand, size_));
  std::vector<std::vector<runtime::Buffer*>> args;
  for (auto& b : round.inputs) args.push_back({b.get()});
  auto outs = exec::run_replicated(graph, args, round.devices);
  for (auto& replica : outs) round.outputs.push_back(replica.at(0));
}

at::Tensor InProcessGroup::run(int rank, uint64_t seq, const std::string& op, const std::string& call,
                               const at::Tensor& input, const Build& build, std::chrono::milliseconds timeout) {
  runtime::BufferPtr buffer = contents_of(input);
  int device = input.device().index();
  // Other ranks are Python threads too: waiting must not hold the interpreter.
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();

  std::unique_lock<std::mutex> lock(mutex_);
  Round& round = rounds_.try_emplace(seq, size_).first->second;
  if (!round.done) {
    round.calls[rank] = call;
    round.inputs[rank] = std::move(buffer);
    round.devices[rank] = device;
    if (rank == 0) {
      round.shape = input.sizes().vec();
      round.dtype = input.scalar_type();
    }
    if (++round.arrived == size_) {
      round.launching = true;  // the others wait for it without a timeout now
      lock.unlock();
      std::exception_ptr error;
      try {
        launch(round, op, build);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      round.error = error;
      round.done = true;
      round.inputs.clear();
      changed_.notify_all();
    } else if (!changed_.wait_for(lock, timeout, [&] { return round.done || round.launching; })) {
      std::vector<int> missing;
      for (int r = 0; r < size_; ++r)
        if (round.calls[r].empty()) missing.push_back(r);
      round.error = std::make_exception_ptr(c10::Error(
          {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
          "tpu: " + op + " timed out after " + std::to_string(timeout.count()) + " ms: rank(s) " +
              ranks_text(missing) + " of the in-process group never called it"));
      round.done = true;
      round.inputs.clear();
      changed_.notify_all();
    }
    changed_.wait(lock, [&] { return round.done; });  // a launch under way (compiling) ends
  }
  std::exception_ptr error = round.error;
  runtime::BufferPtr result = error ? nullptr : round.outputs.at(rank);
  if (++round.left == size_) rounds_.erase(seq);
  lock.unlock();
  no_gil.reset();
  if (error) std::rethrow_exception(error);
  return tensor_of(std::move(result), input.scalar_type(), device);
}

}  // namespace torch_tpu::distributed
