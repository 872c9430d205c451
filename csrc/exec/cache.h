// The compilation cache: programs keyed by the graph's structure (Graph::hash
// plus full equality on collision) and the plugin identity, so a changed
// scalar value (a runtime input) never recompiles. Tier 1 in memory, bounded
// by the memory mappings its programs hold; tier 2 on disk (disk_cache.h).
// One cache serves every mode. Small programs are compiled in two tiers of
// code (cache.cpp).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/pjrt.h"

namespace torch_tpu::exec {

// The executable of `graph`, for a program run many times (compile mode, and
// exec::run): the one from the cache (memory, then disk; compiled on a
// miss), and a run of it. With `replica_devices`, the executable of the
// replicated program run_replicated() runs. `tiered`: a small program may be
// compiled quickly first (the two tiers in exec.cpp); the caller must come
// back here for every run, as run() does, to get the recompiled one.
runtime::ExecutablePtr executable(const ir::Graph& graph, const std::vector<int>& replica_devices = {},
                                  bool tiered = false);
// Number of distinct programs held in memory.
size_t cache_size();
// Makes the memory tier keep programs loaded as if the kernel allowed the
// process `n` memory mappings (0: the kernel's vm.max_map_count); returns
// the limit in force before. For tests.
size_t set_memory_mapping_limit(size_t n);

}  // namespace torch_tpu::exec
