// The _foreach_* ops and fused steps the optimizers use: a whole tensor list becomes one
// program (one execution per optimizer statement instead of one per tensor).
#include <ATen/ExpandUtils.h>
#include <ATen/native/TypeProperties.h>

#include <functional>
#include <variant>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/elementwise.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

using ForeachLower = std::function<Value(Op&, size_t, const std::vector<Value>&)>;

// Applies `f` elementwise to (self[i], others[k][i]...), writing into self[i]
// (in-place) or returning new tensors. Half types compute in float32 and round
// once, as the CPU kernels do; `float_result` makes integer inputs float (true
// division), which an integer tensor cannot take in place.
// `scalars` (one for all indices, or one per index) take part in type
// promotion: an in-place result self[i] cannot hold is refused, as the
// per-tensor op refuses it (an int32 list plus 0.5).
std::vector<at::Tensor> foreach_apply(const char* name, at::TensorList self, std::vector<at::TensorList> others,
                                      at::ArrayRef<at::Scalar> scalars, const ForeachLower& f, bool inplace,
                                      bool float_result = false) {
  for (auto& o : others)
    TORCH_CHECK(o.size() == self.size(), "Tensor lists must have the same number of tensors, got ", self.size(),
                " and ", o.size());
  std::vector<at::Tensor> results;
  if (self.empty()) return results;
  for (size_t i = 0; i < self.size() && inplace; ++i) {
    at::native::ResultTypeState state;
    state = at::native::update_result_type_state(self[i], state);
    for (auto& o : others) state = at::native::update_result_type_state(o[i], state);
    if (!scalars.empty()) state = at::native::update_result_type_state(scalars[scalars.size() == 1 ? 0 : i], state);
    auto promoted = at::native::result_type(state);
    if (float_result && c10::isIntegralType(promoted, true)) promoted = at::get_default_dtype_as_scalartype();
    TORCH_CHECK(at::canCast(promoted, self[i].scalar_type()), "result type ", promoted,
                " can't be cast to the desired output type ", self[i].scalar_type());
  }
  Op op(name);
  Graph& g = op.g();
  for (size_t i = 0; i < self.size(); ++i) {
    // Tensors at one index broadcast, as PyTorch's per-tensor path does (ASGD's
    // 0-d step factors beside its parameters).
    std::vector<int64_t> shape = self[i].sizes().vec();
    for (auto& o : others) shape = at::infer_size(shape, o[i].sizes());
    TORCH_CHECK(!inplace || at::IntArrayRef(shape) == self[i].sizes(), name, ": output with shape ",
                self[i].sizes(), " at index ", i, " doesn't match the broadcast shape ", at::IntArrayRef(shape));
    Shape s(shape.begin(), shape.end());
    auto dt = self[i].scalar_type();
    if (float_result && c10::isIntegralType(dt, true)) dt = at::get_default_dtype_as_scalartype();
    auto ct = accumulate_type(dt);
    std::vector<Value> vals{broadcast_to(g, convert(g, op.in(self[i]), ct), s)};
    for (auto& o : others) vals.push_back(broadcast_to(g, convert(g, convert(g, op.in(o[i]), dt), ct), s));
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
  foreach_apply("aten::_foreach_add_", self, {}, scalar,
                [&](Op& op, size_t, const std::vector<Value>& v) { return binary(op.g(), "add", v[0], scalar_for(op, scalar, v[0])); },
                true);
}

void foreach_add_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  foreach_apply("aten::_foreach_add_", self, {other}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) { return axpy(op, v[0], v[1], alpha); }, true);
}

void foreach_sub_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
  foreach_apply("aten::_foreach_sub_", self, {other}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return binary(op.g(), "subtract", v[0], binary(op.g(), "multiply", v[1], scalar_for(op, alpha, v[1])));
                },
                true);
}

void foreach_mul_scalar_(at::TensorList self, const at::Scalar& scalar) {
  foreach_apply("aten::_foreach_mul_", self, {}, scalar,
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return binary(op.g(), "multiply", v[0], scalar_for(op, scalar, v[0]));
                },
                true);
}

void foreach_mul_list_(at::TensorList self, at::TensorList other) {
  foreach_apply("aten::_foreach_mul_", self, {other}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) { return binary(op.g(), "multiply", v[0], v[1]); },
                true);
}

