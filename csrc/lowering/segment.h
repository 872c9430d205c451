// Segment reductions as graphs: data [pre, L, post] reduced over consecutive
// segments of its middle axis. Each element scatters into its segment (found
// by counting the segment ends at or before it); elements outside every
// segment go to a spare slot past the last one.
#pragma once

#include <optional>

#include "lowering/builder.h"

namespace torch_tpu::lower {

enum class SegmentKind { Sum, Mean, Max, Min, Prod };

struct SegmentLayout {
  int64_t pre = 1, length = 0, post = 1, segments = 0;
  Value segment;  // int64 [pre, L, post]: flat output position, or the spare slot
  Value valid;    // bool [pre, L, post]
  Value count;    // int64 [pre * S * post]: elements per segment
};

// `bounds`: int64 [pre, S] segment lengths, or [pre, S + 1] offsets.
SegmentLayout segment_layout(Graph& g, Value bounds, bool by_lengths, int64_t pre, int64_t length, int64_t post);

// The segments of x [pre, L, post] reduced, flat [pre * S * post]; each starts
// from `initial` (a 0-d value of x's dtype) or the reduction's identity. An
// empty segment's mean is `initial`, or NaN without one.
Value segment_reduce(Graph& g, const SegmentLayout& l, Value x, SegmentKind kind, std::optional<Value> initial);

// The gradient [pre, L, post] of x from the gradient and value of the
// reduction ([pre * S * post]). Ties of max and min share their gradient; a
// product's is that of the other elements.
Value segment_reduce_backward(Graph& g, const SegmentLayout& l, Value x, Value grad, Value output, SegmentKind kind,
                              std::optional<Value> initial);

}  // namespace torch_tpu::lower
