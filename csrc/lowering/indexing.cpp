// Indexing as graphs: triangles of matrices, flat indices for gathers and scatters.
#include "lowering/indexing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

Value triangle(Graph& g, Value v, int64_t k, bool upper) {
  auto t = g.type(v);
  int64_t r = t.shape.size();
  Value row = iota(g, c10::kLong, t.shape, r - 2);
  Value col = iota(g, c10::kLong, t.shape, r - 1);
  Value diff = binary(g, "subtract", col, row);
  Value keep = compare(g, diff, constant(g, k, c10::kLong, t.shape), upper ? "GE" : "LE", c10::kLong);
  return select(g, keep, v, constant(g, 0, t.dtype, t.shape));
}

Value flat_index_with(Graph& g, const Shape& source, const Shape& shape, int64_t dim, Value index_along) {
  std::vector<int64_t> strides(source.size(), 1);
  for (int64_t d = (int64_t)source.size() - 2; d >= 0; --d) strides[d] = strides[d + 1] * source[d + 1];
  Value idx = binary(g, "multiply", index_along, constant(g, strides[dim], c10::kLong, shape));
  for (size_t d = 0; d < shape.size(); ++d) {
    if ((int64_t)d == dim || shape[d] == 1) continue;
    idx = binary(g, "add", idx,
                 binary(g, "multiply", iota(g, c10::kLong, shape, d), constant(g, strides[d], c10::kLong, shape)));
  }
  return idx;
}

}  // namespace torch_tpu::lower
