// Reductions as graphs.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lowering/builder.h"

namespace torch_tpu::lower {

Value without_spare(Graph& g, Value v, int64_t n);

}  // namespace torch_tpu::lower
