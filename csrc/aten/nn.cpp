// Neural-network kernels: losses, normalization, activations, dropout, and the
// indexing ops models lean on (cat, index_select, embedding backward).
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>

#include <functional>

#include "aten/kernels.h"
#include "aten/op.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

}  // namespace

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  TORCH_CHECK(self.dim() >= 1 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  int64_t n = self.dim() == 2 ? self.size(0) : 1;
  int64_t c = self.size(-1);
  TORCH_CHECK(self.dim() == 1 || target.size(0) == n, "Expected input batch_size (", n,
              ") to match target batch_size (", target.numel() ? target.size(0) : 0, ").");
  Op op("aten::nll_loss_forward");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  Value x = reshape(g, convert(g, op.in(self), accumulate_type(dt)), {n, c});
  Value t = reshape(g, convert(g, op.in(target), c10::kLong), {n, 1});
  Shape nc{n, c};
  Value onehot = compare(g, broadcast_to(g, t, nc), iota(g, c10::kLong, nc, 1), "EQ", c10::kLong);
  Value valid = compare(g, t, constant(g, ignore_index, c10::kLong, {n, 1}), "NE", c10::kLong);
  Value w = constant(g, 1.0, accumulate_type(dt), nc);
  if (weight && weight->defined()) w = broadcast_to(g, reshape(g, convert(g, op.in(*weight), accumulate_type(dt)), {1, c}), nc);
  Value zero = constant(g, 0.0, accumulate_type(dt), nc);
  Value picked_w = reduce(g, select(g, onehot, w, zero), {1}, ReduceKind::Sum);  // [n]
  picked_w = select(g, reshape(g, valid, {n}), picked_w, constant(g, 0.0, accumulate_type(dt), {n}));
  Value picked = reduce(g, select(g, onehot, x, zero), {1}, ReduceKind::Sum);
  Value losses = unary(g, "negate", binary(g, "multiply", picked, picked_w));
  Value total_weight = reduce(g, picked_w, {0}, ReduceKind::Sum);
  Value out;
  if (reduction == at::Reduction::None) {
    out = self.dim() == 2 ? losses : reshape(g, losses, {});
  } else {
    out = reduce(g, losses, {0}, ReduceKind::Sum);
    if (reduction == at::Reduction::Mean) out = binary(g, "divide", out, total_weight);
  }
  at::Tensor o = op.result(convert(g, out, dt));
  at::Tensor tw = op.result(convert(g, total_weight, dt));
  op.run();
  return {o, tw};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  int64_t n = self.dim() == 2 ? self.size(0) : 1;
  int64_t c = self.size(-1);
  Op op("aten::nll_loss_backward");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  auto acc = accumulate_type(dt);
  Shape nc{n, c};
  Value t = reshape(g, convert(g, op.in(target), c10::kLong), {n, 1});
  Value onehot = compare(g, broadcast_to(g, t, nc), iota(g, c10::kLong, nc, 1), "EQ", c10::kLong);
  Value valid = broadcast_to(g, compare(g, t, constant(g, ignore_index, c10::kLong, {n, 1}), "NE", c10::kLong), nc);
  Value w = constant(g, 1.0, acc, nc);
  if (weight && weight->defined()) w = broadcast_to(g, reshape(g, convert(g, op.in(*weight), acc), {1, c}), nc);
  Value go = convert(g, op.in(grad_output), acc);
  if (reduction == at::Reduction::None && self.dim() == 2) {
    go = broadcast_to(g, reshape(g, go, {n, 1}), nc);
  } else {
    go = reshape(g, go, {});
    if (reduction == at::Reduction::Mean) go = binary(g, "divide", go, convert(g, reshape(g, op.in(total_weight), {}), acc));
    go = broadcast_to(g, go, nc);
  }
  Value grad = unary(g, "negate", binary(g, "multiply", w, go));
  Value zero = constant(g, 0.0, acc, nc);
  grad = select(g, onehot, select(g, valid, grad, zero), zero);
  at::Tensor out = op.result(reshape(g, convert(g, grad, dt), shape_of(self)));
  op.run();
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, double eps) {
  int64_t axis = input.dim() - (int64_t)normalized_shape.size();
  TORCH_CHECK(axis >= 0 && input.sizes().slice(axis).equals(normalized_shape),
              "Given normalized_shape=", normalized_shape, ", expected input with shape [*, ",
              normalized_shape, "], but got input of size", input.sizes());
  Op op("aten::native_layer_norm");
  Graph& g = op.g();
  auto dt = input.scalar_type();
  auto acc = accumulate_type(dt);
  Shape s = shape_of(input);
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (int64_t d = axis; d < input.dim(); ++d) {
    dims.push_back(d);
    count *= s[d];
  }
  Shape kept = s;
  for (int64_t d : dims) kept[d] = 1;
  Value x = convert(g, op.in(input), acc);
  Value inv_n = constant(g, 1.0 / std::max<int64_t>(count, 1), acc, kept);
  Value mean = binary(g, "multiply", reshape(g, reduce(g, x, dims, ReduceKind::Sum), kept), inv_n);
  Value xc = binary(g, "subtract", x, broadcast_to(g, mean, s));
  Value var = binary(g, "multiply", reshape(g, reduce(g, binary(g, "multiply", xc, xc), dims, ReduceKind::Sum), kept), inv_n);
  Value rstd = unary(g, "rsqrt", binary(g, "add", var, broadcast_to(g, op.scalar(eps, acc), kept)));
  Value y = binary(g, "multiply", xc, broadcast_to(g, rstd, s));
  if (weight && weight->defined()) y = binary(g, "multiply", y, broadcast_to(g, convert(g, op.in(*weight), acc), s));
  if (bias && bias->defined()) y = binary(g, "add", y, broadcast_to(g, convert(g, op.in(*bias), acc), s));
  at::Tensor out = op.result(convert(g, y, dt));
  // The CPU kernel returns the statistics in the input's dtype.
  at::Tensor mean_t = op.result(convert(g, mean, dt));
  at::Tensor rstd_t = op.result(convert(g, rstd, dt));
  op.run();
  return {out, mean_t, rstd_t};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask) {
  int64_t axis = input.dim() - (int64_t)normalized_shape.size();
  Op op("aten::native_layer_norm_backward");
  Graph& g = op.g();
  auto dt = input.scalar_type();
  auto acc = accumulate_type(dt);
  Shape s = shape_of(input);
  std::vector<int64_t> norm_dims, batch_dims;
  int64_t count = 1;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d >= axis) {
      norm_dims.push_back(d);
      count *= s[d];
    } else {
      batch_dims.push_back(d);
    }
  }
  Shape kept = s;
  for (int64_t d : norm_dims) kept[d] = 1;
  Value x = convert(g, op.in(input), acc);
  Value go = convert(g, op.in(grad_out), acc);
  Value mu = broadcast_to(g, reshape(g, convert(g, op.in(mean), acc), kept), s);
  Value rs = broadcast_to(g, reshape(g, convert(g, op.in(rstd), acc), kept), s);
  Value xhat = binary(g, "multiply", binary(g, "subtract", x, mu), rs);
  at::Tensor gi, gw, gb;
  if (output_mask[0]) {
    Value gxhat = go;
    if (weight && weight->defined()) gxhat = binary(g, "multiply", go, broadcast_to(g, convert(g, op.in(*weight), acc), s));
    Value inv_n = constant(g, 1.0 / std::max<int64_t>(count, 1), acc, kept);
    Value m1 = broadcast_to(g, binary(g, "multiply", reshape(g, reduce(g, gxhat, norm_dims, ReduceKind::Sum), kept), inv_n), s);
    Value m2 = broadcast_to(g, binary(g, "multiply", reshape(g, reduce(g, binary(g, "multiply", gxhat, xhat), norm_dims,
                                                                        ReduceKind::Sum), kept), inv_n), s);
    Value r = binary(g, "multiply", rs, binary(g, "subtract", binary(g, "subtract", gxhat, m1), binary(g, "multiply", xhat, m2)));
    gi = op.result(convert(g, r, dt));
  }
  if (output_mask[1] && weight && weight->defined()) {
    gw = op.result(convert(g, reshape(g, reduce(g, binary(g, "multiply", go, xhat), batch_dims, ReduceKind::Sum),
                                      shape_of(*weight)), weight->scalar_type()));
  }
  if (output_mask[2] && bias && bias->defined()) {
    gb = op.result(convert(g, reshape(g, reduce(g, go, batch_dims, ReduceKind::Sum), shape_of(*bias)), bias->scalar_type()));
  }
  op.run();
  return {gi, gw, gb};
}

