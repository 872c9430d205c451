// Elementwise arithmetic with PyTorch's semantics as graphs: predicates, the
#include "lowering/elementwise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

Value is_nan(Graph& g, Value x) { return compare(g, x, x, "NE", g.type(x).dtype); }

Value is_zero(Graph& g, Value x) { return compare(g, x, constant_like(g, x, 0), "EQ", g.type(x).dtype); }

Value is_negative(Graph& g, Value x) { return compare(g, x, constant_like(g, x, 0), "LT", g.type(x).dtype); }

Value mul(Graph& g, Value a, Value b) { return binary(g, "multiply", a, b); }

Value add(Graph& g, Value a, Value b) { return binary(g, "add", a, b); }

Value sub(Graph& g, Value a, Value b) { return binary(g, "subtract", a, b); }

Value div(Graph& g, Value a, Value b) { return binary(g, "divide", a, b); }

Value sign_bit(Graph& g, Value x) {
  auto t = g.type(x);
  if (!is_float(t.dtype)) return is_negative(g, x);
  auto bits = c10::elementSize(t.dtype) == 2 ? c10::kShort : c10::elementSize(t.dtype) == 4 ? c10::kInt : c10::kLong;
  return is_negative(g, bitcast(g, x, bits));
}

Value python_remainder(Graph& g, Value a, Value b) {
  Value r = binary(g, "remainder", a, b);
  Value fix = binary(g, "and", unary(g, "not", is_zero(g, r)),
                     compare(g, is_negative(g, r), is_negative(g, b), "NE", c10::kBool));
  return select(g, fix, add(g, r, b), r);
}

Value floor_divide_values(Graph& g, Value a, Value b) {
  Value mod = binary(g, "remainder", a, b);
  Value sign_differs = compare(g, is_negative(g, mod), is_negative(g, b), "NE", c10::kBool);
  Value fix = binary(g, "and", unary(g, "not", is_zero(g, mod)), sign_differs);
  if (!is_float(g.type(a).dtype)) return select(g, fix, sub(g, div(g, a, b), constant_like(g, a, 1)), div(g, a, b));
  Value q = div(g, sub(g, a, mod), b);
  q = select(g, fix, sub(g, q, constant_like(g, q, 1)), q);
  Value fl = unary(g, "floor", q);
  fl = select(g, compare(g, sub(g, q, fl), constant_like(g, q, 0.5), "GT", g.type(q).dtype), add(g, fl, constant_like(g, fl, 1)), fl);
  Value quotient = div(g, a, b);
  // A zero quotient keeps the sign of a / b; a zero divisor gives a / b (inf or NaN).
  Value signed_zero = select(g, sign_bit(g, quotient), constant_like(g, q, -0.0), constant_like(g, q, 0.0));
  fl = select(g, is_zero(g, q), signed_zero, fl);
  return select(g, is_zero(g, b), quotient, fl);
}

namespace {
Value extreme_propagating_nan(Graph& g, Value a, Value b, const char* op) {
  Value r = binary(g, op, a, b);
  if (!is_float(g.type(a).dtype)) return r;
  return select(g, is_nan(g, a), a, select(g, is_nan(g, b), b, r));
}
}  // namespace

Value max_propagating_nan(Graph& g, Value a, Value b) { return extreme_propagating_nan(g, a, b, "maximum"); }
Value min_propagating_nan(Graph& g, Value a, Value b) { return extreme_propagating_nan(g, a, b, "minimum"); }