void foreach_div_scalar_list_(at::TensorList self, at::ArrayRef<at::Scalar> scalars) {
  check_scalar_list(self, scalars);
  foreach_apply("aten::_foreach_div_", self, {}, scalars,
                [&](Op& op, size_t i, const std::vector<Value>& v) {
                  return binary(op.g(), "divide", v[0], scalar_for(op, scalars[i], v[0]));
                },
                true, /*float_result=*/true);
}

void foreach_lerp_scalar_(at::TensorList self, at::TensorList end, const at::Scalar& weight) {
  foreach_apply("aten::_foreach_lerp_", self, {end}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  Graph& g = op.g();
                  return binary(g, "add", v[0], binary(g, "multiply", binary(g, "subtract", v[1], v[0]),
                                                       scalar_for(op, weight, v[0])));
                },
                true);
}

void foreach_addcmul_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value) {
  foreach_apply("aten::_foreach_addcmul_", self, {t1, t2}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return axpy(op, v[0], binary(op.g(), "multiply", v[1], v[2]), value);
                },
                true);
}

void foreach_addcdiv_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value) {
  for (size_t i = 0; i < std::min(t1.size(), t2.size()); ++i) check_addcdiv_operands(t1[i], t2[i]);
  foreach_apply("aten::_foreach_addcdiv_", self, {t1, t2}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) {
                  return axpy(op, v[0], binary(op.g(), "divide", v[1], v[2]), value);
                },
                true);
}

void foreach_addcdiv_scalar_list_(at::TensorList self, at::TensorList t1, at::TensorList t2,
                                  at::ArrayRef<at::Scalar> scalars) {
  check_scalar_list(self, scalars);
  for (size_t i = 0; i < std::min(t1.size(), t2.size()); ++i) check_addcdiv_operands(t1[i], t2[i]);
  foreach_apply("aten::_foreach_addcdiv_", self, {t1, t2}, {},
                [&](Op& op, size_t i, const std::vector<Value>& v) {
                  return axpy(op, v[0], binary(op.g(), "divide", v[1], v[2]), scalars[i]);
                },
                true);
}

std::vector<at::Tensor> foreach_sqrt(at::TensorList self) {
  return foreach_apply("aten::_foreach_sqrt", self, {}, {},
                       [&](Op& op, size_t, const std::vector<Value>& v) { return unary(op.g(), "sqrt", v[0]); }, false,
                       true);
}

void foreach_sqrt_(at::TensorList self) {
  foreach_apply("aten::_foreach_sqrt_", self, {}, {},
                [&](Op& op, size_t, const std::vector<Value>& v) { return unary(op.g(), "sqrt", v[0]); }, true);
}

// --------------------------------------------------------------------------
// The optimizers' fused steps (Adam/AdamW/SGD/Adagrad with fused=True): the
// whole parameter list's update in one program, computed in the parameters'
// opmath type as the CPU kernels compute it. Step counts, a tensor learning
// rate and GradScaler's grad_scale / found_inf are read on the device, so a
// step needs no host synchronization.

