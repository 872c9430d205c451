// The fused LSTM and GRU cells, which nn.LSTM, nn.GRU, nn.LSTMCell and
// nn.GRUCell call on an accelerator (PyTorch has no CPU kernel for them, so the
// CPU fallback cannot serve them). Each is a composition of tpu ops with the
// CUDA kernels' arithmetic and workspace layout; registered for
// AutogradPrivateUse1 too, so autograd differentiates through those ops rather
// than calling the fused backward, and fused mode fuses the whole cell.
#include <torch/library.h>

#include "aten/kernels.h"

namespace torch_tpu::aten {

namespace {

at::Tensor with_bias(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

// Half types compute in float32 and round the results once, as the CUDA kernels do.
at::Tensor widened(const at::Tensor& t) {
  return t.scalar_type() == c10::kHalf || t.scalar_type() == c10::kBFloat16 ? t.to(c10::kFloat) : t;
}

std::optional<at::Tensor> widened(const std::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined()) return t;
  return widened(*t);
}

}  // namespace

// Gates (i, f, g, o); workspace: the activated gates, [batch, 4 * hidden].
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(const at::Tensor& input_gates,
                                                                    const at::Tensor& hidden_gates,
                                                                    const at::Tensor& cx,
                                                                    const std::optional<at::Tensor>& input_bias,
                                                                    const std::optional<at::Tensor>& hidden_bias) {
  auto gates = (with_bias(widened(input_gates), widened(input_bias)) +
                with_bias(widened(hidden_gates), widened(hidden_bias)))
                   .chunk(4, 1);
  at::Tensor i = gates[0].sigmoid(), f = gates[1].sigmoid(), g = gates[2].tanh(), o = gates[3].sigmoid();
  at::Tensor cy = f * widened(cx) + i * g;
  auto dt = input_gates.scalar_type();
  return {(o * cy.tanh()).to(dt), cy.to(dt), at::cat({i, f, g, o}, 1).to(dt)};
}

// Gates (r, z, n), the hidden bias inside n's reset product; workspace: r, z,
// n, hx and the hidden part of n, [batch, 5 * hidden].
std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                       const at::Tensor& hx,
                                                       const std::optional<at::Tensor>& input_bias,
                                                       const std::optional<at::Tensor>& hidden_bias) {
  auto in = with_bias(widened(input_gates), widened(input_bias)).chunk(3, 1);
  auto hidden = with_bias(widened(hidden_gates), widened(hidden_bias)).chunk(3, 1);
  at::Tensor r = (in[0] + hidden[0]).sigmoid(), z = (in[1] + hidden[1]).sigmoid();
  at::Tensor n = (in[2] + r * hidden[2]).tanh();
  at::Tensor h = widened(hx);
  auto dt = input_gates.scalar_type();
  return {(n + z * (h - n)).to(dt), at::cat({r, z, n, h, hidden[2]}, 1).to(dt)};
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_thnn_fused_gru_cell", thnn_fused_gru_cell);
  m.impl("_thnn_fused_lstm_cell", thnn_fused_lstm_cell);
}

}  // namespace torch_tpu::aten
