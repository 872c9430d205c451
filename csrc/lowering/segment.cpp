// Segment reductions as graphs (segment.h).
#include "lowering/segment.h"

#include <cmath>

namespace torch_tpu::lower {

SegmentLayout segment_layout(Graph& g, Value bounds, bool by_lengths, int64_t pre, int64_t length, int64_t post) {
  SegmentLayout l;
  l.pre = pre;
  l.length = length;
  l.post = post;
  const int64_t width = g.type(bounds).shape[1];
  l.segments = by_lengths ? width : width - 1;
  const int64_t S = l.segments;
  Value start, ends;  // [pre], [pre, S]
  if (by_lengths) {
    start = constant(g, 0, c10::kLong, {pre});
    ends = cumulative(g, bounds, 1, ReduceKind::Sum);
  } else {
    start = reshape(g, slice(g, bounds, {0, 0}, {pre, 1}, {1, 1}), {pre});
    ends = slice(g, bounds, {0, 1}, {pre, S + 1}, {1, 1});
  }
  const Shape grid{pre, length, S};
  Value position = iota(g, c10::kLong, grid, 1);
  Value passed = compare(g, broadcast_in_dim(g, ends, grid, {0, 2}), position, "LE", c10::kLong);
  Value seg = reduce(g, convert(g, passed, c10::kLong), {2}, ReduceKind::Sum);  // [pre, L]
  const Shape rows{pre, length};
  Value j = iota(g, c10::kLong, rows, 1);
  Value valid = binary(g, "and", compare(g, seg, constant(g, S, c10::kLong, rows), "LT", c10::kLong),
                       compare(g, j, broadcast_in_dim(g, start, rows, {0}), "GE", c10::kLong));
  const Shape full{pre, length, post};
  auto k = [&](int64_t v) { return constant(g, v, c10::kLong, full); };
  Value flat = binary(g, "add", binary(g, "multiply", binary(g, "add", binary(g, "multiply", iota(g, c10::kLong, full, 0), k(S)),
                                                                broadcast_in_dim(g, seg, full, {0, 1})), k(post)),
                      iota(g, c10::kLong, full, 2));
  l.valid = broadcast_in_dim(g, valid, full, {0, 1});
  l.segment = select(g, l.valid, flat, k(pre * S * post));
  Value ones = convert(g, l.valid, c10::kLong);
  Value counted = scatter_flat(g, constant(g, 0, c10::kLong, {pre * S * post + 1}), l.segment, ones, true);
  l.count = slice(g, counted, {0}, {pre * S * post}, {1});
  return l;
}

Value segment_reduce(Graph& g, const SegmentLayout& l, Value x, SegmentKind kind, std::optional<Value> initial) {
  auto acc = g.type(x).dtype;
  const int64_t n = l.pre * l.segments * l.post;
  ReduceKind combine = kind == SegmentKind::Max ? ReduceKind::Max
                       : kind == SegmentKind::Min ? ReduceKind::Min
                       : kind == SegmentKind::Prod ? ReduceKind::Prod
                                                   : ReduceKind::Sum;
  Value start = initial ? broadcast_to(g, *initial, {n + 1}) : constant(g, reduce_identity(acc, combine), acc, {n + 1});
  // The last slot is the spare that elements outside every segment went to.
  Value r = slice(g, scatter_flat(g, start, l.segment, x, combine), {0}, {n}, {1});
  if (kind == SegmentKind::Mean) {
    Value count = convert(g, l.count, acc);
    Value empty = compare(g, l.count, constant(g, 0, c10::kLong, {n}), "EQ", c10::kLong);
    r = initial ? select(g, empty, r, binary(g, "divide", r, count)) : binary(g, "divide", r, count);
  }
  return r;
}

Value segment_reduce_backward(Graph& g, const SegmentLayout& l, Value x, Value grad, Value output, SegmentKind kind,
                              std::optional<Value> initial) {
  auto acc = g.type(x).dtype;
  const int64_t n = l.pre * l.segments * l.post;
  const Shape full{l.pre, l.length, l.post};
  auto spare = [&](Value v) { return concat(g, {v, constant(g, 0, g.type(v).dtype, {1})}, 0); };
  auto per_element = [&](Value per_segment) { return gather_flat(g, spare(per_segment), l.segment); };
  Value zero = constant(g, 0, acc, full);
  Value r = zero;
  switch (kind) {
    case SegmentKind::Sum:
      r = per_element(grad);
      break;
    case SegmentKind::Mean: {
      Value count = convert(g, binary(g, "maximum", l.count, constant(g, 1, c10::kLong, {n})), acc);
      r = per_element(binary(g, "divide", grad, count));
      break;
    }
    case SegmentKind::Max:
    case SegmentKind::Min: {
      // As the CPU: the elements equal to the result, or NaN, share a positive
      // gradient equally (a non-positive one each get whole).
      Value hit = binary(g, "and", l.valid,
                         binary(g, "or", compare(g, x, x, "NE", acc), compare(g, x, per_element(output), "EQ", acc)));
      Value hits = scatter_flat(g, constant(g, 0, acc, {n + 1}), l.segment, convert(g, hit, acc), true);
      Value whole = per_element(grad);
      Value share = binary(g, "divide", whole, binary(g, "maximum", gather_flat(g, hits, l.segment), constant(g, 1, acc, full)));
      r = select(g, hit, select(g, compare(g, whole, zero, "GT", acc), share, whole), zero);
      break;
    }
    case SegmentKind::Prod: {
      // As the CPU: grad * output / x, except where x is zero or NaN, whose
      // gradient is grad times the product of the segment's other elements:
      // the product of its ordinary elements (and the initial value), unless
      // another element is NaN (then NaN) or zero (then 0).
      Value is_nan = compare(g, x, x, "NE", acc);
      Value is_zero = compare(g, x, zero, "EQ", acc);
      Value special = binary(g, "or", is_zero, is_nan);
      Value one = constant(g, 1, acc, full);
      Value start = initial ? broadcast_to(g, *initial, {n + 1}) : constant(g, 1, acc, {n + 1});
      Value ordinary = gather_flat(g, scatter_flat(g, start, l.segment, select(g, special, one, x), ReduceKind::Prod),
                                   l.segment);
      // Per element: how many of the other elements of its segment are flagged.
      auto flagged_others = [&](Value flag) {
        Value f = convert(g, flag, acc);
        Value total = gather_flat(g, scatter_flat(g, constant(g, 0, acc, {n + 1}), l.segment, f, true), l.segment);
        return binary(g, "subtract", total, f);
      };
      Value other_nans = flagged_others(is_nan), other_zeros = flagged_others(is_zero);
      Value exclusive = select(g, compare(g, other_nans, zero, "GT", acc), constant(g, NAN, acc, full),
                               select(g, compare(g, other_zeros, zero, "GT", acc), zero, ordinary));
      Value g_el = per_element(grad);
      r = select(g, special, binary(g, "multiply", g_el, exclusive),
                 binary(g, "divide", binary(g, "multiply", g_el, per_element(output)), x));
      break;
    }
  }
  return select(g, l.valid, r, zero);
}

}  // namespace torch_tpu::lower