Value log_add_exp(Graph& g, Value a, Value b) {
  auto t = g.type(a);
  if (!c10::isComplexType(t.dtype)) {
    Value m = max_propagating_nan(g, a, b);
    Value r = add(g, m, unary(g, "log_plus_one", unary(g, "exponential", unary(g, "negate", unary(g, "abs", sub(g, a, b))))));
    // Equal infinities: a - b is NaN, the answer is a.
    Value same_inf = binary(g, "and", compare(g, a, b, "EQ", t.dtype),
                            compare(g, unary(g, "abs", a), constant_like(g, a, INFINITY), "EQ", t.dtype));
    return select(g, same_inf, a, r);
  }
  auto real_t = complex_part_type(t.dtype);
  auto has_nan = [&](Value z) { return binary(g, "or", is_nan(g, real_part(g, z)), is_nan(g, imag_part(g, z))); };
  Value ar = real_part(g, a), br = real_part(g, b);
  Value a_smaller = compare(g, ar, br, "LT", real_t);
  Value lo = select(g, a_smaller, a, b), hi = select(g, a_smaller, b, a);
  Value lo_r = real_part(g, lo), hi_r = real_part(g, hi);
  Value r = add(g, unary(g, "log_plus_one", unary(g, "exponential", sub(g, lo, hi))), hi);
  // Both real parts the same infinity: -inf gives the smaller operand, +inf log(exp(lo) + exp(hi)).
  Value same_inf = binary(g, "and", compare(g, lo_r, hi_r, "EQ", real_t), not_finite(g, lo_r));
  Value at_inf = select(g, compare(g, lo_r, constant_like(g, lo_r, 0), "LT", real_t), lo,
                        unary(g, "log", add(g, unary(g, "exponential", lo), unary(g, "exponential", hi))));
  r = select(g, same_inf, at_inf, r);
  Value nan = make_complex(g, constant_like(g, ar, NAN), constant_like(g, ar, NAN));
  return select(g, binary(g, "or", has_nan(a), has_nan(b)), nan, r);
}

Value gcd_values(Graph& g, Value a, Value b) {
  auto dt = g.type(a).dtype;
  Shape shape = g.type(a).shape;
  std::vector<int64_t> all(shape.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  auto cond = [&](Graph& sg, const std::vector<Value>& v) {
    Value pending = compare(sg, v[1], constant(sg, 0, dt, shape), "NE", dt);
    return std::vector<Value>{reduce(sg, pending, all, ReduceKind::Or)};
  };
  auto body = [&](Graph& sg, const std::vector<Value>& v) {
    Value zero = constant(sg, 0, dt, shape);
    Value pending = compare(sg, v[1], zero, "NE", dt);
    Value safe = select(sg, pending, v[1], constant(sg, 1, dt, shape));
    Value rem = binary(sg, "remainder", v[0], safe);
    return std::vector<Value>{select(sg, pending, v[1], v[0]), select(sg, pending, rem, zero)};
  };
  return unary(g, "abs", while_loop(g, {a, b}, cond, body)[0]);
}

Value hardsigmoid_value(Graph& g, Value x) {
  Value r = div(g, add(g, x, constant_like(g, x, 3)), constant_like(g, x, 6));
  return binary(g, "minimum", binary(g, "maximum", r, constant_like(g, x, 0)), constant_like(g, x, 1));
}

Value in_open_range(Graph& g, Value x, double lo, double hi) {
  auto dt = g.type(x).dtype;
  return binary(g, "and", compare(g, x, constant_like(g, x, lo), "GT", dt), compare(g, x, constant_like(g, x, hi), "LT", dt));
}

Value softplus_value(Graph& g, Value x) {
  // log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
  return add(g, binary(g, "maximum", x, constant_like(g, x, 0)),
             unary(g, "log_plus_one", unary(g, "exponential", unary(g, "negate", unary(g, "abs", x)))));
}

Value real_sign(Graph& g, Value x) {
  auto t = g.type(x);
  if (t.dtype == c10::kBool) return x;
  if (!is_float(t.dtype)) return unary(g, "sign", x);
  // PyTorch computes (0 < x) - (x < 0): NaN gives 0, not NaN.
  Value zero = constant(g, 0, t.dtype, t.shape);
  return binary(g, "subtract", convert(g, compare(g, zero, x, "LT", t.dtype), t.dtype),
                convert(g, compare(g, x, zero, "LT", t.dtype), t.dtype));
}

Value chlo(Graph& g, const char* name, Value x) { return g.add(std::string("chlo.") + name, {x}, g.type(x)); }
Value chlo(Graph& g, const char* name, Value a, Value b) {
  return g.add(std::string("chlo.") + name, {a, b}, g.type(a));
}

Value not_finite(Graph& g, Value v) {
  return compare(g, binary(g, "subtract", v, v), constant_like(g, v, 0), "NE", g.type(v).dtype);
}

}  // namespace torch_tpu::lower
