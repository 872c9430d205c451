// Collectives across the replicas of a replicated program (exec::run_replicated):
// each adds one StableHLO collective over all replicas, in replica order.
// Every replica runs the same program, so the operand has the same type on each.
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower {

// Each replica's v combined elementwise with `kind`.
Value all_reduce(Graph& g, Value v, ReduceKind kind, int64_t replicas);
// The replicas' v concatenated along `dim` (replica 0 first).
Value all_gather(Graph& g, Value v, int64_t dim, int64_t replicas);
// The `kind` combination of the replicas' v, of which replica i keeps the
// i-th of `replicas` equal parts along `dim`.
Value reduce_scatter(Graph& g, Value v, int64_t dim, ReduceKind kind, int64_t replicas);
// v split into `replicas` equal parts along `dim`: replica i sends its j-th
// part to replica j, and concatenates what it receives along `dim`, in
// replica order.
Value all_to_all(Graph& g, Value v, int64_t dim, int64_t replicas);

}  // namespace torch_tpu::lower
