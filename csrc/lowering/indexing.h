// Indexing as graphs: triangles of matrices, flat indices for gathers and scatters.
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower {

// Keeps the elements on or above (upper) / on or below (lower) the diagonal
// `k` of the last two dimensions; the rest become 0.
Value triangle(Graph& g, Value v, int64_t k, bool upper);

// Flat indices into a contiguous tensor of shape `source` of the elements at
// the positions of `shape`, with dimension `dim`'s coordinate taken from
// `index_along` (int64, of `shape`).
Value flat_index_with(Graph& g, const Shape& source, const Shape& shape, int64_t dim, Value index_along);

}  // namespace torch_tpu::lower
