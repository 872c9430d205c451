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

}  // namespace

// Gates (i, f, g, o); workspace: the activated gates, [batch, 4 * hidden].
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(const at::Tensor& input_gates,
                                                                    const at::Tensor& hidden_gates,
                                                                    const at::Tensor& cx,
                                                                    const std::optional<at::Tensor>& input_bias,
                                                                    const std::optional<at::Tensor>& hidden_bias) {
  auto gates = (with_bias(input_gates, input_bias) + with_bias(hidden_gates, hidden_bias)).chunk(4, 1);
  at::Tensor i = gates[0].sigmoid(), f = gates[1].sigmoid(), g = gates[2].tanh(), o = gates[3].sigmoid();
  at::Tensor cy = f * cx + i * g;
  return {o * cy.tanh(), cy, at::cat({i, f, g, o}, 1)};
}

// Gates (r, z, n), the hidden bias inside n's reset product; workspace: r, z,
// n, hx and the hidden part of n, [batch, 5 * hidden].
std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                       const at::Tensor& hx,
                                                       const std::optional<at::Tensor>& input_bias,
                                                       const std::optional<at::Tensor>& hidden_bias) {
  auto in = with_bias(input_gates, input_bias).chunk(3, 1);
  auto hidden = with_bias(hidden_gates, hidden_bias).chunk(3, 1);
  at::Tensor r = (in[0] + hidden[0]).sigmoid(), z = (in[1] + hidden[1]).sigmoid();
  at::Tensor n = (in[2] + r * hidden[2]).tanh();
  return {n + z * (hx - n), at::cat({r, z, n, hx, hidden[2]}, 1)};
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_thnn_fused_gru_cell", thnn_fused_gru_cell);
  m.impl("_thnn_fused_lstm_cell", thnn_fused_lstm_cell);
}

}  // namespace torch_tpu::aten
