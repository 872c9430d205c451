// Elementwise kernels: every functional, in-place and out= form of an op goes
// through `elementwise`, which applies PyTorch's broadcasting, type promotion
// and in-place cast rules and then one lowering. Also the creation kernels that
// fill a range (arange, linspace/logspace, eye).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/elementwise.h"
#include "lowering/random.h"
#include "lowering/special.h"

namespace torch_tpu::aten {

using namespace lower;
// The graph forms join the ATen kernels of the same names as overloads.
using lower::add;
using lower::div;
using lower::mul;
using lower::sub;

namespace {

using Lower = std::function<Value(Op&, const std::vector<Value>&)>;

struct Spec {
  const char* name;
  c10::ScalarType compute;  // operands are converted to this first
  c10::ScalarType result;   // the dtype of a new result
  // A one-element second operand keeps its own precision with half types
  // instead of being rounded to them (the CPU's mul reads such a scalar in float).
  bool exact_scalar_other = false;
  // An out= tensor must have the result's dtype (TensorIterator's unary_op),
  // rather than one it can be cast to.
  bool out_same_dtype = false;
  // Half types compute in their own dtype, not float32 (ops on the bits).
  bool own_precision = false;
  // The op may write an expanded tensor in place: it is idempotent, so
  // elements sharing memory agree (threshold_, as on the CPU).
  bool overlapping_destination_ok = false;
};

Shape broadcast_shape(const std::vector<at::Tensor>& ins) {
  at::DimVector s;
  for (auto& t : ins) s = at::infer_size_dimvector(s, t.sizes());
  return Shape(s.begin(), s.end());
}

at::Tensor elementwise(const Spec& spec, const std::vector<at::Tensor>& ins, const Lower& f, Dest dest) {
  Shape shape = broadcast_shape(ins);
  if (!dest.is_new()) {
    const at::Tensor& target = dest.target();
    // An expanded destination would receive several values per element.
    if (!spec.overlapping_destination_ok) at::assert_no_internal_overlap(target);
    // As TensorIterator: an input that shares some, not all, of the destination's memory.
    for (const at::Tensor& in : ins)
      if (in.defined()) at::assert_no_partial_overlap(target, in);
    if (dest.form() == Dest::InPlace) {
      TORCH_CHECK(Shape(target.sizes().begin(), target.sizes().end()) == shape, "output with shape ",
                  target.sizes(), " doesn't match the broadcast shape ", at::IntArrayRef(shape));
    } else {
      TORCH_CHECK(!spec.out_same_dtype || spec.result == target.scalar_type(), "Found dtype ",
                  target.scalar_type(), " but expected ", spec.result);
    }
    TORCH_CHECK(at::canCast(spec.result, target.scalar_type()), "result type ", spec.result,
                " can't be cast to the desired output type ", target.scalar_type());
    dest.resize_out(shape);
  }
  Op op(spec.name);
  // Half types compute in float32 and round once at the end, as PyTorch's CPU kernels do.
  auto compute = spec.own_precision ? spec.compute : accumulate_type(spec.compute);
  std::vector<Value> vals;
  // Operands are rounded to the common dtype first (a Python scalar becomes a bfloat16 value).
  for (size_t i = 0; i < ins.size(); ++i) {
    Value v = op.in(ins[i]);
    if (!(spec.exact_scalar_other && i == 1 && ins[i].numel() == 1)) v = convert(op.g(), v, spec.compute);
    vals.push_back(broadcast_to(op.g(), convert(op.g(), v, compute), shape));
  }
  Value v = convert(op.g(), f(op, vals), spec.result);
  if (dest.is_new()) {
    // Like TensorIterator: the first input of the output's shape gives the
    // output its memory layout (its strides if dense, else dense strides in
    // the same order, as empty_like infers them).
    for (auto& t : ins) {
      if (!t.is_privateuseone() || Shape(t.sizes().begin(), t.sizes().end()) != shape) continue;
      if (t.is_contiguous()) break;
      at::Tensor out = op.result_like(v, t);
      op.run();
      return out;
    }
  }
  return dest.deliver(op, v);
}

c10::ScalarType float_of(c10::ScalarType t) {
  return c10::isIntegralType(t, true) ? at::get_default_dtype_as_scalartype() : t;
}

Value times_scalar(Op& op, Value v, const c10::Scalar& s) {
  if (s.equal(1)) return v;
  auto dt = op.g().type(v).dtype;
  return binary(op.g(), "multiply", v, broadcast_to(op.g(), op.scalar(s, dt), op.g().type(v).shape));
}

at::Tensor add_impl(const char* name, const char* hlo, const at::Tensor& self, const at::Tensor& other,
                    const at::Scalar& alpha, Dest d) {
  auto rt = at::result_type(self, other);
  TORCH_CHECK(rt != c10::kBool || std::string(hlo) == "add", "Subtraction, the `-` operator, with two bool tensors "
              "is not supported. Use the `^` or `logical_xor()` operator instead.");
  at::native::alpha_check(rt, alpha);
  return elementwise({name, rt, rt}, {self, other},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Value b = times_scalar(op, v[1], alpha);
                       if (ct == c10::kBool) return binary(op.g(), "or", v[0], b);
                       return binary(op.g(), hlo, v[0], b);
                     },
                     d);
}

Spec arith_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto rt = at::result_type(a, b);
  return {name, rt, rt};
}

Spec mul_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto rt = at::result_type(a, b);
  return {name, rt, rt, /*exact_scalar_other=*/true};
}

Spec div_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto rt = float_of(at::result_type(a, b));
  return {name, rt, rt};
}

Spec cmp_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  return {name, at::result_type(a, b), c10::kBool};
}

Spec logical_spec(const char* name, const at::Tensor&, const at::Tensor&) {
  return {name, c10::kBool, c10::kBool};
}

Spec heaviside_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "heaviside is not yet implemented for tensors with different dtypes.");
  return arith_spec(name, a, b);
}

// Ops that order values, which complex numbers have none of.
Spec ordered_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  std::string op(name + std::strlen("aten::"));
  TORCH_CHECK(!a.is_complex() && !b.is_complex(), op.substr(0, op.find_first_of("._")),
              " not implemented for complex tensors.");
  return arith_spec(name, a, b);
}

Spec bits_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto rt = at::result_type(a, b);
  return {name, rt, rt, false, false, /*own_precision=*/true};
}

Spec integer_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto rt = at::result_type(a, b);
  TORCH_CHECK(c10::isIntegralType(rt, false), name, ": not implemented for '", rt, "'");
  return {name, rt, rt};
}
}  // namespace

at::Tensor add(Dest d, const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return add_impl(d.form_name("aten::add", "aten::add_", "aten::add.out"), "add", self, other, alpha, d);
}
at::Tensor sub(Dest d, const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return add_impl(d.form_name("aten::sub", "aten::sub_", "aten::sub.out"), "subtract", self, other, alpha, d);
}

