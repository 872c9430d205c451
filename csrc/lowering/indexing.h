// Indexing as graphs: triangles of matrices, flat indices for gathers and scatters,
// binary searches.
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

// For each element of `values` (shape [..., k]), the insertion point in its row
// of `rows` ([m] for every value, or [..., m] with values' leading dims) found
// by the CPU's binary search: the first position whose entry is >= the value
// (> for `right`), so unsorted rows and NaNs land where the CPU puts them.
// Both in one comparison dtype; the result is int64 of values' shape.
Value binary_search(Graph& g, Value rows, Value values, bool right);

}  // namespace torch_tpu::lower
