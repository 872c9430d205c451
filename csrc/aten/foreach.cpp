// The _foreach_* ops the optimizers use: a whole tensor list becomes one
// program (one execution per optimizer statement instead of one per tensor).
#include <functional>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/elementwise.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

using ForeachLower = std::function<Value(Op&, size_t, const std::vector<Value>&)>;

// Applies `f` elementwise to (self[i], others[k][i]...), writing into self[i]
// (in-place) or returning new tensors. Half types compute in float32 and round
// once, as the CPU kernels do; `float_result` makes integer inputs float.
std::vector<at::Tensor> foreach_apply(const char* name, at::TensorList self, std::vector<at::TensorList> others,
                                      const ForeachLower& f, bool inplace, bool float_result = false) {
  for (auto& o : others)
    TORCH_CHECK(o.size() == self.size(), "Tensor lists must have the same number of tensors, got ", self.size(),
                " and ", o.size());
  std::vector<at::Tensor> results;
  if (self.empty()) return results;
  Op op(name);
  Graph& g = op.g();
  for (size_t i = 0; i < self.size(); ++i) {
    Shape s(self[i].sizes().begin(), self[i].sizes().end());
    auto dt = self[i].scalar_type();
    if (float_result && c10::isIntegralType(dt, true)) dt = at::get_default_dtype_as_scalartype();
    auto ct = accumulate_type(dt);
    std::vector<Value> vals{convert(g, op.in(self[i]), ct)};
    for (auto& o : others) {
      TORCH_CHECK(o[i].sizes() == self[i].sizes(), name, ": tensors at index ", i, " have different shapes ",
                  self[i].sizes(), " and ", o[i].sizes());
      vals.push_back(convert(g, convert(g, op.in(o[i]), dt), ct));
    }
    Value v = f(op, i, vals);
    if (inplace) {
      op.write(self[i], v);
    } else {
      results.push_back(op.result(convert(g, v, dt)));
    }
  }
  op.run();
  return results;
}

Value scalar_for(Op& op, const c10::Scalar& s, Value like) {
  auto t = op.g().type(like);
  return broadcast_to(op.g(), op.scalar(s, t.dtype), t.shape);
}

Value axpy(Op& op, Value x, Value y, const c10::Scalar& alpha) {
  if (alpha.equal(1)) return binary(op.g(), "add", x, y);
  return binary(op.g(), "add", x, binary(op.g(), "multiply", y, scalar_for(op, alpha, y)));
}

void check_scalar_list(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
  TORCH_CHECK(scalars.size() == self.size(), "Tensor list must have same number of elements as scalar list, got ",
              self.size(), " and ", scalars.size());
}

}  // namespace

void foreach_add_scalar_(at::TensorList self, const at::Scalar& scalar) {
  foreach_apply("aten::_foreach_add_", self, {},
                [&](Op& op, size_t, const std::vector<Value>& v) { return binary(op.g(), "add", v[0], scalar_for(op, scalar, v[0])); },
                true);
}

void foreach_add_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  foreach_apply("aten::_foreach_add_", self, {other},
                [&](Op& op, size_t, const std::vector<Value>& v) { return axpy(op, v[0], v[1], alpha); }, true);
}

void foreach_sub_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  foreach_apply("aten::_foreach_sub_", self, {other},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return binary(op.g(), "subtract", v[0], binary(op.g(), "multiply", v[1], scalar_for(op, alpha, v[1])));
                },
                true);
}

void foreach_mul_scalar_(at::TensorList self, const at::Scalar& scalar) {
  foreach_apply("aten::_foreach_mul_", self, {},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return binary(op.g(), "multiply", v[0], scalar_for(op, scalar, v[0]));
                },
                true);
}

void foreach_mul_list_(at::TensorList self, at::TensorList other) {
  foreach_apply("aten::_foreach_mul_", self, {other},
                [&](Op& op, size_t, const std::vector<Value>& v) { return binary(op.g(), "multiply", v[0], v[1]); },
                true);
}

void foreach_div_scalar_list_(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
  check_scalar_list(self, scalars);
  foreach_apply("aten::_foreach_div_", self, {},
                [&](Op& op, size_t i, const std::vector<Value>& v) {
                  return binary(op.g(), "divide", v[0], scalar_for(op, scalars[i], v[0]));
                },
                true);
}

void foreach_lerp_scalar_(at::TensorList self, at::TensorList end, const at::Scalar& weight) {
  foreach_apply("aten::_foreach_lerp_", self, {end},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  Graph& g = op.g();
                  return binary(g, "add", v[0], binary(g, "multiply", binary(g, "subtract", v[1], v[0]),
                                                       scalar_for(op, weight, v[0])));
                },
                true);
}

void foreach_addcmul_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value) {
  foreach_apply("aten::_foreach_addcmul_", self, {t1, t2},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return axpy(op, v[0], binary(op.g(), "multiply", v[1], v[2]), value);
                },
                true);
}

