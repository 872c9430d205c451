// Indexing as graphs.
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

}  // namespace torch_tpu::lower
