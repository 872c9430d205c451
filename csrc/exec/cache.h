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

// How a program's first compile picks its tier of code (the two tiers in
// cache.cpp). Either quick tier is compiled again at full optimization once
// the program has been reused a few times.
enum class Tiering {
  Full,        // optimized code at once
  BySize,      // quick first when its values are small enough to run well in it
  QuickFirst,  // quick first whatever its size: a program not known to recur
};

// The executable of `graph`, for a program run many times (compile mode, and
// exec::run): the one from the cache (memory, then disk; compiled on a
// miss), and a run of it. With `replica_devices`, the executable of the
// replicated program run_replicated() runs. With a quick `tiering` the caller
// must come back here for every run, as run() does, to get the recompiled one.
runtime::ExecutablePtr executable(const ir::Graph& graph, const std::vector<int>& replica_devices = {},
                                  Tiering tiering = Tiering::Full);
// The host waited for the device (a read, a synchronize): a quick-tier
// program that recurs across such waits is compiled again, optimized.
void note_host_wait();
// Number of distinct programs held in memory.
size_t cache_size();
// Makes the memory tier keep programs loaded as if the kernel allowed the
// process `n` memory mappings (0: the kernel's vm.max_map_count); returns
// the limit in force before. For tests.
size_t set_memory_mapping_limit(size_t n);

}  // namespace torch_tpu::exec
