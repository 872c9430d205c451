// torch.autocast("tpu"): CUDA's cast policy, registered for the tpu device's
// autocast key (AutocastPrivateUse1). PyTorch registers kernels there for no
// backend, so without these autocast on tpu fails at the first op. The op
// lists are PyTorch's own (ATen/autocast_mode.h), the ones CUDA uses: matrix
// products and convolutions in the lower precision; softmax, norms, losses,
// exp/log/pow and sums in float32; mixed-dtype ops at the widest input type.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

// The op lists name these unqualified.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

// What CUDA says for the one op it refuses under autocast.
at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

}  // namespace

// Ops not listed run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TPU_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(TPU_LOWER_PRECISION_FP)
#define TPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(TPU_FP32)
#define TPU_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(TPU_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define TPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(TPU_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
}