namespace {
// Batch norm over every dimension but 1 (the channels).
struct ChannelLayout {
  Shape shape, per_channel;  // input shape; channel statistics shape
  std::vector<int64_t> reduce_dims;
  int64_t count = 1;  // elements per channel
};

ChannelLayout channel_layout(const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dimensions, got ", input.dim());
  ChannelLayout l;
  l.shape = shape_of(input);
  l.per_channel = {l.shape[1]};
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d != 1) l.reduce_dims.push_back(d), l.count *= l.shape[d];
  }
  return l;
}

Value per_channel(Graph& g, Value v, const Shape& shape) { return broadcast_in_dim(g, v, shape, {1}); }

bool defined(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_forward(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  ChannelLayout l = channel_layout(input);
  TORCH_CHECK(training || (defined(running_mean) && defined(running_var)),
              "running_mean and running_var must be defined in evaluation mode");
  TORCH_CHECK(!training || l.count > 1, "Expected more than 1 value per channel when training, got input size ",
              input.sizes());
  Op op("aten::native_batch_norm");
  Graph& g = op.g();
  auto dt = input.scalar_type(), acc = accumulate_type(dt);
  // Statistics keep the running buffers' dtype (float32 for a half model with float buffers).
  auto stat_dt = defined(running_mean) ? running_mean->scalar_type() : dt;
  Value x = convert(g, op.in(input), acc);
  Value mean, var;
  if (training) {
    Value inv_n = constant(g, 1.0 / l.count, acc, l.per_channel);
    mean = binary(g, "multiply", reduce(g, x, l.reduce_dims, ReduceKind::Sum), inv_n);
    Value xc = binary(g, "subtract", x, per_channel(g, mean, l.shape));
    var = binary(g, "multiply", reduce(g, binary(g, "multiply", xc, xc), l.reduce_dims, ReduceKind::Sum), inv_n);
    if (defined(running_mean) && defined(running_var)) {
      Value m = constant(g, momentum, acc, l.per_channel), keep = constant(g, 1.0 - momentum, acc, l.per_channel);
      Value unbiased = binary(g, "multiply", var, constant(g, double(l.count) / double(l.count - 1), acc, l.per_channel));
      Value rm = binary(g, "add", binary(g, "multiply", convert(g, op.in(*running_mean), acc), keep),
                        binary(g, "multiply", mean, m));
      Value rv = binary(g, "add", binary(g, "multiply", convert(g, op.in(*running_var), acc), keep),
                        binary(g, "multiply", unbiased, m));
      op.write(*running_mean, rm);
      op.write(*running_var, rv);
    }
  } else {
    mean = convert(g, op.in(*running_mean), acc);
    var = convert(g, op.in(*running_var), acc);
  }
  Value invstd = unary(g, "rsqrt", binary(g, "add", var, constant(g, eps, acc, l.per_channel)));
  Value y = binary(g, "multiply", binary(g, "subtract", x, per_channel(g, mean, l.shape)), per_channel(g, invstd, l.shape));
  if (defined(weight)) y = binary(g, "multiply", y, per_channel(g, convert(g, op.in(*weight), acc), l.shape));
  if (defined(bias)) y = binary(g, "add", y, per_channel(g, convert(g, op.in(*bias), acc), l.shape));
  at::Tensor out = op.result(convert(g, y, dt));
  at::Tensor save_mean, save_invstd;
  if (training) {
    save_mean = op.result(convert(g, mean, stat_dt));
    save_invstd = op.result(convert(g, invstd, stat_dt));
  }
  op.run();
  if (!training) {  // like the CPU kernel: nothing is saved in evaluation mode
    save_mean = at::empty({0}, input.options().dtype(stat_dt));
    save_invstd = at::empty({0}, input.options().dtype(stat_dt));
  }
  return {out, save_mean, save_invstd};
}
}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  return batch_norm_forward(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm_forward(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps) {
  return batch_norm_forward(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  auto [out, save_mean, save_invstd] =
      batch_norm_forward(input, weight, bias, running_mean, running_var, true, momentum, eps);
  return {out, save_mean, save_invstd, at::empty({0}, input.options().dtype(c10::kByte))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask) {
  ChannelLayout l = channel_layout(input);
  Op op("aten::native_batch_norm_backward");
  Graph& g = op.g();
  auto dt = input.scalar_type(), acc = accumulate_type(dt);
  Value x = convert(g, op.in(input), acc), dy = convert(g, op.in(grad_out), acc);
  Value mean, invstd;
  if (train) {
    mean = convert(g, op.in(*save_mean), acc);
    invstd = convert(g, op.in(*save_invstd), acc);
  } else {
    mean = convert(g, op.in(*running_mean), acc);
    invstd = unary(g, "rsqrt", binary(g, "add", convert(g, op.in(*running_var), acc),
                                      constant(g, eps, acc, l.per_channel)));
  }
  Value xhat = binary(g, "multiply", binary(g, "subtract", x, per_channel(g, mean, l.shape)), per_channel(g, invstd, l.shape));
  Value sum_dy = reduce(g, dy, l.reduce_dims, ReduceKind::Sum);
  Value sum_dy_xhat = reduce(g, binary(g, "multiply", dy, xhat), l.reduce_dims, ReduceKind::Sum);
  Value w = defined(weight) ? convert(g, op.in(*weight), acc) : constant(g, 1, acc, l.per_channel);
  at::Tensor gi, gw, gb;
  if (output_mask[0]) {
    Value scale = per_channel(g, binary(g, "multiply", w, invstd), l.shape);
    Value r;
    if (train) {
      Value inv_n = constant(g, 1.0 / l.count, acc, l.per_channel);
      Value mean_dy = per_channel(g, binary(g, "multiply", sum_dy, inv_n), l.shape);
      Value mean_dy_xhat = per_channel(g, binary(g, "multiply", sum_dy_xhat, inv_n), l.shape);
      r = binary(g, "multiply", scale,
                 binary(g, "subtract", binary(g, "subtract", dy, mean_dy), binary(g, "multiply", xhat, mean_dy_xhat)));
    } else {
      r = binary(g, "multiply", dy, scale);
    }
    gi = op.result(convert(g, r, dt));
  }
  auto param_dt = defined(weight) ? weight->scalar_type() : dt;
  if (output_mask[1]) gw = op.result(convert(g, sum_dy_xhat, param_dt));
  if (output_mask[2]) gb = op.result(convert(g, sum_dy, param_dt));
  op.run();
  return {gi, gw, gb};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& /*reserve*/) {
  return aten::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update,
                                    eps, output_mask);
}

namespace {
Value erf(Graph& g, Value x) { return g.add("chlo.erf", {x}, g.type(x)); }

// gelu and its derivative in float32 (or wider) for the given approximation.
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

Value gelu_grad(Graph& g, Value x, bool tanh_approx) {
  Value half = constant_like(g, x, 0.5), one = constant_like(g, x, 1.0);
  if (tanh_approx) {
    Value k = constant_like(g, x, 0.7978845608028654), c = constant_like(g, x, 0.044715);
    Value x2 = binary(g, "multiply", x, x);
    Value inner = binary(g, "multiply", k, binary(g, "add", x, binary(g, "multiply", c, binary(g, "multiply", x2, x))));
    Value th = unary(g, "tanh", inner);
    Value left = binary(g, "multiply", half, binary(g, "add", one, th));
    Value dinner = binary(g, "multiply", k, binary(g, "add", one, binary(g, "multiply", constant_like(g, x, 3 * 0.044715), x2)));
    Value right = binary(g, "multiply", binary(g, "multiply", half, x),
                         binary(g, "multiply", binary(g, "subtract", one, binary(g, "multiply", th, th)), dinner));
    return binary(g, "add", left, right);
  }
  Value cdf = binary(g, "multiply", half,
                     binary(g, "add", one, erf(g, binary(g, "multiply", x, constant_like(g, x, 0.7071067811865476)))));
  Value pdf = binary(g, "multiply", constant_like(g, x, 0.3989422804014327),
                     unary(g, "exponential", binary(g, "multiply", constant_like(g, x, -0.5), binary(g, "multiply", x, x))));
  return binary(g, "add", cdf, binary(g, "multiply", x, pdf));
}

bool parse_approximate(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}
}  // namespace

at::Tensor gelu(const at::Tensor& self, c10::string_view approximate) {
  bool tanh_approx = parse_approximate(approximate);
  Op op("aten::gelu");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(dt), "gelu is implemented for floating point dtypes, got ", dt);
  Value x = convert(g, op.in(self), accumulate_type(dt));
  at::Tensor out = op.result(convert(g, gelu_value(g, x, tanh_approx), dt));
  op.run();
  return out;
}

at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  bool tanh_approx = parse_approximate(approximate);
  Op op("aten::gelu_backward");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  Value x = convert(g, op.in(self), accumulate_type(dt));
  Value go = broadcast_to(g, convert(g, op.in(grad), accumulate_type(dt)), g.type(x).shape);
  at::Tensor out = op.result(convert(g, binary(g, "multiply", go, gelu_grad(g, x, tanh_approx)), dt));
  op.run();
  return out;
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  Op op("aten::native_dropout");
  Graph& g = op.g();
  Shape s = shape_of(input);
  auto dt = input.scalar_type();
  if (train.has_value() && !*train) {
    Value x = op.in(input);
    at::Tensor out = op.result(x);
    at::Tensor mask = op.result(constant(g, true, c10::kBool, s));
    op.run();
    return {out, mask};
  }
  Value u = uniform01(g, op.rng_state(std::nullopt, input), s, c10::kFloat);
  Value keep = compare(g, u, broadcast_to(g, op.scalar(p, c10::kFloat), s), "GE", c10::kFloat);
  double scale = p >= 1 ? 0.0 : 1.0 / (1.0 - p);
  Value x = convert(g, op.in(input), accumulate_type(dt));
  Value scaled = binary(g, "multiply", x, broadcast_to(g, op.scalar(scale, accumulate_type(dt)), s));
  Value out = select(g, keep, scaled, constant(g, 0.0, accumulate_type(dt), s));
  at::Tensor o = op.result(convert(g, out, dt));
  at::Tensor mask = op.result(keep);
  op.run();
  return {o, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  Op op("aten::native_dropout_backward");
  Graph& g = op.g();
  // grad * mask * scale: the double scale promotes integer gradients to the default float type.
  auto dt = at::result_type(grad_output, scale);
  Value go = convert(g, op.in(grad_output), dt);
  Shape s = g.type(go).shape;
  Value scaled = binary(g, "multiply", go, broadcast_to(g, op.scalar(scale, dt), s));
  at::Tensor out = op.result(select(g, convert(g, op.in(mask), c10::kBool), scaled, constant(g, 0, dt, s)));
  op.run();
  return out;
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  std::vector<at::Tensor> parts;
  at::Tensor first;
  for (const at::Tensor& t : tensors) {
    if (!first.defined()) first = t;
    // Legacy rule: 1-D empty tensors are skipped whatever the other shapes.
    if (t.dim() == 1 && t.numel() == 0) continue;
    parts.push_back(t);
  }
  TORCH_CHECK(first.defined(), "torch.cat(): expected a non-empty list of Tensors");
  if (parts.empty()) return at::empty({0}, first.options());
  dim = at::maybe_wrap_dim(dim, parts[0].dim());
  auto dt = parts[0].scalar_type();
  for (auto& t : parts) dt = at::promote_types(dt, t.scalar_type());
  for (auto& t : parts) {
    TORCH_CHECK(t.dim() == parts[0].dim(), "Tensors must have same number of dimensions: got ", parts[0].dim(),
                " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      TORCH_CHECK(d == dim || t.size(d) == parts[0].size(d), "Sizes of tensors must match except in dimension ", dim,
                  ". Expected size ", parts[0].size(d), " but got size ", t.size(d), " for tensor number 1 in the list.");
  }
  Op op("aten::cat");
  Graph& g = op.g();
  std::vector<Value> vals;
  for (auto& t : parts)
    if (t.numel() > 0) vals.push_back(convert(g, op.in(t), dt));
  Shape s = shape_of(parts[0]);
  s[dim] = 0;
  for (auto& t : parts) s[dim] += t.size(dim);
  Value r = vals.empty() ? constant(g, 0, dt, s) : concat(g, vals, dim);
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  at::Tensor r = torch_tpu::aten::cat(tensors, dim);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "gather(): Expected dtype int32/int64 for index");
  TORCH_CHECK(index.dim() == self.dim() || (self.dim() == 0 && index.dim() <= 1),
              "Index tensor must have the same number of dimensions as input tensor");
  Op op("aten::gather");
  Graph& g = op.g();
  Shape src = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape s = index.dim() == 0 ? Shape{1} : shape_of(index);
  if (index.numel() == 0) {
    at::Tensor out = op.result(constant(g, 0, self.scalar_type(), shape_of(index)));
    return out;
  }
  Value along = wrap_index(g, reshape(g, op.in(index), s), src[dim]);
  Value flat = reshape(g, op.in(self), {self.numel()});
  Value r = reshape(g, gather_flat(g, flat, flat_index_with(g, src, s, dim, along)), shape_of(index));
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

namespace {
// Scatters src (or the scalar `value` when src is undefined) into self along
// `dim`; `combine` merges with what is there (nullopt: replace).
at::Tensor scatter_impl(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& src, const c10::Scalar& value, std::optional<ReduceKind> combine) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, name,
              "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(!src.defined() || src.scalar_type() == self.scalar_type(), name,
              "(): Expected self.dtype to be equal to src.dtype");
  Op op(name);
  Graph& g = op.g();
  Shape dst = self.dim() == 0 ? Shape{1} : shape_of(self);
  Value base = reshape(g, op.in(self), {self.numel()});
  if (index.numel() == 0) {
    at::Tensor out = op.result(reshape(g, base, shape_of(self)));
    op.run();
    return out;
  }
  Shape s = index.dim() == 0 ? Shape{1} : shape_of(index);
  Value along = wrap_index(g, reshape(g, op.in(index), s), dst[dim]);
  Value updates;
  if (src.defined()) {
    // src may be larger than index: only its leading index-shaped block is used.
    updates = op.in(src);
    if (src.dim() > 0) {
      std::vector<int64_t> zeros(s.size(), 0), ones(s.size(), 1);
      updates = slice(g, updates, zeros, s, ones);
    }
    updates = reshape(g, updates, s);
  } else {
    updates = broadcast_to(g, op.scalar(value, self.scalar_type()), s);
  }
  Value flat_index = flat_index_with(g, dst, s, dim, along);
  Value r = combine ? scatter_flat(g, base, flat_index, updates, *combine) : scatter_flat(g, base, flat_index, updates, false);
  at::Tensor out = op.result(reshape(g, r, shape_of(self)));
  op.run();
  return out;
}

