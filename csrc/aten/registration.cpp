// The one registration table of tpu kernels (sorted by ATen name), and the
// boxed CPU fallback that serves every operator not in it.
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <set>

#include "aten/kernels.h"
#include "exec/exec.h"
#include "exec/recording.h"
#include "runtime/env.h"

namespace torch_tpu::aten {
namespace {

bool fallback_allowed() {
  static const bool allowed = env::flag(env::kCpuFallback, true);
  return allowed;
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema_name = op.schema().operator_name();
  std::string name = schema_name.name;
  if (!schema_name.overload_name.empty()) name += "." + schema_name.overload_name;
  TORCH_CHECK_NOT_IMPLEMENTED(fallback_allowed(), "tpu: operator '", name,
                              "' has no tpu lowering, and TORCH_TPU_CPU_FALLBACK=0 forbids running it on the CPU");
  auto& m = exec::metrics();
  bool first;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.cpu_fallbacks[name]++;
    // Warned once per operator per process, even across reset_metrics().
    static std::set<std::string> warned;
    first = warned.insert(name).second;
  }
  if (first) {
    TORCH_WARN("tpu: operator '", name, "' has no tpu lowering; it runs on the CPU (copying its tensors). ",
               "Set TORCH_TPU_CPU_FALLBACK=0 to make this an error.");
  }
  // The CPU reads the operands' current values: deferred work runs first.
  exec::flush("cpu_fallback");
  at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define TPU_REGISTER_COMPARE(name)                    \
  m.impl(#name ".Scalar", name##_scalar);             \
  m.impl(#name ".Scalar_out", name##_scalar_out);     \
  m.impl(#name ".Tensor", name);                      \
  m.impl(#name ".Tensor_out", name##_out);            \
  m.impl(#name "_.Scalar", name##_scalar_);           \
  m.impl(#name "_.Tensor", name##_);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_foreach_add_.List", foreach_add_list_);
  m.impl("_foreach_add_.Scalar", foreach_add_scalar_);
  m.impl("_foreach_addcdiv_.Scalar", foreach_addcdiv_scalar_);
  m.impl("_foreach_addcdiv_.ScalarList", foreach_addcdiv_scalar_list_);
  m.impl("_foreach_addcmul_.Scalar", foreach_addcmul_scalar_);
  m.impl("_foreach_div_.ScalarList", foreach_div_scalar_list_);
  m.impl("_foreach_lerp_.Scalar", foreach_lerp_scalar_);
  m.impl("_foreach_mul_.List", foreach_mul_list_);
  m.impl("_foreach_mul_.Scalar", foreach_mul_scalar_);
  m.impl("_foreach_sqrt", foreach_sqrt);
  m.impl("_foreach_sqrt_", foreach_sqrt_);
  m.impl("_foreach_sub_.List", foreach_sub_list_);
  m.impl("_local_scalar_dense", local_scalar_dense);
  m.impl("_log_softmax", log_softmax);
  m.impl("_log_softmax_backward_data", log_softmax_backward);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("_softmax", softmax);
  m.impl("_softmax_backward_data", softmax_backward);
  m.impl("abs", abs);
  m.impl("abs.out", abs_out);
  m.impl("abs_", abs_);
  m.impl("add.Tensor", add);
  m.impl("add.out", add_out);
  m.impl("add_.Tensor", add_);
  m.impl("addcdiv_", addcdiv_);
  m.impl("addcmul_", addcmul_);
  m.impl("addmm", addmm);
  m.impl("all", all_all);
  m.impl("all.dim", all_dim);
  m.impl("amax", amax);
  m.impl("amin", amin);
  m.impl("any", any_all);
  m.impl("any.dim", any_dim);
  m.impl("arange.start_out", arange_out);
  m.impl("argmax", argmax);
  m.impl("argmin", argmin);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("bitwise_and.Tensor", bitwise_and);
  m.impl("bitwise_and.Tensor_out", bitwise_and_out);
  m.impl("bitwise_and_.Tensor", bitwise_and_);
  m.impl("bitwise_not", bitwise_not);
  m.impl("bitwise_not.out", bitwise_not_out);
  m.impl("bitwise_not_", bitwise_not_);
  m.impl("bitwise_or.Tensor", bitwise_or);
  m.impl("bitwise_or.Tensor_out", bitwise_or_out);
  m.impl("bitwise_or_.Tensor", bitwise_or_);
  m.impl("bitwise_xor.Tensor", bitwise_xor);
  m.impl("bitwise_xor.Tensor_out", bitwise_xor_out);
  m.impl("bitwise_xor_.Tensor", bitwise_xor_);
  m.impl("bmm", bmm);
  m.impl("cat", cat);
  m.impl("cat.out", cat_out);
  m.impl("ceil", ceil);
  m.impl("ceil.out", ceil_out);
  m.impl("ceil_", ceil_);
  m.impl("clamp", clamp);
  m.impl("cos", cos);
  m.impl("cos.out", cos_out);
  m.impl("cos_", cos_);
  m.impl("div.Tensor", div);
  m.impl("div.out", div_out);
  m.impl("div_.Tensor", div_);
  m.impl("embedding_dense_backward", embedding_dense_backward);
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  TPU_REGISTER_COMPARE(eq)
  m.impl("erf", erf);
  m.impl("erf.out", erf_out);
  m.impl("erf_", erf_);
  m.impl("exp", exp);
  m.impl("exp.out", exp_out);
  m.impl("exp_", exp_);
  m.impl("expm1", expm1);
  m.impl("expm1.out", expm1_out);
  m.impl("expm1_", expm1_);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("floor", floor);
  m.impl("floor.out", floor_out);
  m.impl("floor_", floor_);
  m.impl("gather", gather);
  TPU_REGISTER_COMPARE(ge)
  m.impl("gelu", gelu);
  m.impl("gelu_backward", gelu_backward);
  TPU_REGISTER_COMPARE(gt)
  m.impl("index_select", index_select);
  TPU_REGISTER_COMPARE(le)
  m.impl("lerp_.Scalar", lerp_scalar_);
  m.impl("linalg_vector_norm", linalg_vector_norm);
  m.impl("log", log);
  m.impl("log.out", log_out);
  m.impl("log1p", log1p);
  m.impl("log1p.out", log1p_out);
  m.impl("log1p_", log1p_);
  m.impl("log_", log_);
  m.impl("logical_and", logical_and);
  m.impl("logical_and.out", logical_and_out);
  m.impl("logical_and_", logical_and_);
  m.impl("logical_not", logical_not);
  m.impl("logical_not.out", logical_not_out);
  m.impl("logical_not_", logical_not_);
  m.impl("logical_or", logical_or);
  m.impl("logical_or.out", logical_or_out);
  m.impl("logical_or_", logical_or_);
  m.impl("logical_xor", logical_xor);
  m.impl("logical_xor.out", logical_xor_out);
  m.impl("logical_xor_", logical_xor_);
  TPU_REGISTER_COMPARE(lt)
  m.impl("masked_fill_.Scalar", masked_fill_scalar_);
  m.impl("masked_fill_.Tensor", masked_fill_tensor_);
  m.impl("max", max_all);
  m.impl("max.dim", max_dim);
  m.impl("maximum", maximum);
  m.impl("maximum.out", maximum_out);
  m.impl("mean.dim", mean_dim);
  m.impl("min", min_all);
  m.impl("min.dim", min_dim);
  m.impl("minimum", minimum);
  m.impl("minimum.out", minimum_out);
  m.impl("mm", mm);
  m.impl("mse_loss", mse_loss);
  m.impl("mse_loss_backward", mse_loss_backward);
  m.impl("mul.Tensor", mul);
  m.impl("mul.out", mul_out);
  m.impl("mul_.Tensor", mul_);
  m.impl("native_dropout", native_dropout);
  m.impl("native_dropout_backward", native_dropout_backward);
  m.impl("native_layer_norm", native_layer_norm);
  m.impl("native_layer_norm_backward", native_layer_norm_backward);
  TPU_REGISTER_COMPARE(ne)
  m.impl("neg", neg);
  m.impl("neg.out", neg_out);
  m.impl("neg_", neg_);
  m.impl("nll_loss_backward", nll_loss_backward);
  m.impl("nll_loss_forward", nll_loss_forward);
  m.impl("normal_", normal_);
  m.impl("pow.Tensor_Scalar", pow_tensor_scalar);
  m.impl("pow.Tensor_Scalar_out", pow_tensor_scalar_out);
  m.impl("pow.Tensor_Tensor", pow);
  m.impl("pow.Tensor_Tensor_out", pow_out);
  m.impl("pow_.Scalar", pow_tensor_scalar_);
  m.impl("pow_.Tensor", pow_);
  m.impl("random_", random_);
  m.impl("random_.from", random_from);
  m.impl("random_.to", random_to);
  m.impl("reciprocal", reciprocal);
  m.impl("reciprocal.out", reciprocal_out);
  m.impl("reciprocal_", reciprocal_);
  m.impl("relu", relu);
  m.impl("relu_", relu_);
  m.impl("resize_", resize_);
  m.impl("round", round);
  m.impl("round.out", round_out);
  m.impl("round_", round_);
  m.impl("rsqrt", rsqrt);
  m.impl("rsqrt.out", rsqrt_out);
  m.impl("rsqrt_", rsqrt_);
  m.impl("scatter.src", scatter_src);
  m.impl("scatter.src_out", scatter_src_out);
  m.impl("scatter_add", scatter_add);
  m.impl("scatter_add_", scatter_add_);
  m.impl("set_", set_empty);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("sgn", sign);  // real dtypes only: sgn equals sign
  m.impl("sgn.out", sign_out);
  m.impl("sgn_", sign_);
  m.impl("sigmoid", sigmoid);
  m.impl("sigmoid.out", sigmoid_out);
  m.impl("sigmoid_", sigmoid_);
  m.impl("sigmoid_backward", sigmoid_backward);
  m.impl("sign", sign);
  m.impl("sign.out", sign_out);
  m.impl("sign_", sign_);
  m.impl("silu", silu);
  m.impl("silu.out", silu_out);
  m.impl("silu_", silu_);
  m.impl("silu_backward", silu_backward);
  m.impl("sin", sin);
  m.impl("sin.out", sin_out);
  m.impl("sin_", sin_);
  m.impl("sqrt", sqrt);
  m.impl("sqrt.out", sqrt_out);
  m.impl("sqrt_", sqrt_);
  m.impl("std.correction", std_correction);
  m.impl("sub.Tensor", sub);
  m.impl("sub.out", sub_out);
  m.impl("sub_.Tensor", sub_);
  m.impl("sum.dim_IntList", sum_dim);
  m.impl("tanh", tanh);
  m.impl("tanh.out", tanh_out);
  m.impl("tanh_", tanh_);
  m.impl("tanh_backward", tanh_backward);
  m.impl("threshold_backward", threshold_backward);
  m.impl("trunc", trunc);
  m.impl("trunc.out", trunc_out);
  m.impl("trunc_", trunc_);
  m.impl("unfold", at::native::unfold);
  m.impl("uniform_", uniform_);
  m.impl("var.correction", var_correction);
  m.impl("view", at::native::view);
  m.impl("where.self", where_self);
  m.impl("zero_", zero_);
#undef TPU_REGISTER_COMPARE
}

}  // namespace torch_tpu::aten