// A binary op's one definition: its lowering, and the Dest-first kernel whose
// forms (functional, in-place, out=) the registration table binds.
#define TPU_BINARY(name, spec_fn, body)                                                          \
  static Value name##_lower(Op& op, const std::vector<Value>& v) {                               \
    Graph& g = op.g();                                                                           \
    Value a = v[0], b = v[1];                                                                    \
    body                                                                                         \
  }                                                                                              \
  at::Tensor name(Dest d, const at::Tensor& self, const at::Tensor& other) {                     \
    const char* op_name = d.form_name("aten::" #name, "aten::" #name "_", "aten::" #name ".out");     \
    return elementwise(spec_fn(op_name, self, other), {self, other}, name##_lower, d);           \
  }

TPU_BINARY(mul, mul_spec, {
  if (g.type(a).dtype == c10::kBool) return binary(g, "and", a, b);
  return binary(g, "multiply", a, b);
})
TPU_BINARY(div, div_spec, { return binary(g, "divide", a, b); })
TPU_BINARY(maximum, ordered_spec, { return max_propagating_nan(g, a, b); })
TPU_BINARY(minimum, ordered_spec, { return min_propagating_nan(g, a, b); })
TPU_BINARY(pow, arith_spec, {
  // bool ** bool: false only for false ** true.
  if (g.type(a).dtype == c10::kBool) return binary(g, "or", a, unary(g, "not", b));
  return binary(g, "power", a, b);
})
TPU_BINARY(eq, cmp_spec, { return compare(g, a, b, "EQ", g.type(a).dtype); })
TPU_BINARY(ne, cmp_spec, { return compare(g, a, b, "NE", g.type(a).dtype); })
TPU_BINARY(lt, cmp_spec, { return compare(g, a, b, "LT", g.type(a).dtype); })
TPU_BINARY(le, cmp_spec, { return compare(g, a, b, "LE", g.type(a).dtype); })
TPU_BINARY(gt, cmp_spec, { return compare(g, a, b, "GT", g.type(a).dtype); })
TPU_BINARY(ge, cmp_spec, { return compare(g, a, b, "GE", g.type(a).dtype); })
TPU_BINARY(logical_and, logical_spec, { return binary(g, "and", a, b); })
TPU_BINARY(logical_or, logical_spec, { return binary(g, "or", a, b); })
TPU_BINARY(logical_xor, logical_spec, { return binary(g, "xor", a, b); })
TPU_BINARY(bitwise_and, arith_spec, { return binary(g, "and", a, b); })
TPU_BINARY(bitwise_or, arith_spec, { return binary(g, "or", a, b); })
TPU_BINARY(bitwise_xor, arith_spec, { return binary(g, "xor", a, b); })
TPU_BINARY(sigmoid_backward, arith_spec, {
  // a = grad, b = sigmoid output: grad * conj(y * (1 - y)) (conj: complex gradients are conjugate Wirtinger)
  return binary(g, "multiply", a, conj(g, binary(g, "multiply", b, binary(g, "subtract", constant(g, 1, g.type(b).dtype, g.type(b).shape), b))));
})
TPU_BINARY(tanh_backward, arith_spec, {
  // a = grad, b = tanh output: grad * conj(1 - y^2)
  return binary(g, "multiply", a, conj(g, binary(g, "subtract", constant(g, 1, g.type(b).dtype, g.type(b).shape), binary(g, "multiply", b, b))));
})
TPU_BINARY(silu_backward, arith_spec, {
  // a = grad, b = input: grad * s * (1 + x * (1 - s))
  auto t = g.type(b);
  Value one = constant(g, 1, t.dtype, t.shape);
  Value s = unary(g, "logistic", b);
  return binary(g, "multiply", a, binary(g, "multiply", s, binary(g, "add", one, binary(g, "multiply", b, binary(g, "subtract", one, s)))));
})

TPU_BINARY(atan2, div_spec, { return binary(g, "atan2", a, b); })
TPU_BINARY(fmod, arith_spec, { return binary(g, "remainder", a, b); })
TPU_BINARY(remainder, arith_spec, { return python_remainder(g, a, b); })
TPU_BINARY(floor_divide, arith_spec, { return floor_divide_values(g, a, b); })
TPU_BINARY(hypot, arith_spec, { return unary(g, "sqrt", add(g, mul(g, a, a), mul(g, b, b))); })
TPU_BINARY(copysign, div_spec, {
  Value m = unary(g, "abs", a);
  return select(g, sign_bit(g, b), unary(g, "negate", m), m);
})
TPU_BINARY(nextafter, bits_spec, { return chlo(g, "next_after", a, b); })
TPU_BINARY(xlogy, div_spec, {
  Value r = select(g, is_zero(g, a), constant_like(g, a, 0), mul(g, a, unary(g, "log", b)));
  return select(g, is_nan(g, b), b, r);
})
TPU_BINARY(logaddexp, arith_spec, { return log_add_exp(g, a, b); })
TPU_BINARY(logaddexp2, arith_spec, {
  Value m = max_propagating_nan(g, a, b);
  Value e = binary(g, "power", constant_like(g, a, 2), unary(g, "negate", unary(g, "abs", sub(g, a, b))));
  Value r = add(g, m, mul(g, unary(g, "log_plus_one", e), constant_like(g, a, 1.0 / M_LN2)));
  Value same_inf = binary(g, "and", compare(g, a, b, "EQ", g.type(a).dtype),
                          compare(g, unary(g, "abs", a), constant_like(g, a, INFINITY), "EQ", g.type(a).dtype));
  return select(g, same_inf, a, r);
})
TPU_BINARY(fmax, ordered_spec, {
  if (!is_float(g.type(a).dtype)) return binary(g, "maximum", a, b);
  return select(g, is_nan(g, a), b, select(g, is_nan(g, b), a, binary(g, "maximum", a, b)));
})
TPU_BINARY(fmin, ordered_spec, {
  if (!is_float(g.type(a).dtype)) return binary(g, "minimum", a, b);
  return select(g, is_nan(g, a), b, select(g, is_nan(g, b), a, binary(g, "minimum", a, b)));
})
// Shift counts outside [0, bits) give 0 (left) or the sign fill (right), as
// XLA reads counts as unsigned.
TPU_BINARY(bitwise_left_shift, arith_spec, { return binary(g, "shift_left", a, b); })
TPU_BINARY(bitwise_right_shift, arith_spec, {
  return binary(g, is_signed_int(g.type(a).dtype) ? "shift_right_arithmetic" : "shift_right_logical", a, b);
})
TPU_BINARY(gcd, integer_spec, { return gcd_values(g, a, b); })
TPU_BINARY(lcm, integer_spec, {
  Value d = gcd_values(g, a, b);
  Value zero = constant_like(g, d, 0);
  Value safe = select(g, compare(g, d, zero, "EQ", g.type(d).dtype), constant_like(g, d, 1), d);
  Value r = unary(g, "abs", mul(g, div(g, a, safe), b));
  return select(g, compare(g, d, zero, "EQ", g.type(d).dtype), zero, r);
})
TPU_BINARY(heaviside, heaviside_spec, {
  return select(g, is_zero(g, a), b, convert(g, compare(g, a, constant_like(g, a, 0), "GT", g.type(a).dtype), g.type(a).dtype));
})
TPU_BINARY(special_xlog1py, div_spec, {
  Value r = select(g, is_zero(g, a), constant_like(g, a, 0), mul(g, a, unary(g, "log_plus_one", b)));
  return select(g, is_nan(g, b), b, r);
})
TPU_BINARY(special_zeta, div_spec, {
  // The Hurwitz zeta's poles at q = 0, -1, -2, ... are inf for x > 1 (CHLO gives NaN).
  Value pole = binary(g, "and", compare(g, a, constant_like(g, a, 1), "GT", g.type(a).dtype),
                      binary(g, "and", compare(g, b, constant_like(g, b, 0), "LE", g.type(b).dtype),
                             compare(g, b, unary(g, "floor", b), "EQ", g.type(b).dtype)));
  Value r = select(g, pole, constant_like(g, a, INFINITY), chlo(g, "zeta", a, b));
  // x < 1 is NaN and x == 1 the pole, whatever q (the CPU's order of checks).
  r = select(g, compare(g, a, constant_like(g, a, 1), "LT", g.type(a).dtype), constant_like(g, a, NAN), r);
  return select(g, compare(g, a, constant_like(g, a, 1), "EQ", g.type(a).dtype), constant_like(g, a, INFINITY), r);
})
// Orthogonal polynomials P_n(x), n truncated to an integer.
TPU_BINARY(special_chebyshev_polynomial_t, div_spec, { return special::polynomial(g, special::Polynomial::ChebyshevT, a, b); })
TPU_BINARY(special_chebyshev_polynomial_u, div_spec, { return special::polynomial(g, special::Polynomial::ChebyshevU, a, b); })
TPU_BINARY(special_chebyshev_polynomial_v, div_spec, { return special::polynomial(g, special::Polynomial::ChebyshevV, a, b); })
TPU_BINARY(special_chebyshev_polynomial_w, div_spec, { return special::polynomial(g, special::Polynomial::ChebyshevW, a, b); })
TPU_BINARY(special_shifted_chebyshev_polynomial_t, div_spec, { return special::polynomial(g, special::Polynomial::ShiftedChebyshevT, a, b); })
TPU_BINARY(special_shifted_chebyshev_polynomial_u, div_spec, { return special::polynomial(g, special::Polynomial::ShiftedChebyshevU, a, b); })
TPU_BINARY(special_shifted_chebyshev_polynomial_v, div_spec, { return special::polynomial(g, special::Polynomial::ShiftedChebyshevV, a, b); })
TPU_BINARY(special_shifted_chebyshev_polynomial_w, div_spec, { return special::polynomial(g, special::Polynomial::ShiftedChebyshevW, a, b); })
TPU_BINARY(special_hermite_polynomial_h, div_spec, { return special::polynomial(g, special::Polynomial::HermiteH, a, b); })
TPU_BINARY(special_hermite_polynomial_he, div_spec, { return special::polynomial(g, special::Polynomial::HermiteHe, a, b); })
TPU_BINARY(special_laguerre_polynomial_l, div_spec, { return special::polynomial(g, special::Polynomial::LaguerreL, a, b); })
TPU_BINARY(special_legendre_polynomial_p, div_spec, { return special::polynomial(g, special::Polynomial::LegendreP, a, b); })
TPU_BINARY(clamp_min_tensor, arith_spec, { return max_propagating_nan(g, a, b); })
TPU_BINARY(clamp_max_tensor, arith_spec, { return min_propagating_nan(g, a, b); })
#undef TPU_BINARY

// Tensor-vs-Scalar comparisons: the scalar becomes a 0-d runtime input.
#define TPU_SCALAR_CMP(name)                                                                      \
  at::Tensor name##_scalar(Dest d, const at::Tensor& self, const at::Scalar& other) {             \
    return name(d, self, at::scalar_tensor(other, at::TensorOptions().dtype(at::result_type(self, other)))); \
  }
TPU_SCALAR_CMP(eq)
TPU_SCALAR_CMP(ne)
TPU_SCALAR_CMP(lt)
TPU_SCALAR_CMP(le)
TPU_SCALAR_CMP(gt)
TPU_SCALAR_CMP(ge)
#undef TPU_SCALAR_CMP

namespace {

Value pow_scalar_lower(Op& op, Value x, const at::Scalar& e) {
  Graph& g = op.g();
  if (e.equal(1)) return x;
  if (g.type(x).dtype == c10::kBool) return e.equal(0) ? constant(g, true, c10::kBool, g.type(x).shape) : x;
  if (e.equal(2)) return binary(g, "multiply", x, x);
  if (e.equal(3)) return binary(g, "multiply", binary(g, "multiply", x, x), x);
  if (e.equal(0.5) && is_float(g.type(x).dtype)) return unary(g, "sqrt", x);
  if (e.equal(-1) && is_float(g.type(x).dtype))
    return binary(g, "divide", constant(g, 1, g.type(x).dtype, g.type(x).shape), x);
  return binary(g, "power", x, broadcast_to(g, op.scalar(e, g.type(x).dtype), g.type(x).shape));
}
Spec pow_scalar_spec(const char* name, const at::Tensor& self, const at::Scalar& e) {
  auto rt = at::result_type(self, e);
  return {name, rt, rt};
}
}  // namespace

at::Tensor pow_tensor_scalar(Dest d, const at::Tensor& self, const at::Scalar& exponent) {
  return elementwise(pow_scalar_spec(d.form_name("aten::pow", "aten::pow_", "aten::pow.out"), self, exponent), {self},
                     [&](Op& op, const std::vector<Value>& v) { return pow_scalar_lower(op, v[0], exponent); }, d);
}

namespace {

// PyTorch's unary_op kernels: the result, and an out= tensor, keep the input's dtype.
Spec same_spec(const char* name, const at::Tensor& t) {
  return {name, t.scalar_type(), t.scalar_type(), false, /*out_same_dtype=*/true};
}

// The error a CPU or CUDA kernel gives for a dtype it has no code for.
void check_dtype_implemented(bool implemented, const char* kernel, c10::ScalarType dtype) {
  TORCH_CHECK_NOT_IMPLEMENTED(implemented, "\"", kernel, "_tpu\" not implemented for '", c10::toString(dtype), "'");
}
void check_real_rounding(const char* name, c10::ScalarType dtype) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(dtype), name, " is not supported for complex inputs");
  check_dtype_implemented(dtype != c10::kBool, name, dtype);
}
Spec float_spec(const char* name, const at::Tensor& t) {
  auto dt = float_of(t.scalar_type());
  return {name, dt, dt};
}
Spec bool_spec(const char* name, const at::Tensor&) { return {name, c10::kBool, c10::kBool}; }
// Ops whose result is real for complex inputs (abs, angle).
Spec real_result_spec(const char* name, const at::Tensor& t) {
  TORCH_CHECK(!(t.is_complex() && std::string(name) == "aten::abs_"), "In-place abs is not supported for complex tensors.");
  auto dt = std::string(name).rfind("aten::angle", 0) == 0 ? float_of(t.scalar_type()) : t.scalar_type();
  return {name, dt, c10::toRealValueType(dt)};
}
Spec bool_result_spec(const char* name, const at::Tensor& t) { return {name, t.scalar_type(), c10::kBool}; }
}  // namespace

