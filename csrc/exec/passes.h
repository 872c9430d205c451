// Rewrites of a whole program applied just before it is compiled: they
// change how XLA schedules it, never what it computes.
#pragma once

#include <optional>

#include "ir/graph.h"

namespace torch_tpu::exec {

// `graph` with each in-place update of a donated parameter ordered after the
// matrix products and convolutions that read the parameter's old contents
// (so XLA need not copy them); nullopt when nothing needed ordering.
std::optional<ir::Graph> order_overwrites_after_reads(const ir::Graph& graph);

}  // namespace torch_tpu::exec
