// Indexing as graphs.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lowering/builder.h"

namespace torch_tpu::lower {

// Keeps the elements on or above (upper) / on or below (lower) the diagonal
// `k` of the last two dimensions; the rest become 0.
Value triangle(Graph& g, Value v, int64_t k, bool upper);

}  // namespace torch_tpu::lower
