// Reductions as graphs.
#include "lowering/reduction.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

Value without_spare(Graph& g, Value v, int64_t n) { return slice(g, v, {0}, {n}, {1}); }

}  // namespace torch_tpu::lower
