// Neural-network building blocks as graphs: per-channel broadcasting, GELU
// and its backward, pairwise distances, embedding-bag indexing, the CTC
// recursion, the elementwise losses and the reduction of per-sample losses.
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

namespace {

// v shifted along dim 1 by `by` (> 0: toward higher s), filled with `fill`.
Value shifted(Graph& g, Value v, int64_t by, const c10::Scalar& fill) {
  Shape sh = g.type(v).shape;
  int64_t n = sh[0], l = sh[1], k = std::abs(by);
  if (k >= l) return constant(g, fill, g.type(v).dtype, sh);
  Value kept = by > 0 ? slice(g, v, {0, 0}, {n, l - k}, {1, 1}) : slice(g, v, {0, k}, {n, l}, {1, 1});
  return by > 0 ? pad(g, kept, fill, {0, k}, {0, 0}, {0, 0}) : pad(g, kept, fill, {0, 0}, {0, k}, {0, 0});
}

}  // namespace

Value ctc_recursion(Graph& g, const CtcTerms& t, c10::ScalarType dt, bool backward) {
  Shape nl{t.N, t.L}, tnl{t.T, t.N, t.L};
  double inf = std::numeric_limits<double>::infinity();
  Value history = constant(g, -inf, dt, tnl);
  Value state = constant(g, -inf, dt, nl);
  // The backward pass reads a skip from s + 2 where s + 2 may skip to s.
  Value skip = backward ? shifted(g, t.skip, -2, false) : t.skip;
  auto body = [&](Graph& sg, Value i, const std::vector<Value>& v) {
    Value prev = v[0], hist = v[1], emission = v[2], skip_v = v[3], valid = v[4], in_len = v[5], ext_len = v[6];
    Value zero = constant(sg, 0, c10::kLong);
    Value step = backward ? binary(sg, "subtract", constant(sg, t.T - 1, c10::kLong), i) : i;
    Value e = reshape(sg, dynamic_slice(sg, emission, {step, zero, zero}, {1, t.N, t.L}), nl);
    Value s = iota(sg, c10::kLong, nl, 1);
    Value steps = broadcast_in_dim(sg, step, nl, {});
    Value len = broadcast_in_dim(sg, in_len, nl, {0}), ext = broadcast_in_dim(sg, ext_len, nl, {0});
    Value neg_inf = constant(sg, -inf, dt, nl);
    // Where the recursion starts: t = 0 at s < 2 (forward), t = length - 1 at s >= ext - 2 (backward).
    Value start_step = backward ? binary(sg, "subtract", len, constant(sg, 1, c10::kLong, nl)) : constant(sg, 0, c10::kLong, nl);
    Value starts = binary(sg, "and", compare(sg, steps, start_step, "EQ", c10::kLong),
                          backward ? compare(sg, s, binary(sg, "subtract", ext, constant(sg, 2, c10::kLong, nl)), "GE", c10::kLong)
                                   : compare(sg, s, constant(sg, 2, c10::kLong, nl), "LT", c10::kLong));
    int64_t dir = backward ? -1 : 1;
    Value next = log_add3(sg, prev, shifted(sg, prev, dir, -inf), select(sg, skip_v, shifted(sg, prev, 2 * dir, -inf), neg_inf));
    Value live = backward ? compare(sg, steps, start_step, "LT", c10::kLong) : compare(sg, steps, len, "LT", c10::kLong);
    Value value = select(sg, valid, binary(sg, "add", select(sg, starts, constant(sg, 0.0, dt, nl), next), e), neg_inf);
    if (backward) {
      value = select(sg, binary(sg, "or", starts, live), value, neg_inf);
    } else {  // step 0 only starts; a sample past its length keeps its last alpha
      Value computed = binary(sg, "and", live, compare(sg, steps, constant(sg, 0, c10::kLong, nl), "GT", c10::kLong));
      value = select(sg, binary(sg, "or", starts, computed), value, prev);
    }
    Value updated = dynamic_update_slice(sg, hist, reshape(sg, value, {1, t.N, t.L}), std::vector<Value>{step, zero, zero});
    return std::vector<Value>{value, updated, emission, skip_v, valid, in_len, ext_len};
  };
  return counted_loop(g, constant(g, 0, c10::kLong), constant(g, t.T, c10::kLong),
                      {state, history, t.emission, skip, t.valid, t.in_len, t.ext_len}, body)[1];
}