ReduceKind scatter_reduce_kind(c10::string_view reduce) {
  TORCH_CHECK(reduce == "add" || reduce == "multiply", "reduce argument must be either add or multiply.");
  return reduce == "add" ? ReduceKind::Sum : ReduceKind::Prod;
}
}  // namespace

at::Tensor scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return scatter_impl("aten::scatter_add", self, dim, index, src, 0, ReduceKind::Sum);
}

at::Tensor scatter_src(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return scatter_impl("aten::scatter", self, dim, index, src, 0, std::nullopt);
}

at::Tensor& scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return self.copy_(torch_tpu::aten::scatter_add(self, dim, index, src));
}

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  return write_out(out, scatter_src(self, dim, index, src));
}

at::Tensor scatter_value(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  return scatter_impl("aten::scatter", self, dim, index, at::Tensor(), value, std::nullopt);
}
at::Tensor scatter_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                          c10::string_view reduce) {
  return scatter_impl("aten::scatter", self, dim, index, src, 0, scatter_reduce_kind(reduce));
}
at::Tensor scatter_value_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value,
                                c10::string_view reduce) {
  return scatter_impl("aten::scatter", self, dim, index, at::Tensor(), value, scatter_reduce_kind(reduce));
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "index_select(): Expected dtype int32/int64 for index");
  Op op("aten::index_select");
  Graph& g = op.g();
  Shape src = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape s = src;
  s[dim] = index.numel();
  Value idx = wrap_index(g, reshape(g, op.in(index), {index.numel()}), src[dim]);
  std::vector<int64_t> dims{dim};
  Value along = broadcast_in_dim(g, idx, s, dims);
  Value flat = reshape(g, op.in(self), {self.numel()});
  Value r = gather_flat(g, flat, flat_index_with(g, src, s, dim, along));
  if (self.dim() == 0) r = reshape(g, r, {});
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  TORCH_CHECK(!scale_grad_by_freq, "tpu: embedding backward with scale_grad_by_freq is not lowered");
  int64_t n = indices.numel();
  int64_t d = grad_output.size(-1);
  Op op("aten::embedding_dense_backward");
  Graph& g = op.g();
  auto dt = grad_output.scalar_type();
  auto acc = accumulate_type(dt);
  Value idx = reshape(g, convert(g, op.in(indices), c10::kLong), {n, 1});
  Value go = reshape(g, convert(g, op.in(grad_output), acc), {n, d});
  if (padding_idx >= 0) {
    Value keep = broadcast_to(g, compare(g, idx, constant(g, padding_idx, c10::kLong, {n, 1}), "NE", c10::kLong), {n, d});
    go = select(g, keep, go, constant(g, 0.0, acc, {n, d}));
  }
  Shape nd{n, d};
  Value flat_idx = binary(g, "add", binary(g, "multiply", broadcast_to(g, idx, nd), constant(g, d, c10::kLong, nd)),
                          iota(g, c10::kLong, nd, 1));
  Value zeros = constant(g, 0.0, acc, {num_weights * d});
  Value r = scatter_flat(g, zeros, flat_idx, go, true);
  at::Tensor out = op.result(convert(g, reshape(g, r, {num_weights, d}), dt));
  op.run();
  return out;
}

