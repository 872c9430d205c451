// The counters behind torch_tpu.metrics().
#include "exec/metrics.h"

namespace torch_tpu::exec {

Metrics& metrics() {
  static Metrics m;
  return m;
}

void Metrics::reset() {
  for (std::atomic<int64_t>* counter :
       {&compiles, &cache_hits, &cache_misses, &executions, &bytes_to_device, &bytes_to_host, &compile_nanos,
        &quick_compiles, &full_recompiles, &ops_deferred, &disk_cache_hits, &disk_cache_writes})
    counter->store(0);
  std::lock_guard<std::mutex> lock(mutex);
  cpu_fallbacks.clear();
  flushes.clear();
  shape_families.clear();
}

}  // namespace torch_tpu::exec