namespace {

// What every fused step shares: the lists' checks, its scalar inputs, and its
// writes, which keep the old contents when found_inf is 1 (the CPU kernel
// then returns before touching anything). Scalars are computed in each
// parameter's opmath type `ct`.
class FusedStep {
 public:
  FusedStep(const char* name, at::TensorList params,
            std::initializer_list<std::pair<at::TensorList, const char*>> lists, const LearningRate& lr,
            const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf)
      : op_(name), name_(name), lr_(lr) {
    for (const auto& [list, what] : lists)
      TORCH_CHECK(list.size() == params.size(), name, ": expected ", params.size(), " ", what, ", got ",
                  list.size());
    for (const at::Tensor& p : params)
      TORCH_CHECK(is_float(p.scalar_type()), name, ": expected floating point parameters, got ", p.scalar_type());
    if (const at::Tensor* t = std::get_if<at::Tensor>(&lr)) lr_value_ = scalar(*t, "lr");
    if (grad_scale) grad_scale_ = scalar(*grad_scale, "grad_scale");
    if (found_inf) {
      Value found = scalar(*found_inf, "found_inf");
      skip_ = compare(g(), found, constant_like(g(), found, 1), "EQ", found_inf->scalar_type());
    }
  }
  Op& op() { return op_; }
  Graph& g() { return op_.g(); }
  // A 1-element tensor (a step count, lr, grad_scale, found_inf) as a 0-d value of its dtype.
  Value scalar(const at::Tensor& t, const char* what) {
    TORCH_CHECK(t.numel() == 1, name_, ": ", what, " must be a 1-element tensor, got ", t.numel(), " elements");
    return reshape(g(), op_.in(t), {});
  }
  // 0-d values of type ct: a number, a scalar tensor's value, the learning rate.
  Value number(double x, c10::ScalarType ct) { return op_.scalar(x, ct); }
  Value as(Value v, c10::ScalarType ct) { return convert(g(), v, ct); }
  // A tensor of the step (parameter, state) in opmath type ct.
  Value read(const at::Tensor& t, c10::ScalarType ct) { return as(op_.in(t), ct); }
  Value lr(c10::ScalarType ct) {
    if (const double* x = std::get_if<double>(&lr_)) return number(*x, ct);
    return as(lr_value_, ct);
  }
  // A 0-d value over the shape of `like`.
  Value spread(Value v, Value like) { return broadcast_to(g(), v, g().type(like).shape); }
  // The gradient in opmath type `ct`, unscaled by grad_scale (written back, as
  // the CPU kernel does), negated for maximize, plus weight_decay times the
  // parameter `p`.
  Value gradient(const at::Tensor& grad, c10::ScalarType ct, bool maximize, double weight_decay, Value p) {
    Value gr = read(grad, ct);
    if (grad_scale_ >= 0) {
      gr = binary(g(), "divide", gr, spread(as(grad_scale_, ct), gr));
      write(grad, gr);
    }
    if (maximize) gr = unary(g(), "negate", gr);
    return weight_decay == 0 ? gr : axpy(op_, gr, p, weight_decay);
  }
  void write(const at::Tensor& t, Value v) {
    v = convert(g(), v, t.scalar_type());
    if (skip_ >= 0) v = select(g(), spread(skip_, v), op_.in(t), v);
    op_.write(t, v);
  }
  void run() { op_.run(); }

 private:
  Op op_;
  const char* name_;
  LearningRate lr_;
  Value lr_value_ = -1;    // a tensor lr's value
  Value grad_scale_ = -1;  // -1: none
  Value skip_ = -1;        // found_inf == 1
};

// p + a * b for a 0-d value `a` (a learning rate; axpy takes a number).
Value plus_times(FusedStep& step, Value p, Value a, Value b) {
  return binary(step.g(), "add", p, binary(step.g(), "multiply", step.spread(a, b), b));
}

}  // namespace

void fused_adam_step(bool decoupled, at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                     at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs, at::TensorList steps,
                     const LearningRate& lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                     bool maximize, const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf) {
  if (params.empty()) return;
  FusedStep step(decoupled ? "aten::_fused_adamw_" : "aten::_fused_adam_", params,
                 {{grads, "grads"}, {exp_avgs, "exp_avgs"}, {exp_avg_sqs, "exp_avg_sqs"}, {steps, "state_steps"},
                  {amsgrad ? max_exp_avg_sqs : params, "max_exp_avg_sqs"}},
                 lr, grad_scale, found_inf);
  Graph& g = step.g();
  for (size_t i = 0; i < params.size(); ++i) {
    auto ct = accumulate_type(params[i].scalar_type());
    Value p = step.read(params[i], ct);
    Value gr = step.gradient(grads[i], ct, maximize, decoupled ? 0 : weight_decay, p);
    if (decoupled && weight_decay != 0)  // AdamW: p -= lr * weight_decay * p
      p = plus_times(step, p, binary(g, "multiply", step.lr(ct), step.number(-weight_decay, ct)), p);
    // m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
    Value m = axpy(step.op(), binary(g, "multiply", step.read(exp_avgs[i], ct), scalar_for(step.op(), beta1, p)), gr,
                   1 - beta1);
    Value v = axpy(step.op(), binary(g, "multiply", step.read(exp_avg_sqs[i], ct), scalar_for(step.op(), beta2, p)),
                   binary(g, "multiply", gr, gr), 1 - beta2);
    Value count = step.as(step.scalar(steps[i], "a state step"), ct);
    Value one = step.number(1, ct);
    Value correction1 = binary(g, "subtract", one, binary(g, "power", step.number(beta1, ct), count));
    Value correction2 = binary(g, "subtract", one, binary(g, "power", step.number(beta2, ct), count));
    Value step_size = binary(g, "divide", step.lr(ct), correction1);
    Value second = v;
    if (amsgrad) {
      second = binary(g, "maximum", step.read(max_exp_avg_sqs[i], ct), v);
      step.write(max_exp_avg_sqs[i], second);
    }
    // p -= step_size * m / (sqrt(second) / sqrt(correction2) + eps)
    Value denom = binary(g, "add", binary(g, "divide", unary(g, "sqrt", second),
                                          step.spread(unary(g, "sqrt", correction2), p)),
                         scalar_for(step.op(), eps, p));
    step.write(exp_avgs[i], m);
    step.write(exp_avg_sqs[i], v);
    step.write(params[i], binary(g, "subtract", p, binary(g, "divide", binary(g, "multiply", step.spread(step_size, m), m),
                                                         denom)));
  }
  step.run();
}