#define TPU_UNARY(name, spec_fn, body)                                                       \
  static Value name##_lower(Op& op, const std::vector<Value>& v) {                           \
    Graph& g = op.g();                                                                       \
    Value x = v[0];                                                                          \
    body                                                                                     \
  }                                                                                          \
  at::Tensor name(Dest d, const at::Tensor& self) {                                          \
    const char* op_name = d.form_name("aten::" #name, "aten::" #name "_", "aten::" #name ".out"); \
    return elementwise(spec_fn(op_name, self), {self}, name##_lower, d);                     \
  }

TPU_UNARY(neg, same_spec, {
  TORCH_CHECK(g.type(x).dtype != c10::kBool, "Negation, the `-` operator, on a bool tensor is not supported. "
              "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  return unary(g, "negate", x);
})
TPU_UNARY(abs, real_result_spec, {
  auto t = g.type(x);
  if (t.dtype == c10::kBool) return x;
  return magnitude(g, x);
})
TPU_UNARY(exp, float_spec, { return unary(g, "exponential", x); })
TPU_UNARY(log, float_spec, { return unary(g, "log", x); })
TPU_UNARY(sqrt, float_spec, { return unary(g, "sqrt", x); })
TPU_UNARY(rsqrt, float_spec, { return unary(g, "rsqrt", x); })
TPU_UNARY(tanh, float_spec, { return unary(g, "tanh", x); })
TPU_UNARY(sigmoid, float_spec, { return unary(g, "logistic", x); })
TPU_UNARY(sin, float_spec, { return unary(g, "sine", x); })
TPU_UNARY(cos, float_spec, { return unary(g, "cosine", x); })
TPU_UNARY(reciprocal, float_spec, {
  return binary(g, "divide", constant(g, 1, g.type(x).dtype, g.type(x).shape), x);
})
TPU_UNARY(logical_not, bool_spec, { return unary(g, "not", x); })
TPU_UNARY(bitwise_not, same_spec, {
  check_dtype_implemented(!c10::isComplexType(g.type(x).dtype), "bitwise_not", g.type(x).dtype);
  TORCH_CHECK(!is_float(g.type(x).dtype), "bitwise_not is only supported for integer and boolean tensors");
  return unary(g, "not", x);
})
TPU_UNARY(floor, same_spec, {
  check_real_rounding("floor", g.type(x).dtype);
  return is_float(g.type(x).dtype) ? unary(g, "floor", x) : x;
})
TPU_UNARY(ceil, same_spec, {
  check_real_rounding("ceil", g.type(x).dtype);
  return is_float(g.type(x).dtype) ? unary(g, "ceil", x) : x;
})
TPU_UNARY(round, same_spec, {
  auto dt = g.type(x).dtype;
  check_dtype_implemented(dt != c10::kBool && !c10::isComplexType(dt), "round", dt);
  return is_float(dt) ? unary(g, "round_nearest_even", x) : x;
})
TPU_UNARY(trunc, same_spec, {
  check_real_rounding("trunc", g.type(x).dtype);
  if (!is_float(g.type(x).dtype)) return x;
  return binary(g, "multiply", unary(g, "sign", x), unary(g, "floor", unary(g, "abs", x)));
})
TPU_UNARY(sign, same_spec, {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(g.type(x).dtype), "Unlike NumPy, torch.sign is not intended to support complex "
              "numbers. Please use torch.sgn instead.");
  return real_sign(g, x);
})
// z / |z| (0 at 0) for complex z; sign(x) for real x.
TPU_UNARY(sgn, same_spec, {
  auto t = g.type(x);
  if (!c10::isComplexType(t.dtype)) return real_sign(g, x);
  Value r = magnitude(g, x);
  Value as_complex = make_complex(g, r, constant_like(g, r, 0));
  return select(g, is_zero(g, r), constant_like(g, x, 0), div(g, x, as_complex));
})
TPU_UNARY(conj_physical, same_spec, { return conj(g, x); })
TPU_UNARY(erf, float_spec, { return chlo(g, "erf", x); })
TPU_UNARY(log1p, float_spec, { return unary(g, "log_plus_one", x); })
TPU_UNARY(expm1, float_spec, { return unary(g, "exponential_minus_one", x); })
TPU_UNARY(silu, float_spec, { return binary(g, "multiply", x, unary(g, "logistic", x)); })
TPU_UNARY(tan, float_spec, { return chlo(g, "tan", x); })
TPU_UNARY(asin, float_spec, { return chlo(g, "asin", x); })
TPU_UNARY(acos, float_spec, { return chlo(g, "acos", x); })
TPU_UNARY(atan, float_spec, { return chlo(g, "atan", x); })
TPU_UNARY(sinh, float_spec, { return chlo(g, "sinh", x); })
TPU_UNARY(cosh, float_spec, { return chlo(g, "cosh", x); })
TPU_UNARY(asinh, float_spec, { return chlo(g, "asinh", x); })
TPU_UNARY(acosh, float_spec, { return chlo(g, "acosh", x); })
TPU_UNARY(atanh, float_spec, { return chlo(g, "atanh", x); })
TPU_UNARY(erfc, float_spec, { return chlo(g, "erfc", x); })
TPU_UNARY(erfinv, float_spec, { return chlo(g, "erf_inv", x); })
TPU_UNARY(lgamma, float_spec, { return chlo(g, "lgamma", x); })
TPU_UNARY(digamma, float_spec, {
  // PyTorch: digamma(+-0) = -+inf (XLA gives NaN).
  Value zero_pole = select(g, sign_bit(g, x), constant_like(g, x, INFINITY), constant_like(g, x, -INFINITY));
  return select(g, is_zero(g, x), zero_pole, chlo(g, "digamma", x));
})
TPU_UNARY(exp2, float_spec, { return binary(g, "power", constant_like(g, x, 2), x); })
TPU_UNARY(log2, float_spec, { return mul(g, unary(g, "log", x), constant_like(g, x, 1.0 / M_LN2)); })
TPU_UNARY(log10, float_spec, { return mul(g, unary(g, "log", x), constant_like(g, x, 1.0 / M_LN10)); })
TPU_UNARY(sinc, float_spec, {
  Value px = mul(g, x, constant_like(g, x, M_PI));
  return select(g, is_zero(g, x), constant_like(g, x, 1), div(g, unary(g, "sine", px), px));
})
TPU_UNARY(frac, same_spec, {
  check_dtype_implemented(is_float(g.type(x).dtype), "frac", g.type(x).dtype);
  return sub(g, x, mul(g, unary(g, "sign", x), unary(g, "floor", unary(g, "abs", x))));
})
TPU_UNARY(signbit, bool_result_spec, { return sign_bit(g, x); })
TPU_UNARY(isposinf, bool_result_spec, {
  if (!is_float(g.type(x).dtype)) return constant(g, false, c10::kBool, g.type(x).shape);
  return compare(g, x, constant_like(g, x, INFINITY), "EQ", g.type(x).dtype);
})
TPU_UNARY(isneginf, bool_result_spec, {
  if (!is_float(g.type(x).dtype)) return constant(g, false, c10::kBool, g.type(x).shape);
  return compare(g, x, constant_like(g, x, -INFINITY), "EQ", g.type(x).dtype);
})
TPU_UNARY(angle, real_result_spec, {
  auto t = g.type(x);
  if (c10::isComplexType(t.dtype)) {
    return binary(g, "atan2", imag_part(g, x), real_part(g, x));
  }
  // Real inputs: 0 for x >= 0, pi for x < 0, NaN stays NaN.
  Value r = select(g, is_negative(g, x), constant_like(g, x, M_PI), constant_like(g, x, 0));
  return select(g, is_nan(g, x), x, r);
})
TPU_UNARY(special_entr, float_spec, {
  auto dt = g.type(x).dtype;
  Value r = unary(g, "negate", mul(g, x, unary(g, "log", x)));
  r = select(g, is_zero(g, x), constant_like(g, x, 0), r);
  r = select(g, compare(g, x, constant_like(g, x, 0), "LT", dt), constant_like(g, x, -INFINITY), r);
  return select(g, is_nan(g, x), x, r);
})
TPU_UNARY(special_i1e, float_spec, { return chlo(g, "bessel_i1e", x); })
TPU_UNARY(i0, float_spec, { return special::i0(g, x); })
TPU_UNARY(special_i0e, float_spec, { return special::i0e(g, x); })
TPU_UNARY(special_i1, float_spec, { return special::i1(g, x); })
TPU_UNARY(special_ndtri, float_spec, { return special::ndtri(g, x); })
TPU_UNARY(special_log_ndtr, float_spec, { return special::log_ndtr(g, x); })
TPU_UNARY(special_erfcx, float_spec, { return special::erfcx(g, x); })
TPU_UNARY(special_bessel_j0, float_spec, { return special::bessel_j0(g, x); })
TPU_UNARY(special_bessel_j1, float_spec, { return special::bessel_j1(g, x); })
TPU_UNARY(special_bessel_y0, float_spec, { return special::bessel_y0(g, x); })
TPU_UNARY(special_bessel_y1, float_spec, { return special::bessel_y1(g, x); })
TPU_UNARY(special_modified_bessel_i0, float_spec, { return special::i0(g, x); })
TPU_UNARY(special_modified_bessel_i1, float_spec, { return special::modified_bessel_i1(g, x); })
TPU_UNARY(special_modified_bessel_k0, float_spec, { return special::modified_bessel_k0(g, x, false); })
TPU_UNARY(special_modified_bessel_k1, float_spec, { return special::modified_bessel_k1(g, x, false); })
TPU_UNARY(special_scaled_modified_bessel_k0, float_spec, { return special::modified_bessel_k0(g, x, true); })
TPU_UNARY(special_scaled_modified_bessel_k1, float_spec, { return special::modified_bessel_k1(g, x, true); })
TPU_UNARY(special_spherical_bessel_j0, float_spec, { return special::spherical_bessel_j0(g, x); })
TPU_UNARY(special_airy_ai, float_spec, { return special::airy_ai(g, x); })

namespace {

Value relu_lower(Op& op, const std::vector<Value>& v) {
  Graph& g = op.g();
  const auto& t = g.type(v[0]);
  if (t.dtype == c10::kBool) return v[0];
  Value zero = constant(g, 0, t.dtype, t.shape);
  // select keeps NaN (NaN > 0 is false... so compare x < 0 instead).
  return select(g, compare(g, v[0], zero, "LT", t.dtype), zero, v[0]);
}
}  // namespace

at::Tensor relu(Dest d, const at::Tensor& self) {
  return elementwise(same_spec(d.form_name("aten::relu", "aten::relu_", "aten::relu.out"), self), {self}, relu_lower, d);
}

// The gradient of an activation from the output gradient `dy` and the
// forward input (or result) `x`, both at their common dtype (float32 inside
// for half types, `ct`).
using GradLower = std::function<Value(Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x)>;
at::Tensor activation_grad(const char* name, const at::Tensor& grad, const at::Tensor& x, const GradLower& f) {
  auto rt = at::result_type(grad, x);
  return elementwise({name, rt, rt}, {grad, x},
                     [&](Op& op, const std::vector<Value>& v) { return f(op, op.g(), op.g().type(v[0]).dtype, v[0], v[1]); },
                     Dest());
}

at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& threshold) {
  return activation_grad("aten::threshold_backward", grad, self, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    const auto& t = g.type(dy);
    Value th = broadcast_to(g, op.scalar(threshold, ct), t.shape);
    return select(g, compare(g, x, th, "LE", ct), constant(g, 0, ct, t.shape), dy);
  });
}

