// The counters behind torch_tpu.metrics(): compiles, cache hits, runs, bytes
// moved, fallbacks, flushes, shape families. Every layer of exec counts here.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace torch_tpu::exec {

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

}  // namespace torch_tpu::exec
