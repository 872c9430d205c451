// Neural-network building blocks as graphs: per-channel broadcasting, erf and
#include "lowering/nn.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

Value per_channel(Graph& g, Value v, const Shape& shape) { return broadcast_in_dim(g, v, shape, {1}); }

namespace {

Value erf(Graph& g, Value x) { return g.add("chlo.erf", {x}, g.type(x)); }

}  // namespace

Value gelu_value(Graph& g, Value x, bool tanh_approx) {
  Value half = constant_like(g, x, 0.5), one = constant_like(g, x, 1.0);
  if (tanh_approx) {
    Value inner = binary(g, "multiply", constant_like(g, x, 0.7978845608028654),
                         binary(g, "add", x, binary(g, "multiply", constant_like(g, x, 0.044715),
                                                    binary(g, "multiply", x, binary(g, "multiply", x, x)))));
    return binary(g, "multiply", binary(g, "multiply", half, x), binary(g, "add", one, unary(g, "tanh", inner)));
  }
  Value cdf = binary(g, "add", one, erf(g, binary(g, "multiply", x, constant_like(g, x, 0.7071067811865476))));
  return binary(g, "multiply", binary(g, "multiply", half, x), cdf);
}

Value gelu_backward_value(Graph& g, Value grad, Value x, bool tanh_approx) {
  Value half = constant_like(g, x, 0.5), one = constant_like(g, x, 1.0);
  Value left, right;
  if (tanh_approx) {
    Value k = constant_like(g, x, 0.7978845608028654), c = constant_like(g, x, 0.044715);
    Value x2 = binary(g, "multiply", x, x);
    Value inner = binary(g, "multiply", k, binary(g, "add", x, binary(g, "multiply", c, binary(g, "multiply", x2, x))));
    Value th = unary(g, "tanh", inner);
    left = binary(g, "multiply", half, binary(g, "add", one, th));
    Value dinner = binary(g, "multiply", k, binary(g, "add", one, binary(g, "multiply", constant_like(g, x, 3 * 0.044715), x2)));
    right = binary(g, "multiply", binary(g, "multiply", half, x),
                   binary(g, "multiply", binary(g, "subtract", one, binary(g, "multiply", th, th)), dinner));
  } else {
    left = binary(g, "multiply", half,
                  binary(g, "add", one, erf(g, binary(g, "multiply", x, constant_like(g, x, 0.7071067811865476)))));
    Value pdf = binary(g, "multiply", constant_like(g, x, 0.3989422804014327),
                       unary(g, "exponential", binary(g, "multiply", constant_like(g, x, -0.5), binary(g, "multiply", x, x))));
    right = binary(g, "multiply", x, pdf);
  }
  return binary(g, "add", binary(g, "multiply", grad, left), binary(g, "multiply", grad, right));
}

Value log_add3(Graph& g, Value a, Value b, Value c) {
  auto dt = g.type(a).dtype;
  Shape sh = g.type(a).shape;
  Value m = binary(g, "maximum", binary(g, "maximum", a, b), c);
  Value neg_inf = constant(g, -std::numeric_limits<double>::infinity(), dt, sh);
  Value sum = binary(g, "add", binary(g, "add", unary(g, "exponential", binary(g, "subtract", a, m)),
                                      unary(g, "exponential", binary(g, "subtract", b, m))),
                     unary(g, "exponential", binary(g, "subtract", c, m)));
  return select(g, compare(g, m, neg_inf, "EQ", dt), neg_inf, binary(g, "add", m, unary(g, "log", sum)));
}

namespace {

Value row_differences(Graph& g, Value x1, Value x2) {
  const Shape a = g.type(x1).shape, b = g.type(x2).shape;
  const Shape s{a[0], a[1], b[1], a[2]};
  return binary(g, "subtract", broadcast_in_dim(g, x1, s, {0, 1, 3}), broadcast_in_dim(g, x2, s, {0, 2, 3}));
}

}  // namespace

Value pairwise_distance(Graph& g, Value x1, Value x2, double p) {
  Value d = unary(g, "abs", row_differences(g, x1, x2));
  const Type t = g.type(d);
  if (p == 0) return reduce(g, convert(g, compare(g, d, constant_like(g, d, 0), "NE", t.dtype), t.dtype), {3}, ReduceKind::Sum);
  if (p == 1) return reduce(g, d, {3}, ReduceKind::Sum);
  if (p == 2) return unary(g, "sqrt", reduce(g, binary(g, "multiply", d, d), {3}, ReduceKind::Sum));
  if (std::isinf(p)) return reduce(g, d, {3}, ReduceKind::Max);
  Value s = reduce(g, binary(g, "power", d, constant_like(g, d, p)), {3}, ReduceKind::Sum);
  return binary(g, "power", s, constant_like(g, s, 1.0 / p));
}

Value pairwise_distance_grad(Graph& g, Value grad, Value x1, Value x2, Value dist, double p) {
  Value diff = row_differences(g, x1, x2);
  const Type t = g.type(diff);
  if (p == 0) return constant(g, 0, t.dtype, g.type(x1).shape);
  Value gr = broadcast_in_dim(g, grad, t.shape, {0, 1, 2});
  Value di = broadcast_in_dim(g, dist, t.shape, {0, 1, 2});
  Value zero = constant_like(g, diff, 0);
  Value sign = unary(g, "sign", diff);
  Value term;
  if (p == 1) {
    term = binary(g, "multiply", gr, sign);
  } else if (std::isinf(p)) {
    Value at_max = convert(g, compare(g, unary(g, "abs", diff), di, "EQ", t.dtype), t.dtype);
    term = binary(g, "multiply", gr, binary(g, "multiply", sign, at_max));
  } else {
    // sign(d) |d|^(p-1) / dist^(p-1), zero where the distance is zero.
    Value pm1 = constant_like(g, diff, p - 1);
    Value scaled = binary(g, "multiply", sign, binary(g, "power", unary(g, "abs", diff), pm1));
    Value safe = select(g, compare(g, di, zero, "EQ", t.dtype), constant_like(g, di, 1), di);
    term = select(g, compare(g, di, zero, "EQ", t.dtype), zero,
                  binary(g, "multiply", gr, binary(g, "divide", scaled, binary(g, "power", safe, pm1))));
  }
  return reduce(g, term, {2}, ReduceKind::Sum);
}

Value bag_feature_index(Graph& g, Value bag, Value valid, int64_t count, int64_t d) {
  const int64_t n = g.type(bag).shape[0];
  const Shape nd{n, d};
  Value row = select(g, valid, bag, constant(g, count, c10::kLong, {n}));
  return binary(g, "add", binary(g, "multiply", broadcast_in_dim(g, row, nd, {0}), constant(g, d, c10::kLong, nd)),
                iota(g, c10::kLong, nd, 1));
}

}  // namespace torch_tpu::lower