at::Tensor where_self(Dest d, const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(cond.scalar_type() == c10::kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              cond.scalar_type());
  auto rt = at::result_type(self, other);
  return elementwise({d.is_new() ? "aten::where" : "aten::where.out", rt, rt}, {cond, self, other},
                     [&](Op& op, const std::vector<Value>& v) {
                       return select(op.g(), convert(op.g(), v[0], c10::kBool), v[1], v[2]);
                     },
                     d);
}

// --------------------------------------------------------------------------
// Ops with scalar parameters: one definition per op serves its functional,
// in-place and out= forms (Dest, aten/op.h).

#define TPU_FORM_NAME(op_name) d.form_name("aten::" op_name, "aten::" op_name "_", "aten::" op_name ".out")

static at::Tensor clamp_impl(const at::Tensor& self, const std::optional<at::Scalar>& min,
                             const std::optional<at::Scalar>& max, Dest d) {
  TORCH_CHECK(min.has_value() || max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  // One promotion over self and both bounds, as PyTorch's clamp does.
  at::native::ResultTypeState state = at::native::update_result_type_state(self, {});
  if (min) state = at::native::update_result_type_state(*min, state);
  if (max) state = at::native::update_result_type_state(*max, state);
  auto rt = at::native::result_type(state);
  TORCH_CHECK(!c10::isComplexType(rt), "clamp is not supported for complex types");
  return elementwise({TPU_FORM_NAME("clamp"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       Shape s = g.type(x).shape;
                       // NaN in x propagates: compare-and-select keeps x where the bound test fails.
                       if (min) {
                         Value lo = broadcast_to(g, op.scalar(*min, ct), s);
                         x = select(g, compare(g, x, lo, "LT", ct), lo, x);
                       }
                       if (max) {
                         Value hi = broadcast_to(g, op.scalar(*max, ct), s);
                         x = select(g, compare(g, x, hi, "GT", ct), hi, x);
                       }
                       return x;
                     },
                     d);
}
at::Tensor clamp(Dest d, const at::Tensor& self, const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  return clamp_impl(self, min, max, d);
}

at::Tensor clamp_tensor(Dest d, const at::Tensor& self, const std::optional<at::Tensor>& min,
                        const std::optional<at::Tensor>& max) {
  TORCH_CHECK(min.has_value() || max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<at::Tensor> ins{self};
  if (min) ins.push_back(*min);
  if (max) ins.push_back(*max);
  auto rt = at::native::result_type(ins);  // one promotion over all, dimensions before 0-d tensors
  bool has_min = min.has_value();
  return elementwise({TPU_FORM_NAME("clamp"), rt, rt}, ins,
                     [&](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       Value x = v[0];
                       if (has_min) x = max_propagating_nan(g, x, v[1]);
                       if (v.size() > (has_min ? 2u : 1u)) x = min_propagating_nan(g, x, v.back());
                       return x;
                     },
                     d);
}
at::Tensor clamp_min(Dest d, const at::Tensor& self, const at::Scalar& min) {
  return clamp_impl(self, min, {}, d);
}
at::Tensor clamp_max(Dest d, const at::Tensor& self, const at::Scalar& max) {
  return clamp_impl(self, {}, max, d);
}

at::Tensor div_mode(Dest d, const at::Tensor& self, const at::Tensor& other, std::optional<c10::string_view> rounding_mode) {
  if (!rounding_mode) {
    return torch_tpu::aten::div(d, self, other);
  }
  bool floor_mode = *rounding_mode == "floor";
  TORCH_CHECK(floor_mode || *rounding_mode == "trunc",
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *rounding_mode, "'");
  auto rt = at::result_type(self, other);
  return elementwise({TPU_FORM_NAME("div"), rt, rt}, {self, other},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       if (floor_mode) return floor_divide_values(g, v[0], v[1]);
                       Value q = div(g, v[0], v[1]);
                       if (!is_float(ct)) return q;  // integer division truncates
                       // Half types: the CPU's vectorized kernel rounds the quotient to the
                       // dtype before truncating it.
                       if (ct != rt) q = convert(g, convert(g, q, rt), ct);
                       return mul(g, unary(g, "sign", q), unary(g, "floor", unary(g, "abs", q)));
                     },
                     d);
}

void check_addcdiv_operands(const at::Tensor& t1, const at::Tensor& t2) {
  TORCH_CHECK(!c10::isIntegralType(t1.scalar_type(), true) || !c10::isIntegralType(t2.scalar_type(), true),
              "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform ",
              "a true division of tensor1 and tensor2.");
}

static at::Tensor addc_impl(bool is_div, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                            const at::Scalar& value, Dest d) {
  if (is_div) check_addcdiv_operands(t1, t2);
  auto rt = at::native::result_type({self, t1, t2});
  const char* name = is_div ? d.form_name("aten::addcdiv", "aten::addcdiv_", "aten::addcdiv.out")
                            : d.form_name("aten::addcmul", "aten::addcmul_", "aten::addcmul.out");
  return elementwise({name, rt, rt}, {self, t1, t2},
                     [&](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       Value q = binary(g, is_div ? "divide" : "multiply", v[1], v[2]);
                       return add(g, v[0], times_scalar(op, q, value));
                     },
                     d);
}
at::Tensor addcmul(Dest d, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  return addc_impl(false, self, t1, t2, value, d);
}
at::Tensor addcdiv(Dest d, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  return addc_impl(true, self, t1, t2, value, d);
}

// lerp: self + weight * (end - self), with PyTorch's two-sided formula for |weight| >= 0.5.
static at::Tensor lerp_impl(const at::Tensor& self, const at::Tensor& end, const at::Tensor* weight_tensor,
                            const at::Scalar& weight_scalar, Dest d) {
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.scalar_type(),
              " for `end` but got dtype ", end.scalar_type());
  auto rt = self.scalar_type();
  std::vector<at::Tensor> ins{self, end};
  if (weight_tensor) {
    TORCH_CHECK(weight_tensor->scalar_type() == rt, "expected dtype ", rt, " for `weight` but got dtype ",
                weight_tensor->scalar_type());
    ins.push_back(*weight_tensor);
  }
  return elementwise({TPU_FORM_NAME("lerp"), rt, rt}, ins,
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value w = weight_tensor ? v[2] : broadcast_to(g, op.scalar(weight_scalar, ct), g.type(v[0]).shape);
                       Value diff = sub(g, v[1], v[0]);
                       Value w_abs = magnitude(g, w);  // real for complex weights
                       Value small = compare(g, w_abs, constant_like(g, w_abs, 0.5), "LT", g.type(w_abs).dtype);
                       Value lo = add(g, v[0], mul(g, w, diff));
                       Value hi = sub(g, v[1], mul(g, diff, sub(g, constant_like(g, w, 1), w)));
                       return select(g, small, lo, hi);
                     },
                     d);
}
at::Tensor lerp_scalar(Dest d, const at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
  return lerp_impl(self, end, nullptr, weight, d);
}
at::Tensor lerp_tensor(Dest d, const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  return lerp_impl(self, end, &weight, 0, d);
}

