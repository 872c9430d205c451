// The counters behind torch_tpu.metrics().
#include "exec/metrics.h"

namespace torch_tpu::exec {

Metrics& metrics() {
  static Metrics m;
  return m;
}

void Metrics::reset() {
  compiles = 0;
  cache_hits = 0;
  cache_misses = 0;
  executions = 0;
  bytes_to_device = 0;
  bytes_to_host = 0;
  compile_nanos = 0;
  quick_compiles = 0;
  full_recompiles = 0;
  ops_deferred = 0;
  disk_cache_hits = 0;
  disk_cache_writes = 0;
  std::lock_guard<std::mutex> lock(mutex);
  cpu_fallbacks.clear();
  flushes.clear();
  shape_families.clear();
}

}  // namespace torch_tpu::exec
