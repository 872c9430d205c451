// Indexing as graphs: triangles of matrices, flat indices for gathers and scatters,
// binary searches.
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

Value binary_search(Graph& g, Value rows, Value values, bool right) {
  auto vt = g.type(values);
  Shape rs = g.type(rows).shape;
  int64_t m = rs.back();
  Shape vs = vt.shape;
  int64_t numel = 1;
  for (int64_t s : vs) numel *= s;
  if (m == 0 || numel == 0) return constant(g, 0, c10::kLong, vs);
  // Each value's row starts at (its flat index / k) * m in the flattened rows.
  Value row_start = constant(g, 0, c10::kLong, vs);
  if (rs.size() > 1) {
    int64_t k = vs.back();
    Value flat = reshape(g, iota(g, c10::kLong, {numel}, 0), vs);
    row_start = binary(g, "multiply", binary(g, "divide", flat, constant(g, k, c10::kLong, vs)),
                       constant(g, m, c10::kLong, vs));
  }
  int64_t rows_numel = 1;
  for (int64_t s : rs) rows_numel *= s;
  Value flat_rows = reshape(g, rows, {rows_numel});
  Value lo = constant(g, 0, c10::kLong, vs), hi = constant(g, m, c10::kLong, vs);
  Value one = constant(g, 1, c10::kLong, vs), last = constant(g, m - 1, c10::kLong, vs);
  // The CPU's loop halves [lo, hi) until it is empty: floor(log2 m) + 1 steps.
  int steps = 1;
  while ((int64_t{1} << steps) <= m) ++steps;
  for (int i = 0; i < steps; ++i) {
    Value active = compare(g, lo, hi, "LT", c10::kLong);
    Value mid = binary(g, "add", lo, binary(g, "shift_right_logical", binary(g, "subtract", hi, lo), one));
    Value entry = gather_flat(g, flat_rows, binary(g, "add", row_start, binary(g, "minimum", mid, last)));
    // Not (entry >= value) moves right, so a NaN on either side does too.
    Value stays_left = compare(g, entry, values, right ? "GT" : "GE", vt.dtype);
    Value go_right = binary(g, "and", active, unary(g, "not", stays_left));
    Value go_left = binary(g, "and", active, stays_left);
    lo = select(g, go_right, binary(g, "add", mid, one), lo);
    hi = select(g, go_left, mid, hi);
  }
  return lo;
}

}  // namespace torch_tpu::lower