at::Tensor nan_to_num(Dest d, const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  auto rt = self.scalar_type();
  return elementwise({TPU_FORM_NAME("nan_to_num"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       if (!is_float(ct)) return x;
                       auto info_max = rt == c10::kHalf ? 65504.0 : rt == c10::kBFloat16 ? 3.3895313892515355e38
                                       : rt == c10::kDouble ? std::numeric_limits<double>::max()
                                                            : double(std::numeric_limits<float>::max());
                       Value pos_inf = constant_like(g, x, INFINITY), neg_inf = constant_like(g, x, -INFINITY);
                       Value nan_v = broadcast_to(g, op.scalar(nan.value_or(0.0), ct), g.type(x).shape);
                       Value pos_v = broadcast_to(g, op.scalar(posinf.value_or(info_max), ct), g.type(x).shape);
                       Value neg_v = broadcast_to(g, op.scalar(neginf.value_or(-info_max), ct), g.type(x).shape);
                       x = select(g, is_nan(g, x), nan_v, x);
                       x = select(g, compare(g, x, pos_inf, "EQ", ct), pos_v, x);
                       return select(g, compare(g, x, neg_inf, "EQ", ct), neg_v, x);
                     },
                     d);
}

at::Tensor logit(Dest d, const at::Tensor& self, std::optional<double> eps) {
  auto rt = float_of(self.scalar_type());
  return elementwise({TPU_FORM_NAME("logit"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       if (eps) {
                         Value lo = broadcast_to(g, op.scalar(*eps, ct), g.type(x).shape);
                         Value hi = broadcast_to(g, op.scalar(1.0 - *eps, ct), g.type(x).shape);
                         x = select(g, compare(g, x, lo, "LT", ct), lo, select(g, compare(g, x, hi, "GT", ct), hi, x));
                       }
                       return unary(g, "log", div(g, x, sub(g, constant_like(g, x, 1), x)));
                     },
                     d);
}
at::Tensor logit_backward(const at::Tensor& grad_output, const at::Tensor& self, std::optional<double> eps) {
  auto rt = at::result_type(grad_output, self);
  return elementwise({"aten::logit_backward", rt, rt}, {grad_output, self},
                     [&](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       Value x = v[1];
                       Value r = div(g, v[0], mul(g, x, sub(g, constant_like(g, x, 1), x)));
                       // Outside [eps, 1 - eps] the clamped logit is flat (0); without eps, outside [0, 1] NaN.
                       double lo = eps ? *eps : 0.0;
                       Value outside = binary(g, "or", compare(g, x, constant_like(g, x, lo), "LT", g.type(x).dtype),
                                              compare(g, x, constant_like(g, x, 1.0 - lo), "GT", g.type(x).dtype));
                       return select(g, outside, constant_like(g, x, eps ? 0.0 : NAN), r);
                     },
                     Dest());
}

// Activations with parameters: the forward forms and the backward kernel.
at::Tensor hardtanh(Dest d, const at::Tensor& self, const at::Scalar& min, const at::Scalar& max) {
  TORCH_CHECK(self.scalar_type() != c10::kBool, "Bool inputs not supported for hardtanh");
  auto rt = self.scalar_type();
  return elementwise({TPU_FORM_NAME("hardtanh"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       Value lo = broadcast_to(g, op.scalar(min, ct), g.type(x).shape);
                       Value hi = broadcast_to(g, op.scalar(max, ct), g.type(x).shape);
                       return select(g, compare(g, x, lo, "LT", ct), lo, select(g, compare(g, x, hi, "GT", ct), hi, x));
                     },
                     d);
}
at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& min,
                             const at::Scalar& max) {
  return activation_grad("aten::hardtanh_backward", grad, self, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    Value lo = broadcast_to(g, op.scalar(min, ct), g.type(x).shape);
    Value hi = broadcast_to(g, op.scalar(max, ct), g.type(x).shape);
    Value outside = binary(g, "or", compare(g, x, lo, "LE", ct), compare(g, x, hi, "GE", ct));
    return select(g, outside, constant_like(g, x, 0), dy);
  });
}

at::Tensor leaky_relu(Dest d, const at::Tensor& self, const at::Scalar& slope) {
  auto rt = self.scalar_type();
  return elementwise({TPU_FORM_NAME("leaky_relu"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       Value s = broadcast_to(g, op.scalar(slope, ct), g.type(x).shape);
                       return select(g, compare(g, x, constant_like(g, x, 0), "GT", ct), x, mul(g, x, s));
                     },
                     d);
}
at::Tensor leaky_relu_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& slope,
                               bool self_is_result) {
  TORCH_CHECK(!self_is_result || slope.toDouble() >= 0.0, "In-place leakyReLu backward calculation is triggered with a "
              "negative slope which is not supported. This is caused by calling in-place forward function with a "
              "negative slope, please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu backward calculation "
              "with negative slope");
  return activation_grad("aten::leaky_relu_backward", grad, self, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    Value s = broadcast_to(g, op.scalar(slope, ct), g.type(dy).shape);
    return select(g, compare(g, x, constant_like(g, x, 0), "GT", ct), dy, mul(g, dy, s));
  });
}

