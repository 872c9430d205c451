// Elementwise kernels: every functional, in-place and out= form of an op goes
// through `elementwise`, which applies PyTorch's broadcasting, type promotion
// and in-place cast rules and then one lowering.
#include <ATen/native/Resize.h>

#include <functional>

#include "aten/kernels.h"
#include "aten/op.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

using Lower = std::function<Value(Op&, const std::vector<Value>&)>;

enum class Dest { New, Self, Out };

struct Spec {
  const char* name;
  c10::ScalarType compute;  // operands are converted to this first
  c10::ScalarType result;   // the dtype of a new result
};

Shape broadcast_shape(const std::vector<at::Tensor>& ins) {
  at::DimVector s;
  for (auto& t : ins) s = at::infer_size_dimvector(s, t.sizes());
  return Shape(s.begin(), s.end());
}

at::Tensor elementwise(const Spec& spec, const std::vector<at::Tensor>& ins, const Lower& f, Dest dest,
                       const at::Tensor* target = nullptr) {
  Shape shape = broadcast_shape(ins);
  if (dest == Dest::Self) {
    TORCH_CHECK(Shape(target->sizes().begin(), target->sizes().end()) == shape, "output with shape ",
                target->sizes(), " doesn't match the broadcast shape ", at::IntArrayRef(shape));
    TORCH_CHECK(at::canCast(spec.result, target->scalar_type()), "result type ", spec.result,
                " can't be cast to the desired output type ", target->scalar_type());
  } else if (dest == Dest::Out) {
    TORCH_CHECK(at::canCast(spec.result, target->scalar_type()), "result type ", spec.result,
                " can't be cast to the desired output type ", target->scalar_type());
    at::native::resize_output(*target, shape);
  }
  Op op(spec.name);
  std::vector<Value> vals;
  for (auto& t : ins) vals.push_back(broadcast_to(op.g(), convert(op.g(), op.in(t), spec.compute), shape));
  Value v = convert(op.g(), f(op, vals), spec.result);
  if (dest == Dest::New) {
    // Like TensorIterator: a dense, permuted input of the output's shape gives
    // the output its memory layout.
    for (auto& t : ins) {
      if (t.is_privateuseone() && Shape(t.sizes().begin(), t.sizes().end()) == shape && !t.is_contiguous() &&
          t.is_non_overlapping_and_dense()) {
        at::Tensor out = at::empty_strided(t.sizes(), t.strides(), t.options().dtype(spec.result));
        op.write(out, v);
        op.run();
        return out;
      }
    }
    at::Tensor out = op.result(v);
    op.run();
    return out;
  }
  op.write(*target, v);
  op.run();
  return *target;
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
                    const at::Scalar& alpha, Dest d, const at::Tensor* target) {
  auto rt = at::result_type(self, other);
  TORCH_CHECK(rt != c10::kBool || std::string(hlo) == "add", "Subtraction, the `-` operator, with two bool tensors "
              "is not supported. Use the `^` or `logical_xor()` operator instead.");
  return elementwise({name, rt, rt}, {self, other},
                     [&](Op& op, const std::vector<Value>& v) {
                       Value b = times_scalar(op, v[1], alpha);
                       if (rt == c10::kBool) return binary(op.g(), "or", v[0], b);
                       return binary(op.g(), hlo, v[0], b);
                     },
                     d, target);
}

Spec arith_spec(const char* name, const at::Tensor& a, const at::Tensor& b) {
  auto rt = at::result_type(a, b);
  return {name, rt, rt};
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


}  // namespace

at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return add_impl("aten::add", "add", self, other, alpha, Dest::New, nullptr);
}
at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  add_impl("aten::add_", "add", self, other, alpha, Dest::Self, &self);
  return self;
}
at::Tensor& add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  add_impl("aten::add.out", "add", self, other, alpha, Dest::Out, &out);
  return out;
}
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return add_impl("aten::sub", "subtract", self, other, alpha, Dest::New, nullptr);
}
at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  add_impl("aten::sub_", "subtract", self, other, alpha, Dest::Self, &self);
  return self;
}
at::Tensor& sub_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  add_impl("aten::sub.out", "subtract", self, other, alpha, Dest::Out, &out);
  return out;
}

