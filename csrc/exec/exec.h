// Execution modes, the compilation cache and the counters behind torch_tpu.metrics().
//
// Invariants:
//  - One cache serves every mode. A program is keyed by the graph's structure
//    (Graph::hash plus full equality on collision) and the plugin identity, so a
//    changed scalar value (a runtime input) never recompiles.
//  - debug waits for every program and so raises device errors at the op;
//    strict enqueues and returns, errors surface when the value is read.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/pjrt.h"

namespace torch_tpu::exec {

enum class Mode { Debug, Strict, Fused };

Mode mode();
void set_mode(Mode m);
const char* mode_name(Mode m);
// Accepts "debug" / "strict" / "fused"; throws ValueError otherwise.
Mode parse_mode(const std::string& name);

// Programs compiled (or loaded from disk) that share a shape family
// (ir::Graph::shape_family_hash): the same computation at other sizes.
struct ShapeFamily {
  std::string label;  // the ATen ops of its first program
  int64_t programs = 0;
};

struct Metrics {
  std::atomic<int64_t> compiles{0}, cache_hits{0}, cache_misses{0}, executions{0};
  std::atomic<int64_t> bytes_to_device{0}, bytes_to_host{0};
  // compiles: programs compiled when first needed (quick_compiles of them in
  // the quick tier); full_recompiles: quick ones compiled again as they recurred.
  std::atomic<int64_t> compile_nanos{0}, quick_compiles{0}, full_recompiles{0};
  std::atomic<int64_t> ops_deferred{0};
  std::atomic<int64_t> disk_cache_hits{0}, disk_cache_writes{0};
  std::mutex mutex;  // guards the maps
  std::map<std::string, int64_t> cpu_fallbacks;
  std::map<std::string, int64_t> flushes;  // by reason
  std::map<size_t, ShapeFamily> shape_families;  // by shape_family_hash
  void reset();
};
Metrics& metrics();

// Names the programs compiled in its scope (on this thread) in the shape
// family metrics: a fused flush's ATen ops, a compiled graph's name.
class ProgramLabel {
 public:
  explicit ProgramLabel(std::string label);
  ~ProgramLabel();
  ProgramLabel(const ProgramLabel&) = delete;
  ProgramLabel& operator=(const ProgramLabel&) = delete;

 private:
  std::string previous_;
};

// Compiles `graph` (cached) and runs it on `device` with `args`, one buffer per
// graph parameter in Graph::params() order. Returns one buffer per output.
// Parameters the graph aliases with outputs are donated: their buffers are
// consumed by the run.
std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const std::vector<runtime::Buffer*>& args,
                                    int device);
// The same in two steps, for a program run many times (compile mode): the
// executable of `graph` from the cache (memory, then disk; compiled on a
// miss), and a run of it. With `replica_devices`, the executable of the
// replicated program run_replicated() runs. `tiered`: a small program may be
// compiled quickly first (the two tiers in exec.cpp); the caller must come
// back here for every run, as run() does, to get the recompiled one.
runtime::ExecutablePtr executable(const ir::Graph& graph, const std::vector<int>& replica_devices = {},
                                  bool tiered = false);
std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const runtime::Executable& exe,
                                    const std::vector<runtime::Buffer*>& args, int device);

// Runs `graph` as one replica per device of `replica_devices` (compiled for
// exactly those devices, cached by them): args[i] are replica i's arguments,
// one buffer per parameter, and the result's [i] its outputs. The graph's
// collectives (lowering/collective.h) span the replicas; it donates nothing.
std::vector<std::vector<runtime::BufferPtr>> run_replicated(const ir::Graph& graph,
                                                            const std::vector<std::vector<runtime::Buffer*>>& args,
                                                            const std::vector<int>& replica_devices);

// The outputs of every program enqueued so far that are still referenced,
// after running pending fused work (a flush for `reason`): what a stream or
// an event waits for (device/device.h).
std::vector<runtime::BufferPtr> enqueued_work(const char* reason);

// Waits until every program enqueued so far has finished (on every device:
// the CPU plugin gives no cheaper per-device wait); raises the first device
// error among them.
void synchronize(int device);

// Number of distinct programs held in memory.
size_t cache_size();
// Makes the memory tier keep programs loaded as if the kernel allowed the
// process `n` memory mappings (0: the kernel's vm.max_map_count); returns
// the limit in force before. For tests.
size_t set_memory_mapping_limit(size_t n);

}  // namespace torch_tpu::exec
