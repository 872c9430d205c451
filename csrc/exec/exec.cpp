// Modes, running compiled programs, the in-flight list, host transfers.
#include "exec/exec.h"

#include <cstdio>
#include <memory>
#include <mutex>

#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>

#include "exec/cache.h"
#include "exec/metrics.h"
#include "exec/trace.h"
#include "runtime/env.h"

namespace torch_tpu::exec {

namespace {

Mode initial_mode() {
  auto v = env::get(env::kEagerMode);
  if (!v || v->empty()) return Mode::Fused;
  return parse_mode(*v);
}

// Outputs of programs enqueued since the last synchronize.
struct InFlight {
  std::mutex mutex;
  std::vector<std::weak_ptr<runtime::Buffer>> buffers;
  size_t prune_at = 4096;  // twice what survived the last pruning, at least 4096
};

InFlight& in_flight_list() {
  static InFlight f;
  return f;
}

// Remembers a run's outputs: what a synchronize or an event waits for.
void note_in_flight(const std::vector<runtime::BufferPtr>& outs) {
  if (outs.empty()) return;
  InFlight& f = in_flight_list();
  std::lock_guard<std::mutex> lock(f.mutex);
  // Drop entries whose buffers died so the list stays short in long loops
  // (amortized: a model whose many parameters stay alive is not rescanned every run).
  if (f.buffers.size() > f.prune_at) {
    std::vector<std::weak_ptr<runtime::Buffer>> alive;
    for (auto& w : f.buffers)
      if (!w.expired()) alive.push_back(w);
    f.buffers.swap(alive);
    f.prune_at = std::max<size_t>(4096, 2 * f.buffers.size());
  }
  // Every output: an event waits for the program while any of its results is referenced.
  f.buffers.insert(f.buffers.end(), outs.begin(), outs.end());
}

}  // namespace

std::atomic<Mode>& mode_state() {
  static std::atomic<Mode> m{initial_mode()};
  return m;
}

Mode mode() { return mode_state().load(std::memory_order_relaxed); }

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Debug: return "debug";
    case Mode::Strict: return "strict";
    case Mode::Fused: return "fused";
  }
  return "?";
}

Mode parse_mode(const std::string& name) {
  if (name == "debug") return Mode::Debug;
  if (name == "strict") return Mode::Strict;
  if (name == "fused") return Mode::Fused;
  TORCH_CHECK_VALUE(false, "torch_tpu: unknown eager mode '", name,
                    "' (expected 'debug', 'strict' or 'fused')");
}

std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const std::vector<runtime::Buffer*>& args,
                                    int device, Tiering tiering) {
  return run(graph, *executable(graph, {}, tiering), args, device);
}

std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const runtime::Executable& exe,
                                    const std::vector<runtime::Buffer*>& args, int device) {
  metrics().executions++;
  TraceScope trace(ProgramLabel::execute_event_name, {{"nodes", static_cast<int64_t>(graph.num_nodes())}});
  bool wait = mode() == Mode::Debug;
  std::vector<size_t> donated;
  for (auto& alias : graph.aliases()) donated.push_back(alias.first);
  int64_t enqueued = device_timing() ? c10::getTime() : 0;
  static const bool log = env::flag(env::kLogFlushes, false);
  // What the program holds while it runs, beside what was in use: where a peak comes from.
  double in_use_before = 0, outputs = 0, donated_bytes = 0;
  if (log) {
    in_use_before = runtime::Runtime::get().memory_stats(device).bytes_in_use;
    for (const auto& o : exe.outputs()) outputs += o.nbytes;
    for (size_t i : donated) donated_bytes += args[i]->nbytes();
  }
  auto outs = runtime::Runtime::get().execute(exe, args, donated, device, wait);
  if (log) {
    auto mib = [](double bytes) { return bytes / (1 << 20); };
    std::fprintf(stderr, "torch_tpu: run: %zu nodes; scratch %.2f MiB, outputs %.2f MiB, donated %.2f MiB; "
                 "%.2f MiB in use before, peak %.2f MiB\n", graph.num_nodes(), mib(exe.temp_nbytes()), mib(outputs),
                 mib(donated_bytes), mib(in_use_before),
                 mib(runtime::Runtime::get().memory_stats(device).peak_bytes_in_use));
  }
  if (enqueued && !outs.empty()) note_device_run(ProgramLabel::program_name(), device, enqueued, outs[0]);
  if (!wait) note_in_flight(outs);
  return outs;
}