at::Tensor elu(Dest d, const at::Tensor& self, const at::Scalar& alpha, const at::Scalar& scale,
               const at::Scalar& input_scale) {
  auto rt = self.scalar_type();
  return elementwise({TPU_FORM_NAME("elu"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       auto sh = g.type(x).shape;
                       Value a = broadcast_to(g, op.scalar(alpha, ct), sh);
                       Value s = broadcast_to(g, op.scalar(scale, ct), sh);
                       Value is = broadcast_to(g, op.scalar(input_scale, ct), sh);
                       Value neg = mul(g, a, unary(g, "exponential_minus_one", mul(g, x, is)));
                       return mul(g, s, select(g, compare(g, x, constant_like(g, x, 0), "GT", ct), x, neg));
                     },
                     d);
}
at::Tensor elu_backward(const at::Tensor& grad, const at::Scalar& alpha, const at::Scalar& scale,
                        const at::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result) {
  TORCH_CHECK(!is_result || alpha.toDouble() * scale.toDouble() >= 0, "In-place elu backward calculation is triggered "
              "with a negative slope which is not supported. This is caused by calling in-place forward function with "
              "a negative slope, please call out-of-place version instead.");
  return activation_grad("aten::elu_backward", grad, self_or_result, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    auto sh = g.type(dy).shape;
    Value a = broadcast_to(g, op.scalar(alpha, ct), sh);
    Value s = broadcast_to(g, op.scalar(scale, ct), sh);
    Value is = broadcast_to(g, op.scalar(input_scale, ct), sh);
    Value y = x;
    // d/dx of scale * alpha * (exp(x * is) - 1) is is * (y + scale * alpha) from the result,
    // or is * scale * alpha * exp(x * is) from the input.
    Value neg = is_result ? mul(g, is, add(g, y, mul(g, s, a)))
                          : mul(g, mul(g, is, mul(g, s, a)), unary(g, "exponential", mul(g, y, is)));
    // The result is positive exactly where the input is.
    return mul(g, dy, select(g, compare(g, y, constant_like(g, y, 0), "GT", ct), s, neg));
  });
}

at::Tensor softplus(Dest d, const at::Tensor& self, const at::Scalar& beta, const at::Scalar& threshold) {
  auto rt = self.scalar_type();
  return elementwise({d.form_name("aten::softplus", "aten::softplus", "aten::softplus.out"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       auto sh = g.type(x).shape;
                       Value b = broadcast_to(g, op.scalar(beta, ct), sh);
                       Value t = broadcast_to(g, op.scalar(threshold, ct), sh);
                       Value bx = mul(g, x, b);
                       Value soft = div(g, unary(g, "log_plus_one", unary(g, "exponential", bx)), b);
                       return select(g, compare(g, bx, t, "GT", ct), x, soft);
                     },
                     d);
}
at::Tensor softplus_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& beta,
                             const at::Scalar& threshold) {
  return activation_grad("aten::softplus_backward", grad, self, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    auto sh = g.type(dy).shape;
    Value b = broadcast_to(g, op.scalar(beta, ct), sh);
    Value t = broadcast_to(g, op.scalar(threshold, ct), sh);
    Value bx = mul(g, x, b);
    Value z = unary(g, "exponential", bx);
    Value soft = mul(g, dy, div(g, z, add(g, z, constant_like(g, z, 1))));
    return select(g, compare(g, bx, t, "GT", ct), dy, soft);
  });
}

at::Tensor threshold(Dest d, const at::Tensor& self, const at::Scalar& threshold, const at::Scalar& value) {
  auto rt = self.scalar_type();
  return elementwise({TPU_FORM_NAME("threshold"), rt, rt, false, false, false, /*overlapping_destination_ok=*/true},
                     {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       Value t = broadcast_to(g, op.scalar(threshold, ct), g.type(x).shape);
                       Value val = broadcast_to(g, op.scalar(value, ct), g.type(x).shape);
                       return select(g, compare(g, x, t, "LE", ct), val, x);
                     },
                     d);
}

at::Tensor polygamma(Dest d, int64_t n, const at::Tensor& self) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  if (n == 0) {
    return aten::digamma(d, self);
  }
  auto rt = float_of(self.scalar_type());
  return elementwise({TPU_FORM_NAME("polygamma"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       Value x = v[0];
                       // XLA's polygamma is wrong below about -1; shift x up by m <= 16 with
                       // psi(n, x) = psi(n, x + m) + (-1)^(n+1) n! sum_{k<m} (x + k)^-(n+1).
                       constexpr int kSteps = 16;
                       Value m = binary(g, "minimum", binary(g, "maximum", unary(g, "ceil", unary(g, "negate", x)),
                                                             constant_like(g, x, 0)), constant_like(g, x, kSteps));
                       Value sum = constant_like(g, x, 0);
                       for (int k = 0; k < kSteps; ++k) {
                         Value xk = add(g, x, constant_like(g, x, k));
                         Value term = binary(g, "power", xk, constant_like(g, x, -static_cast<double>(n + 1)));
                         sum = add(g, sum, select(g, compare(g, constant_like(g, x, k), m, "LT", g.type(x).dtype), term,
                                                  constant_like(g, x, 0)));
                       }
                       double factorial = std::tgamma(static_cast<double>(n) + 1.0);
                       Value shifted = chlo(g, "polygamma", constant_like(g, x, static_cast<double>(n)), add(g, x, m));
                       Value r = add(g, shifted, mul(g, sum, constant_like(g, x, (n % 2 ? 1.0 : -1.0) * factorial)));
                       // The poles at 0, -1, -2, ...: (-1)^(n+1) inf, as the CPU's zeta gives.
                       Value pole = binary(g, "and", compare(g, x, constant_like(g, x, 0), "LE", g.type(x).dtype),
                                           compare(g, x, unary(g, "floor", x), "EQ", g.type(x).dtype));
                       return select(g, pole, constant_like(g, x, n % 2 ? INFINITY : -INFINITY), r);
                     },
                     d);
}
// The in-place form takes (self, n) where the others take (n, self).
at::Tensor& polygamma_(at::Tensor& self, int64_t n) {
  polygamma(Dest::in_place(self), n, self);
  return self;
}
#undef TPU_FORM_NAME

// Parameterless activations and their backward kernels.

#define TPU_ACTIVATION_BACKWARD(name, body)                                                          \
  at::Tensor name##_backward(const at::Tensor& grad, const at::Tensor& self) {                        \
    return activation_grad("aten::" #name "_backward", grad, self,                                    \
                           [](Op&, Graph& g, c10::ScalarType, Value dy, Value x) body);               \
  }

TPU_UNARY(hardsigmoid, same_spec, { return hardsigmoid_value(g, x); })
TPU_ACTIVATION_BACKWARD(hardsigmoid, {
  return select(g, in_open_range(g, x, -3, 3), div(g, dy, constant_like(g, dy, 6)), constant_like(g, dy, 0));
})
TPU_UNARY(hardswish, same_spec, { return mul(g, x, hardsigmoid_value(g, x)); })
TPU_ACTIVATION_BACKWARD(hardswish, {
  auto dt = g.type(x).dtype;
  Value mid = mul(g, dy, add(g, div(g, x, constant_like(g, x, 3)), constant_like(g, x, 0.5)));
  Value r = select(g, compare(g, x, constant_like(g, x, 3), "LT", dt), mid, dy);
  return select(g, compare(g, x, constant_like(g, x, -3), "LE", dt), constant_like(g, dy, 0), r);
})
TPU_UNARY(mish, same_spec, { return mul(g, x, unary(g, "tanh", softplus_value(g, x))); })
TPU_ACTIVATION_BACKWARD(mish, {
  Value t = unary(g, "tanh", softplus_value(g, x));
  Value s = unary(g, "logistic", x);
  return mul(g, dy, add(g, t, mul(g, mul(g, x, s), sub(g, constant_like(g, t, 1), mul(g, t, t)))));
})
#undef TPU_ACTIVATION_BACKWARD
#undef TPU_UNARY

std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  at::Tensor out = elementwise(same_spec("aten::log_sigmoid_forward", self), {self},
                               [](Op& op, const std::vector<Value>& v) {
                                 // -softplus(-x)
                                 return unary(op.g(), "negate", softplus_value(op.g(), unary(op.g(), "negate", v[0])));
                               },
                               Dest());
  // The CPU kernel's buffer is scratch for its own backward; ours needs none.
  return {out, at::empty({0}, self.options())};
}
at::Tensor log_sigmoid_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& /*buffer*/) {
  return activation_grad("aten::log_sigmoid_backward", grad, self, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    return mul(g, dy, unary(g, "logistic", unary(g, "negate", x)));
  });
}