void foreach_addcdiv_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value) {
  foreach_apply("aten::_foreach_addcdiv_", self, {t1, t2},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return axpy(op, v[0], binary(op.g(), "divide", v[1], v[2]), value);
                },
                true);
}

void foreach_addcdiv_scalar_list_(at::TensorList self, at::TensorList t1, at::TensorList t2,
                                  at::ArrayRef<at::Scalar> scalars) {
  check_scalar_list(self, scalars);
  foreach_apply("aten::_foreach_addcdiv_", self, {t1, t2},
                [&](Op& op, size_t i, const std::vector<Value>& v) {
                  return axpy(op, v[0], binary(op.g(), "divide", v[1], v[2]), scalars[i]);
                },
                true);
}

std::vector<at::Tensor> foreach_sqrt(at::TensorList self) {
  return foreach_apply("aten::_foreach_sqrt", self, {},
                       [&](Op& op, size_t, const std::vector<Value>& v) { return unary(op.g(), "sqrt", v[0]); }, false,
                       true);
}

void foreach_sqrt_(at::TensorList self) {
  foreach_apply("aten::_foreach_sqrt_", self, {},
                [&](Op& op, size_t, const std::vector<Value>& v) { return unary(op.g(), "sqrt", v[0]); }, true);
}

}  // namespace torch_tpu::aten

namespace torch_tpu::aten {

namespace {

void check_one_element(const at::Tensor& t, const char* name, c10::ScalarType dtype, const char* dtype_name) {
  check_tpu(t, name);
  TORCH_CHECK(t.numel() == 1, name, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == dtype, name, " must be a ", dtype_name, " tensor.");
}

}  // namespace

// GradScaler.unscale_: every gradient times inv_scale, and found_inf set to 1
// when any of them holds an inf or NaN; one program for the whole list.
void amp_foreach_non_finite_check_and_unscale_(at::TensorList self, at::Tensor& found_inf,
                                               const at::Tensor& inv_scale) {
  check_one_element(inv_scale, "inv_scale", c10::kFloat, "float");
  check_one_element(found_inf, "found_inf", c10::kFloat, "float");
  if (self.empty()) return;
  Op op("aten::_amp_foreach_non_finite_check_and_unscale_");
  Graph& g = op.g();
  Value scale = reshape(g, op.in(inv_scale), {});
  Value found = compare(g, reshape(g, op.in(found_inf), {}), constant(g, 0, c10::kFloat), "NE", c10::kFloat);
  for (const at::Tensor& t : self) {
    check_tpu(t, "_amp_foreach_non_finite_check_and_unscale_");
    TORCH_CHECK(is_float(t.scalar_type()), "_amp_foreach_non_finite_check_and_unscale_: expected floating point "
                "tensors, got ", t.scalar_type());
    TORCH_CHECK(t.device() == found_inf.device(), "found_inf and the scaled tensors must be on the same device");
    Shape s = shape_of(t);
    std::vector<int64_t> all(s.size());
    for (size_t d = 0; d < s.size(); ++d) all[d] = static_cast<int64_t>(d);
    Value v = convert(g, op.in(t), c10::kFloat);
    found = binary(g, "or", found, reduce(g, not_finite(g, v), all, ReduceKind::Or));
    op.write(t, binary(g, "multiply", v, broadcast_to(g, scale, s)));
  }
  op.write(found_inf, convert(g, found, c10::kFloat));
  op.run();
}

// GradScaler.update: after a step with infs the scale backs off and the
// growth count restarts; after growth_interval steps without, the scale grows
// (unless that overflows) and the count restarts.
at::Tensor& amp_update_scale_(at::Tensor& self, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                              double growth_factor, double backoff_factor, int64_t growth_interval) {
  check_one_element(self, "current_scale", c10::kFloat, "float");
  check_one_element(growth_tracker, "growth_tracker", c10::kInt, "int32");
  check_one_element(found_inf, "found_inf", c10::kFloat, "float");
  Op op("aten::_amp_update_scale_");
  Graph& g = op.g();
  Value scale = reshape(g, op.in(self), {});
  Value count = reshape(g, op.in(growth_tracker), {});
  Value found = compare(g, reshape(g, op.in(found_inf), {}), constant(g, 0, c10::kFloat), "NE", c10::kFloat);
  Value backed_off = binary(g, "multiply", scale, op.scalar(backoff_factor, c10::kFloat));
  Value grown = binary(g, "multiply", scale, op.scalar(growth_factor, c10::kFloat));
  Value successful = binary(g, "add", count, constant(g, 1, c10::kInt));
  Value interval_done = compare(g, successful, op.scalar(growth_interval, c10::kInt), "EQ", c10::kInt);
  Value grow = binary(g, "and", interval_done, unary(g, "not", not_finite(g, grown)));
  Value zero = constant(g, 0, c10::kInt);
  op.write(self, select(g, found, backed_off, select(g, grow, grown, scale)));
  op.write(growth_tracker, select(g, found, zero, select(g, interval_done, zero, successful)));
  op.run();
  return self;
}

}  // namespace torch_tpu::aten