std::vector<std::vector<runtime::BufferPtr>> run_replicated(const ir::Graph& graph,
                                                            const std::vector<std::vector<runtime::Buffer*>>& args,
                                                            const std::vector<int>& replica_devices) {
  TORCH_CHECK(graph.aliases().empty(), "tpu: a replicated program donates no argument");
  auto exe = executable(graph, replica_devices);
  metrics().executions++;
  TraceScope trace(ProgramLabel::execute_event_name, {{"nodes", static_cast<int64_t>(graph.num_nodes())},
                                                     {"replicas", static_cast<int64_t>(replica_devices.size())}});
  int64_t enqueued = device_timing() ? c10::getTime() : 0;
  auto outs = runtime::Runtime::get().execute_replicated(*exe, args);
  for (size_t r = 0; r < outs.size(); ++r) {
    if (enqueued && !outs[r].empty())
      note_device_run(ProgramLabel::program_name(), replica_devices[r], enqueued, outs[r][0]);
    note_in_flight(outs[r]);
  }
  return outs;
}

std::vector<runtime::BufferPtr> in_flight() {
  std::vector<runtime::BufferPtr> alive;
  InFlight& f = in_flight_list();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (auto& w : f.buffers)
    if (auto b = w.lock()) alive.push_back(std::move(b));
  return alive;
}

void await_in_flight() {
  std::vector<std::weak_ptr<runtime::Buffer>> pending;
  {
    InFlight& f = in_flight_list();
    std::lock_guard<std::mutex> lock(f.mutex);
    pending.swap(f.buffers);
  }
  for (auto& w : pending)
    if (auto b = w.lock()) runtime::Runtime::get().await_ready(*b);
}

c10::ScalarType held_dtype(c10::ScalarType dtype) {
  c10::ScalarType held = dtype == c10::kComplexHalf ? c10::kComplexFloat : dtype;
  runtime::to_pjrt_type(held);  // a TypeError for what the device cannot hold
  return held;
}

runtime::BufferPtr upload(const void* data, c10::ScalarType dtype, const ir::Shape& shape, int device) {
  TraceScope trace([] { return "tpu::transfer_to_device"; },
                   {{"bytes", static_cast<int64_t>(ir::Type{dtype, shape}.nbytes())}});
  runtime::BufferPtr buffer;
  if (dtype == c10::kComplexHalf) {
    const auto* halves = static_cast<const c10::complex<c10::Half>*>(data);
    std::vector<c10::complex<float>> widened(ir::Type{dtype, shape}.numel());
    for (size_t i = 0; i < widened.size(); ++i) widened[i] = c10::complex<float>(halves[i]);
    buffer = runtime::Runtime::get().to_device(widened.data(), held_dtype(dtype), shape, device);
  } else {
    buffer = runtime::Runtime::get().to_device(data, dtype, shape, device);
  }
  metrics().bytes_to_device += ir::Type{dtype, shape}.nbytes();
  return buffer;
}

void download(const runtime::Buffer& buffer, c10::ScalarType dtype, void* dst, size_t nbytes) {
  TraceScope trace([] { return "tpu::transfer_to_host"; }, {{"bytes", static_cast<int64_t>(nbytes)}});
  if (dtype == c10::kComplexHalf) {
    std::vector<c10::complex<float>> wide(nbytes / sizeof(c10::complex<c10::Half>));
    runtime::Runtime::get().to_host(buffer, wide.data(), wide.size() * sizeof(wide[0]));
    auto* halves = static_cast<c10::complex<c10::Half>*>(dst);
    for (size_t i = 0; i < wide.size(); ++i) halves[i] = c10::complex<c10::Half>(wide[i]);
  } else {
    runtime::Runtime::get().to_host(buffer, dst, nbytes);
  }
  metrics().bytes_to_host += nbytes;
}

}  // namespace torch_tpu::exec