static at::Tensor shrink_impl(bool soft, const at::Tensor& self, const at::Scalar& lambd, Dest d) {
  auto rt = self.scalar_type();
  const char* name = soft ? d.form_name("aten::softshrink", "", "aten::softshrink.out")
                          : d.form_name("aten::hardshrink", "", "aten::hardshrink.out");
  return elementwise({name, rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       Value l = broadcast_to(g, op.scalar(lambd, ct), g.type(x).shape);
                       Value above = compare(g, x, l, "GT", ct);
                       Value below = compare(g, x, unary(g, "negate", l), "LT", ct);
                       Value zero = constant_like(g, x, 0);
                       // Zero only inside [-lambda, lambda], so a NaN stays NaN as on the CPU.
                       if (!soft) return select(g, binary(g, "or", above, below), x, select(g, is_nan(g, x), x, zero));
                       return select(g, above, sub(g, x, l), select(g, below, add(g, x, l), mul(g, x, zero)));
                     },
                     d);
}
static at::Tensor shrink_backward(bool soft, const at::Tensor& grad, const at::Tensor& self, const at::Scalar& lambd) {
  return activation_grad(soft ? "aten::softshrink_backward" : "aten::hardshrink_backward", grad, self, [&](Op& op, Graph& g, c10::ScalarType ct, Value dy, Value x) {
    Value l = broadcast_to(g, op.scalar(lambd, ct), g.type(x).shape);
    Value inside = binary(g, "and", compare(g, x, unary(g, "negate", l), "GE", ct),
                          compare(g, x, l, "LE", ct));
    return select(g, inside, constant_like(g, dy, 0), dy);
  });
}
at::Tensor hardshrink(Dest d, const at::Tensor& self, const at::Scalar& lambd) {
  return shrink_impl(false, self, lambd, d);
}
at::Tensor hardshrink_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& lambd) {
  return shrink_backward(false, grad, self, lambd);
}
at::Tensor softshrink(Dest d, const at::Tensor& self, const at::Scalar& lambd) {
  return shrink_impl(true, self, lambd, d);
}
at::Tensor softshrink_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& lambd) {
  return shrink_backward(true, grad, self, lambd);
}

at::Tensor isnan(const at::Tensor& self) {
  return elementwise(bool_result_spec("aten::isnan", self), {self},
                     [](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       auto dt = g.type(v[0]).dtype;
                       if (!is_float(dt) && !c10::isComplexType(dt)) return constant(g, false, c10::kBool, g.type(v[0]).shape);
                       return is_nan(g, v[0]);  // complex: either part
                     },
                     Dest());
}

namespace {

Spec complex_parts_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto dt = a.scalar_type();
  TORCH_CHECK(dt == c10::kFloat || dt == c10::kDouble || dt == c10::kHalf, "Expected both inputs to be Half, Float or "
              "Double tensors but got ", a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(b.scalar_type() == dt, "Expected object of scalar type ", dt, " but got scalar type ", b.scalar_type(),
              " for second argument");
  return {name, dt, c10::toComplexType(dt)};
}
}  // namespace

// The out tensor must be of the complex dtype itself (PyTorch checks, not casts).
Spec complex_parts_out_spec(const char* name, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  Spec spec = complex_parts_spec(name, a, b);
  TORCH_CHECK(out.scalar_type() == spec.result, "Expected object of scalar type ", spec.result,
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
  return spec;
}

at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  elementwise(complex_parts_out_spec("aten::complex.out", real, imag, out), {real, imag},
              [](Op& op, const std::vector<Value>& v) { return make_complex(op.g(), v[0], v[1]); }, Dest::out(out));
  return out;
}

at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  elementwise(complex_parts_out_spec("aten::polar.out", abs, angle, out), {abs, angle},
              [](Op& op, const std::vector<Value>& v) {
                Graph& g = op.g();
                return make_complex(g, mul(g, v[0], unary(g, "cosine", v[1])), mul(g, v[0], unary(g, "sine", v[1])));
              },
              Dest::out(out));
  return out;
}

at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return aten::sub(Dest(), other, self, alpha);
}

at::Tensor round_decimals(Dest d, const at::Tensor& self, int64_t decimals) {
  auto rt = self.scalar_type();
  return elementwise({d.form_name("aten::round", "aten::round_", "aten::round.out"), rt, rt}, {self},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value x = v[0];
                       TORCH_CHECK(is_float(ct), "round_cpu not implemented for '", ct, "' with decimals");
                       double ten_pow = std::pow(10.0, static_cast<double>(std::abs(decimals)));
                       Value p = constant_like(g, x, ten_pow);
                       if (decimals >= 0) return div(g, unary(g, "round_nearest_even", mul(g, x, p)), p);
                       return mul(g, unary(g, "round_nearest_even", div(g, x, p)), p);
                     },
                     d);
}

at::Tensor pow_scalar_base(Dest d, const at::Scalar& base, const at::Tensor& exponent) {
  auto rt = at::result_type(base, exponent);
  return elementwise({d.is_new() ? "aten::pow" : "aten::pow.out", rt, rt}, {exponent},
                     [&](Op& op, const std::vector<Value>& v) {
                       const auto ct = op.g().type(v[0]).dtype;  // float32 for half types
                       Graph& g = op.g();
                       Value b = broadcast_to(g, op.scalar(base, ct), g.type(v[0]).shape);
                       return binary(g, "power", b, v[0]);
                     },
                     d);
}

// Evenly spaced values, with the CPU kernels' arithmetic. The endpoints in the
// result dtype (integers truncate) and the step are computed on the host exactly
// as there (linspace steps in the result dtype, in double for integers;
// logspace takes the endpoints' difference in the result dtype and steps in
// double) and enter as runtime scalars; the device counts up from start for the
// first half and down from end for the second, each half-type operation rounded.
static at::Tensor& spaced_out(const char* name, const at::Scalar& start, const at::Scalar& end, int64_t steps,
                              std::optional<double> log_base, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  // As the CPU: an out tensor of `steps` elements keeps its shape and is filled in order.
  if (out.numel() != steps) out.resize_({steps});
  at::assert_no_internal_overlap(out);  // an expanded out= would receive several values per element
  if (steps == 0) return out;
  auto dt = out.scalar_type();
  if (c10::isComplexType(dt)) {
    // The CPU steps by a complex step with a real index: the real and the
    // imaginary parts are two linspaces; logspace raises base to their sum.
    auto part_type = c10::toRealValueType(dt);
    auto a = start.toComplexDouble(), b = end.toComplexDouble();
    at::Tensor re = at::empty({steps}, out.options().dtype(part_type));
    at::Tensor im = at::empty({steps}, out.options().dtype(part_type));
    spaced_out("aten::linspace", a.real(), b.real(), steps, std::nullopt, re);
    spaced_out("aten::linspace", a.imag(), b.imag(), steps, std::nullopt, im);
    at::Tensor z = at::complex(re, im);
    return out.copy_((log_base ? at::pow(*log_base, z) : z).view(out.sizes()));
  }
  double lo_value = 0, hi_value = 0, step_value = 0;
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, dt, "spaced_out", [&] {
    scalar_t lo = start.to<scalar_t>(), hi = end.to<scalar_t>();
    lo_value = static_cast<double>(lo);
    hi_value = static_cast<double>(hi);
    if (steps < 2) {
      if (log_base) lo_value = start.to<double>();  // the CPU fills base^start, start unconverted
      return;
    }
    if (log_base) {
      step_value = static_cast<double>(hi - lo) / (steps - 1);
    } else {
      using step_t = std::conditional_t<std::is_integral_v<scalar_t>, double, scalar_t>;
      step_value = static_cast<double>((static_cast<step_t>(hi) - static_cast<step_t>(lo)) / (steps - 1));
    }
  });
  bool half = (dt == c10::kHalf || dt == c10::kBFloat16) && !log_base;
  auto ct = is_float(dt) && !log_base ? accumulate_type(dt) : c10::kDouble;
  Op op(name);
  Graph& g = op.g();
  Shape s{steps};
  auto rounded = [&](Value v) { return half ? convert(g, convert(g, v, dt), ct) : v; };
  auto c = [&](double v) { return constant(g, v, ct, s); };
  Value lo = broadcast_to(g, op.scalar(lo_value, ct), s);
  Value r = lo;
  if (steps > 1) {
    Value hi = broadcast_to(g, op.scalar(hi_value, ct), s);
    Value step = broadcast_to(g, op.scalar(step_value, ct), s);
    Value i = iota(g, ct, s, 0);
    Value up = rounded(add(g, lo, rounded(mul(g, step, i))));
    Value down = rounded(sub(g, hi, rounded(mul(g, step, sub(g, c(static_cast<double>(steps - 1)), i)))));
    r = select(g, compare(g, i, c(static_cast<double>(steps / 2)), "LT", ct), up, down);
  }
  if (log_base) r = binary(g, "power", c(*log_base), r);
  op.write(out, reshape(g, convert(g, r, dt), shape_of(out)));
  op.run();
  return out;
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, at::Tensor& out) {
  return spaced_out("aten::linspace", start, end, steps, std::nullopt, out);
}
at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base, at::Tensor& out) {
  return spaced_out("aten::logspace", start, end, steps, base, out);
}