// One definition gives the functional, in-place and out= kernels of a binary op.
#define TPU_BINARY(name, spec_fn, body)                                                          \
  static Value name##_lower(Op& op, const std::vector<Value>& v) {                               \
    Graph& g = op.g();                                                                           \
    Value a = v[0], b = v[1];                                                                    \
    body                                                                                         \
  }                                                                                              \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other) {                             \
    return elementwise(spec_fn("aten::" #name, self, other), {self, other}, name##_lower, Dest::New); \
  }                                                                                              \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other) {                                \
    elementwise(spec_fn("aten::" #name "_", self, other), {self, other}, name##_lower, Dest::Self, &self); \
    return self;                                                                                 \
  }                                                                                              \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {      \
    elementwise(spec_fn("aten::" #name ".out", self, other), {self, other}, name##_lower, Dest::Out, &out); \
    return out;                                                                                  \
  }

TPU_BINARY(mul, arith_spec, {
  if (g.type(a).dtype == c10::kBool) return binary(g, "and", a, b);
  return binary(g, "multiply", a, b);
})
TPU_BINARY(div, div_spec, { return binary(g, "divide", a, b); })
TPU_BINARY(maximum, arith_spec, { return binary(g, "maximum", a, b); })
TPU_BINARY(minimum, arith_spec, { return binary(g, "minimum", a, b); })
TPU_BINARY(pow, arith_spec, { return binary(g, "power", a, b); })
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
  // a = grad, b = sigmoid output: grad * y * (1 - y)
  return binary(g, "multiply", a, binary(g, "multiply", b, binary(g, "subtract", constant(g, 1, g.type(b).dtype, g.type(b).shape), b)));
})
TPU_BINARY(tanh_backward, arith_spec, {
  // a = grad, b = tanh output: grad * (1 - y^2)
  return binary(g, "multiply", a, binary(g, "subtract", constant(g, 1, g.type(b).dtype, g.type(b).shape), binary(g, "multiply", b, b)));
})
TPU_BINARY(silu_backward, arith_spec, {
  // a = grad, b = input: grad * s * (1 + x * (1 - s))
  auto t = g.type(b);
  Value one = constant(g, 1, t.dtype, t.shape);
  Value s = unary(g, "logistic", b);
  return binary(g, "multiply", a, binary(g, "multiply", s, binary(g, "add", one, binary(g, "multiply", b, binary(g, "subtract", one, s)))));
})
#undef TPU_BINARY

// Tensor-vs-Scalar comparisons: the scalar becomes a 0-d runtime input.
#define TPU_SCALAR_CMP(name, dir)                                                                 \
  at::Tensor name##_scalar(const at::Tensor& self, const at::Scalar& other) {                     \
    return torch_tpu::aten::name(self, at::scalar_tensor(other, at::TensorOptions().dtype(                          \
                                                   at::result_type(self, other))));              \
  }                                                                                               \
  at::Tensor& name##_scalar_(at::Tensor& self, const at::Scalar& other) {                         \
    return torch_tpu::aten::name##_(self, at::scalar_tensor(other, at::TensorOptions().dtype(                       \
                                                      at::result_type(self, other))));           \
  }                                                                                               \
  at::Tensor& name##_scalar_out(const at::Tensor& self, const at::Scalar& other, at::Tensor& out) { \
    return torch_tpu::aten::name##_out(self, at::scalar_tensor(other, at::TensorOptions().dtype(                    \
                                                         at::result_type(self, other))), out);   \
  }
TPU_SCALAR_CMP(eq, EQ)
TPU_SCALAR_CMP(ne, NE)
TPU_SCALAR_CMP(lt, LT)
TPU_SCALAR_CMP(le, LE)
TPU_SCALAR_CMP(gt, GT)
TPU_SCALAR_CMP(ge, GE)
#undef TPU_SCALAR_CMP