namespace {
// Shared by both masked_fill_ overloads; `value` makes the fill value as a 0-d value.
at::Tensor& masked_fill_with(at::Tensor& self, const at::Tensor& mask, const std::function<Value(Op&)>& value) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  Op op("aten::masked_fill_");
  Graph& g = op.g();
  Value x = op.in(self);
  Shape s = g.type(x).shape;
  Value m = broadcast_to(g, op.in(mask), s);
  Value v = broadcast_to(g, convert(g, value(op), self.scalar_type()), s);
  op.write(self, select(g, m, v, x));
  op.run();
  return self;
}
}  // namespace

at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  return masked_fill_with(self, mask, [&](Op& op) { return op.scalar(value, self.scalar_type()); });
}

at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return masked_fill_with(self, mask, [&](Op& op) { return op.in(value); });
}


// glu: the first half of `dim` gated by the sigmoid of the second half.
at::Tensor glu(const at::Tensor& self, int64_t dim) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  int64_t n = self.size(dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", dim, " is size ", n);
  Op op("aten::glu");
  Graph& g = op.g();
  Value x = op.in(self);
  Value a = slice_dim(g, x, dim, 0, n / 2), b = slice_dim(g, x, dim, n / 2, n);
  at::Tensor out = op.result(binary(g, "multiply", a, unary(g, "logistic", b)));
  op.run();
  return out;
}

