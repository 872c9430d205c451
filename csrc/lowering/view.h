// Reading and writing a strided view of a flat storage as graphs: the start
// offset (static, or a runtime input), the cheapest read for a layout (reshape,
// transpose, slice of a dense block or strided box, gather in general), and the
// matching writes (dynamic_update_slice, scatter).
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower {

// Where a view starts in its storage. `offset` decides how the view is read;
// `runtime`, when set, is the same number as a runtime input (a 0-d int64
// value), and the program uses it instead, so that reading or writing a window
// that moves (a row per loop iteration, the last token of a growing sequence)
// reuses one program.
struct ViewStart {
  int64_t offset;
  Value runtime = -1;
};

Shape to_shape(c10::IntArrayRef a);

// Reads a strided view out of a flat storage value.
Value read_view(Graph& g, Value base, const ViewStart& at, c10::IntArrayRef sizes, c10::IntArrayRef strides);

Value write_view(Graph& g, Value base, Value v, const ViewStart& at, c10::IntArrayRef sizes, c10::IntArrayRef strides);

}  // namespace torch_tpu::lower