void fused_sgd_step(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers,
                    double weight_decay, double momentum, const LearningRate& lr, double dampening, bool nesterov,
                    bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf) {
  if (params.empty()) return;
  FusedStep step("aten::_fused_sgd_", params,
                 {{grads, "grads"}, {momentum != 0 ? momentum_buffers : params, "momentum_buffer_list"}}, lr,
                 grad_scale, found_inf);
  Graph& g = step.g();
  for (size_t i = 0; i < params.size(); ++i) {
    auto ct = accumulate_type(params[i].scalar_type());
    Value p = step.read(params[i], ct);
    Value gr = step.gradient(grads[i], ct, maximize, weight_decay, p);
    if (momentum != 0) {
      // buf = momentum buf + (1 - dampening) g (g itself at the first step)
      Value buf = is_first_step ? gr
                                : axpy(step.op(),
                                       binary(g, "multiply", step.read(momentum_buffers[i], ct),
                                              scalar_for(step.op(), momentum, p)),
                                       gr, 1 - dampening);
      step.write(momentum_buffers[i], buf);
      gr = nesterov ? axpy(step.op(), gr, buf, momentum) : buf;
    }
    step.write(params[i], plus_times(step, p, unary(g, "negate", step.lr(ct)), gr));
  }
  step.run();
}

void fused_adagrad_step(at::TensorList params, at::TensorList grads, at::TensorList state_sums,
                        at::TensorList steps, const LearningRate& lr, double lr_decay, double weight_decay,
                        double eps, bool maximize, const std::optional<at::Tensor>& grad_scale,
                        const std::optional<at::Tensor>& found_inf) {
  if (params.empty()) return;
  FusedStep step("aten::_fused_adagrad_", params,
                 {{grads, "grads"}, {state_sums, "state_sums"}, {steps, "state_steps"}}, lr, grad_scale, found_inf);
  Graph& g = step.g();
  for (size_t i = 0; i < params.size(); ++i) {
    auto ct = accumulate_type(params[i].scalar_type());
    Value p = step.read(params[i], ct);
    Value gr = step.gradient(grads[i], ct, maximize, weight_decay, p);
    // clr = lr / (1 + (step - 1) lr_decay);  sum += g^2;  p -= clr g / (sqrt(sum) + eps)
    Value count = step.as(step.scalar(steps[i], "a state step"), ct);
    Value one = step.number(1, ct);
    Value decayed = binary(g, "add", one, binary(g, "multiply", binary(g, "subtract", count, one),
                                                 step.number(lr_decay, ct)));
    Value clr = binary(g, "divide", step.lr(ct), decayed);
    Value sum = binary(g, "add", step.read(state_sums[i], ct), binary(g, "multiply", gr, gr));
    Value denom = binary(g, "add", unary(g, "sqrt", sum), scalar_for(step.op(), eps, p));
    step.write(state_sums[i], sum);
    step.write(params[i], binary(g, "subtract", p, binary(g, "divide", binary(g, "multiply", step.spread(clr, gr), gr),
                                                         denom)));
  }
  step.run();
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