at::Tensor glu_backward(const at::Tensor& grad, const at::Tensor& self, int64_t dim) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  int64_t n = self.size(dim);
  Op op("aten::glu_backward");
  Graph& g = op.g();
  Value x = op.in(self), dy = op.in(grad);
  Value a = slice_dim(g, x, dim, 0, n / 2), b = slice_dim(g, x, dim, n / 2, n);
  Value s = unary(g, "logistic", b);
  Value da = binary(g, "multiply", dy, s);
  Value db = binary(g, "multiply", binary(g, "multiply", da, a), binary(g, "subtract", constant_like(g, s, 1), s));
  at::Tensor out = op.result(concat(g, {da, db}, dim));
  op.run();
  return out;
}


// The 2-d (per-pixel) NLL loss is the 1-d one over (N*H*W, C) rows.
std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index) {
  TORCH_CHECK(self.dim() == 4 && target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got "
              "targets of dimension: ", target.dim());
  int64_t c = self.size(1);
  auto [out, total] = aten::nll_loss_forward(self.movedim(1, -1).reshape({-1, c}), target.reshape({-1}), weight,
                                            reduction, ignore_index);
  if (reduction == at::Reduction::None) out = out.reshape(target.sizes());
  return {out, total};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  int64_t c = self.size(1);
  at::Tensor rows = self.movedim(1, -1).reshape({-1, c});
  at::Tensor go = reduction == at::Reduction::None ? grad_output.reshape({-1}) : grad_output;
  at::Tensor g = aten::nll_loss_backward(go, rows, target.reshape({-1}), weight, reduction, ignore_index, total_weight);
  at::DimVector moved{self.size(0), self.size(2), self.size(3), c};
  return g.reshape(moved).movedim(-1, 1).contiguous();
}

}  // namespace torch_tpu::aten