Value squared_error(Graph& g, Value x, Value y) {
  Value d = binary(g, "subtract", x, y);
  return binary(g, "multiply", d, d);
}
Value squared_error_grad(Graph& g, Value x, Value y) {
  return binary(g, "multiply", binary(g, "subtract", x, y), constant_like(g, x, 2));
}

Value huber(Graph& g, Value x, Value y, double delta) {
  Value d = binary(g, "subtract", x, y), a = unary(g, "abs", d);
  Value inside = binary(g, "multiply", constant_like(g, d, 0.5), binary(g, "multiply", d, d));
  Value outside = binary(g, "multiply", constant_like(g, d, delta), binary(g, "subtract", a, constant_like(g, d, 0.5 * delta)));
  return select(g, compare(g, a, constant_like(g, a, delta), "LT", g.type(a).dtype), inside, outside);
}
Value huber_grad(Graph& g, Value x, Value y, double delta) {
  Value d = binary(g, "subtract", x, y);
  return binary(g, "minimum", binary(g, "maximum", d, constant_like(g, d, -delta)), constant_like(g, d, delta));
}

Value smooth_l1(Graph& g, Value x, Value y, double beta) {
  Value d = unary(g, "abs", binary(g, "subtract", x, y));
  if (beta == 0) return d;
  Value inside = binary(g, "divide", binary(g, "multiply", constant_like(g, d, 0.5), binary(g, "multiply", d, d)),
                        constant_like(g, d, beta));
  return select(g, compare(g, d, constant_like(g, d, beta), "LT", g.type(d).dtype), inside,
                binary(g, "subtract", d, constant_like(g, d, 0.5 * beta)));
}
Value smooth_l1_grad(Graph& g, Value x, Value y, double beta) {
  Value d = binary(g, "subtract", x, y);
  Value sign = unary(g, "sign", d);
  if (beta == 0) return sign;
  Value inside = compare(g, unary(g, "abs", d), constant_like(g, d, beta), "LT", g.type(d).dtype);
  return select(g, inside, binary(g, "divide", d, constant_like(g, d, beta)), sign);
}

Value binary_cross_entropy(Graph& g, Value x, Value y) {
  Value floor = constant_like(g, x, -100);
  Value log_x = binary(g, "maximum", unary(g, "log", x), floor);
  Value log_1mx = binary(g, "maximum", unary(g, "log_plus_one", unary(g, "negate", x)), floor);
  Value l = binary(g, "add", binary(g, "multiply", y, log_x),
                   binary(g, "multiply", binary(g, "subtract", constant_like(g, y, 1), y), log_1mx));
  return unary(g, "negate", l);
}
Value binary_cross_entropy_grad(Graph& g, Value x, Value y) {
  // (x - y) / max((1 - x) x, eps), eps = 1e-12 as in PyTorch.
  Value denom = binary(g, "multiply", binary(g, "subtract", constant_like(g, x, 1), x), x);
  denom = binary(g, "maximum", denom, constant_like(g, x, 1e-12));
  return binary(g, "divide", binary(g, "subtract", x, y), denom);
}

Value reduce_sample_losses(Graph& g, Value losses, int64_t n, int64_t reduction, const Shape& per_sample) {
  if (reduction == at::Reduction::None) return reshape(g, losses, per_sample);
  Value sum = reduce(g, losses, {0}, ReduceKind::Sum);
  if (reduction == at::Reduction::Sum) return sum;
  return binary(g, "divide", sum, constant(g, static_cast<double>(n), g.type(sum).dtype));
}

}  // namespace torch_tpu::lower