namespace {
Value pow_scalar_lower(Op& op, Value x, const at::Scalar& e) {
  Graph& g = op.g();
  if (e.equal(1)) return x;
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

at::Tensor pow_tensor_scalar(const at::Tensor& self, const at::Scalar& exponent) {
  return elementwise(pow_scalar_spec("aten::pow", self, exponent), {self},
                     [&](Op& op, const std::vector<Value>& v) { return pow_scalar_lower(op, v[0], exponent); },
                     Dest::New);
}
at::Tensor& pow_tensor_scalar_(at::Tensor& self, const at::Scalar& exponent) {
  elementwise(pow_scalar_spec("aten::pow_", self, exponent), {self},
              [&](Op& op, const std::vector<Value>& v) { return pow_scalar_lower(op, v[0], exponent); },
              Dest::Self, &self);
  return self;
}
at::Tensor& pow_tensor_scalar_out(const at::Tensor& self, const at::Scalar& exponent, at::Tensor& out) {
  elementwise(pow_scalar_spec("aten::pow.out", self, exponent), {self},
              [&](Op& op, const std::vector<Value>& v) { return pow_scalar_lower(op, v[0], exponent); },
              Dest::Out, &out);
  return out;
}

namespace {
Spec same_spec(const char* name, const at::Tensor& t) { return {name, t.scalar_type(), t.scalar_type()}; }
Spec float_spec(const char* name, const at::Tensor& t) {
  auto dt = float_of(t.scalar_type());
  return {name, dt, dt};
}
Spec bool_spec(const char* name, const at::Tensor&) { return {name, c10::kBool, c10::kBool}; }
}  // namespace

#define TPU_UNARY(name, spec_fn, body)                                                       \
  static Value name##_lower(Op& op, const std::vector<Value>& v) {                           \
    Graph& g = op.g();                                                                       \
    Value x = v[0];                                                                          \
    body                                                                                     \
  }                                                                                          \
  at::Tensor name(const at::Tensor& self) {                                                  \
    return elementwise(spec_fn("aten::" #name, self), {self}, name##_lower, Dest::New);       \
  }                                                                                          \
  at::Tensor& name##_(at::Tensor& self) {                                                    \
    elementwise(spec_fn("aten::" #name "_", self), {self}, name##_lower, Dest::Self, &self); \
    return self;                                                                             \
  }                                                                                          \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out) {                          \
    elementwise(spec_fn("aten::" #name ".out", self), {self}, name##_lower, Dest::Out, &out); \
    return out;                                                                              \
  }

TPU_UNARY(neg, same_spec, { return unary(g, "negate", x); })
TPU_UNARY(abs, same_spec, {
  if (g.type(x).dtype == c10::kBool) return x;
  return unary(g, "abs", x);
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
  TORCH_CHECK(!is_float(g.type(x).dtype), "bitwise_not is only supported for integer and boolean tensors");
  return unary(g, "not", x);
})
TPU_UNARY(floor, same_spec, { return is_float(g.type(x).dtype) ? unary(g, "floor", x) : x; })
TPU_UNARY(ceil, same_spec, { return is_float(g.type(x).dtype) ? unary(g, "ceil", x) : x; })
TPU_UNARY(round, same_spec, { return is_float(g.type(x).dtype) ? unary(g, "round_nearest_even", x) : x; })
TPU_UNARY(trunc, same_spec, {
  if (!is_float(g.type(x).dtype)) return x;
  return binary(g, "multiply", unary(g, "sign", x), unary(g, "floor", unary(g, "abs", x)));
})
TPU_UNARY(sign, same_spec, {
  auto t = g.type(x);
  if (t.dtype == c10::kBool) return x;
  if (!is_float(t.dtype)) return unary(g, "sign", x);
  // PyTorch computes (0 < x) - (x < 0): NaN gives 0, not NaN.
  Value zero = constant(g, 0, t.dtype, t.shape);
  return binary(g, "subtract", convert(g, compare(g, zero, x, "LT", t.dtype), t.dtype),
                convert(g, compare(g, x, zero, "LT", t.dtype), t.dtype));
})
TPU_UNARY(erf, float_spec, { return g.add("chlo.erf", {x}, g.type(x)); })
TPU_UNARY(log1p, float_spec, { return unary(g, "log_plus_one", x); })
TPU_UNARY(expm1, float_spec, { return unary(g, "exponential_minus_one", x); })
TPU_UNARY(silu, float_spec, { return binary(g, "multiply", x, unary(g, "logistic", x)); })
#undef TPU_UNARY

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

at::Tensor relu(const at::Tensor& self) {
  return elementwise(same_spec("aten::relu", self), {self}, relu_lower, Dest::New);
}
at::Tensor& relu_(at::Tensor& self) {
  elementwise(same_spec("aten::relu_", self), {self}, relu_lower, Dest::Self, &self);
  return self;
}

at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& threshold) {
  auto rt = at::result_type(grad, self);
  return elementwise({"aten::threshold_backward", rt, rt}, {grad, self},
                     [&](Op& op, const std::vector<Value>& v) {
                       Graph& g = op.g();
                       const auto& t = g.type(v[0]);
                       Value th = broadcast_to(g, op.scalar(threshold, rt), t.shape);
                       return select(g, compare(g, v[1], th, "LE", rt), constant(g, 0, rt, t.shape), v[0]);
                     },
                     Dest::New);
}

at::Tensor where_self(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(cond.scalar_type() == c10::kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              cond.scalar_type());
  auto rt = at::result_type(self, other);
  return elementwise({"aten::where", rt, rt}, {cond, self, other},
                     [&](Op& op, const std::vector<Value>& v) {
                       return select(op.g(), convert(op.g(), v[0], c10::kBool), v[1], v[2]);
                     },
                     Dest::New);
}

at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  auto rt = self.scalar_type();
  elementwise({"aten::addcmul_", rt, rt}, {self, t1, t2},
              [&](Op& op, const std::vector<Value>& v) {
                Graph& g = op.g();
                return binary(g, "add", v[0], times_scalar(op, binary(g, "multiply", v[1], v[2]), value));
              },
              Dest::Self, &self);
  return self;
}

at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  auto rt = self.scalar_type();
  TORCH_CHECK(!c10::isIntegralType(t1.scalar_type(), true) || !c10::isIntegralType(t2.scalar_type(), true),
              "Integer division with addcdiv is no longer supported");
  elementwise({"aten::addcdiv_", rt, rt}, {self, t1, t2},
              [&](Op& op, const std::vector<Value>& v) {
                Graph& g = op.g();
                return binary(g, "add", v[0], times_scalar(op, binary(g, "divide", v[1], v[2]), value));
              },
              Dest::Self, &self);
  return self;
}

at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
  auto rt = self.scalar_type();
  elementwise({"aten::lerp_", rt, rt}, {self, end},
              [&](Op& op, const std::vector<Value>& v) {
                Graph& g = op.g();
                return binary(g, "add", v[0], times_scalar(op, binary(g, "subtract", v[1], v[0]), weight));
              },
              Dest::Self, &self);
  return self;
}

}  // namespace torch_tpu::aten