at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, at::Tensor& out) {
  // As the CPU kernel: integer results take the bounds and step truncated to
  // integers (int64 also counts its length with them), others count in double.
  bool integral = c10::isIntegralType(out.scalar_type(), true);
  double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  if (integral) {
    s = static_cast<double>(start.toLong());
    e = static_cast<double>(end.toLong());
    st = static_cast<double>(step.toLong());
  }
  TORCH_CHECK(st != 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", start, " -> ", end);
  TORCH_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "upper bound and larger bound inconsistent with step sign");
  double size_d = std::ceil((end.toDouble() - start.toDouble()) / step.toDouble());
  TORCH_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
              "invalid size, possible overflow?");
  int64_t n;
  if (out.scalar_type() == c10::kLong) {
    int64_t s64 = start.toLong(), e64 = end.toLong(), st64 = step.toLong();
    n = (e64 - s64 + st64 - (st64 > 0 ? 1 : -1)) / st64;
  } else {
    n = static_cast<int64_t>(size_d);
  }
  // As the CPU: an out tensor of n elements keeps its shape and is filled in order.
  if (out.numel() != n) {
    if (out.numel() > 0) {
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", out.numel(),
                 " which does not match the computed number of elements ", n,
                 ". Note that this may occur as a result of rounding error. The out tensor will be resized to a "
                 "tensor of shape (", n, ",).");
    }
    out.resize_({n});
  }
  if (n == 0) return out;
  Op op("aten::arange");
  Graph& g = op.g();
  auto acc = integral ? c10::kLong : c10::kDouble;
  Value i = iota(g, acc, {n}, 0);
  Value v = binary(g, "add", broadcast_to(g, op.scalar(start, acc), {n}),
                   binary(g, "multiply", i, broadcast_to(g, op.scalar(step, acc), {n})));
  op.write(out, reshape(g, v, shape_of(out)));
  op.run();
  return out;
}

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  at::native::resize_output(out, {n, m});
  if (n == 0 || m == 0) return out;
  Op op("aten::eye");
  Graph& g = op.g();
  Shape s{n, m};
  Value diag = compare(g, iota(g, c10::kLong, s, 0), iota(g, c10::kLong, s, 1), "EQ", c10::kLong);
  op.write(out, convert(g, diag, out.scalar_type()));
  op.run();
  return out;
}
at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

// PReLU on an already broadcastable weight (the prelu composite reshapes it).
at::Tensor _prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  return elementwise(arith_spec("aten::_prelu_kernel", self, weight), {self, weight},
                     [](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       return select(g, compare(g, v[0], constant_like(g, v[0], 0), "GT", g.type(v[0]).dtype), v[0],
                                     mul(g, v[1], v[0]));
                     },
                     Dest());
}
// Both gradients have the broadcast shape and the input's memory format, as on
// the CPU; autograd sums the weight's.
std::tuple<at::Tensor, at::Tensor> _prelu_kernel_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                                          const at::Tensor& weight) {
  Shape shape = broadcast_shape({grad_output, self, weight});
  Op op("aten::_prelu_kernel_backward");
  Graph& g = op.g();
  auto acc = accumulate_type(self.scalar_type());
  auto in = [&](const at::Tensor& t) { return broadcast_to(g, convert(g, op.in(t), acc), shape); };
  Value dy = in(grad_output), x = in(self), w = in(weight);
  Value positive = compare(g, x, constant_like(g, x, 0), "GT", acc);
  auto format = (Shape(self.sizes().begin(), self.sizes().end()) == shape ? self : grad_output).suggest_memory_format();
  at::Tensor grad_self = op.result(convert(g, select(g, positive, dy, mul(g, w, dy)), self.scalar_type()), format);
  at::Tensor grad_weight = op.result(
      convert(g, select(g, positive, constant_like(g, x, 0), mul(g, x, dy)), weight.scalar_type()), format);
  op.run();
  return {grad_self, grad_weight};
}

// x = mantissa * 2^exponent with 0.5 <= |mantissa| < 1, read from the bits of
// float32 (half types widen to it) or float64; zero, inf and NaN keep x with
// exponent 0.
std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes, but got ", self.scalar_type());
  TORCH_CHECK(mantissa.scalar_type() == self.scalar_type(), "torch.frexp() expects mantissa to have dtype ",
              self.scalar_type(), " but got ", mantissa.scalar_type());
  TORCH_CHECK(exponent.scalar_type() == at::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.scalar_type());
  Shape shape = shape_of(self);
  at::native::resize_output(mantissa, self.sizes());
  at::native::resize_output(exponent, self.sizes());
  Op op("aten::frexp.Tensor_out");
  Graph& g = op.g();
  const bool wide = self.scalar_type() == c10::kDouble;
  const auto ft = wide ? c10::kDouble : c10::kFloat, it = wide ? c10::kLong : c10::kInt;
  // Total bits, stored mantissa bits, exponent bias.
  const int64_t bits_total = wide ? 64 : 32, stored = wide ? 52 : 23, bias = wide ? 1023 : 127;
  Value x = convert(g, op.in(self), ft);
  auto ic = [&](int64_t v) { return constant(g, v, it, shape); };
  // Integer arithmetic only: the backend may flush subnormal floats to zero.
  Value bits = bitcast(g, x, it);
  Value biased = binary(g, "and", binary(g, "shift_right_logical", bits, ic(stored)), ic(2 * bias + 1));
  Value fraction = binary(g, "and", bits, ic((int64_t{1} << stored) - 1));
  Value subnormal = compare(g, biased, ic(0), "EQ", it);
  // Zeros, infinities and NaNs keep their value.
  Value keep = binary(g, "or", compare(g, binary(g, "or", biased, fraction), ic(0), "EQ", it),
                      compare(g, biased, ic(2 * bias + 1), "EQ", it));
  // A subnormal's leading one (at bit width - 1 - zeros) moves up to the implicit bit's place.
  Value zeros = unary(g, "count_leading_zeros", fraction);
  Value e = select(g, subnormal, sub(g, ic(bits_total - bias - stored + 1), zeros), sub(g, biased, ic(bias - 1)));
  fraction = select(g, subnormal,
                    binary(g, "and", binary(g, "shift_left", fraction, sub(g, zeros, ic(bits_total - 1 - stored))),
                           ic((int64_t{1} << stored) - 1)),
                    fraction);
  Value sign = binary(g, "and", bits, ic(wide ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min()));
  Value m = bitcast(g, binary(g, "or", binary(g, "or", sign, fraction), ic((bias - 1) << stored)), ft);
  op.write(mantissa, convert(g, select(g, keep, x, m), self.scalar_type()));
  op.write(exponent, convert(g, select(g, keep, ic(0), e), c10::kInt));
  op.run();
  return {mantissa, exponent};
}

// Randomized leaky ReLU: in training each non-positive element draws its slope
// from U(lower, upper) and `noise` records the slopes (1 elsewhere); otherwise
// the slope is the mean of the bounds.
at::Tensor rrelu_with_noise(Dest d, const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training, std::optional<at::Generator> generator) {
  double lo = lower.toDouble(), hi = upper.toDouble();
  if (!training) return d.deliver(aten::leaky_relu(Dest(), self, (lo + hi) / 2));
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "rrelu_with_noise: expected a floating point input, got ",
              self.scalar_type());
  TORCH_CHECK(noise.sizes() == self.sizes(), "rrelu_with_noise: noise must have the input's shape");
  Op op("aten::rrelu_with_noise");
  Graph& g = op.g();
  Shape shape = shape_of(self);
  auto acc = accumulate_type(self.scalar_type());
  Value x = convert(g, op.in(self), acc);
  Value u = convert(g, uniform01(g, op.rng_state(generator, self), shape, acc), acc);
  Value slope = add(g, mul(g, u, constant(g, hi - lo, acc, shape)), constant(g, lo, acc, shape));
  Value positive = compare(g, x, constant_like(g, x, 0), "GT", acc);
  Value r = select(g, positive, constant_like(g, x, 1), slope);
  op.write(noise, r);
  at::Tensor out = op.result(convert(g, mul(g, x, r), self.scalar_type()));
  op.run();
  return d.deliver(out);
}
at::Tensor rrelu_with_noise_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& noise,
                                     const at::Scalar& lower, const at::Scalar& upper, bool training,
                                     bool self_is_result) {
  double lo = lower.toDouble(), hi = upper.toDouble();
  if (training && hi - lo > 1e-6) return aten::mul(Dest(), grad_output, noise);
  return aten::leaky_relu_backward(grad_output, self, (lo + hi) / 2, self_is_result);
}

// The index pairs depend on the sizes only: computed on the host, then copied.
at::Tensor tril_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return at::tril_indices(row, col, offset, at::TensorOptions().dtype(dtype.value_or(at::kLong)))
      .to(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device())));
}
at::Tensor triu_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory) {
  return at::triu_indices(row, col, offset, at::TensorOptions().dtype(dtype.value_or(at::kLong)))
      .to(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device())));
}

// A zero tensor (materialized: the backend has no zero-tensor layout).
at::Tensor _efficientzerotensor(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                                std::optional<at::Layout> layout, std::optional<at::Device> device,
                                std::optional<bool> pin_memory) {
  return at::zeros_symint(size, at::TensorOptions()
                                    .dtype(dtype.value_or(at::get_default_dtype_as_scalartype()))
                                    .device(device.value_or(at::Device(c10::DeviceType::PrivateUse1, current_device()))));
}

}  // namespace torch_tpu::aten
