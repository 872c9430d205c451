// Neural-network kernels: normalization, activations, dropout, distances,
// embedding bags, weight norm (losses are in loss.cpp).
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/nn.h"
#include "lowering/random.h"

namespace torch_tpu::aten {

using namespace lower;


std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, double eps) {
  TORCH_CHECK(!normalized_shape.empty(), "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
              "least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(!weight || !weight->defined() || weight->sizes().equals(normalized_shape), "Expected weight to be of same "
              "shape as normalized_shape, but got weight of shape ", weight->sizes(), " and normalized_shape = ",
              normalized_shape);
  TORCH_CHECK(!bias || !bias->defined() || bias->sizes().equals(normalized_shape), "Expected bias to be of same shape "
              "as normalized_shape, but got bias of shape ", bias->sizes(), " and normalized_shape = ", normalized_shape);
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

namespace {
// What group norm's forward and backward kernels share: the [N, G, C/G, HxW]
// view of the input's values, whatever its layout (PyTorch's composite views the
// input, which fails for channels_last), in the accumulation dtype.
struct GroupNormView {
  Op& op;
  Graph& g;
  int64_t group, per;
  c10::ScalarType acc;
  Shape s, stats;
  Value inv_count;

  GroupNormView(Op& op, const at::Tensor& input, int64_t n, int64_t c, int64_t hw, int64_t group)
      : op(op), g(op.g()), group(group), per(c / group), acc(accumulate_type(input.scalar_type())),
        s{n, group, per, hw}, stats{n, group, 1, 1},
        inv_count(constant(g, 1.0 / std::max<int64_t>(per * hw, 1), acc, stats)) {}

  Value view(const at::Tensor& t) { return reshape(g, convert(g, op.in(t), acc), s); }
  // [N, G, 1, 1]: the mean of v over each group
  Value group_mean(Value v) {
    return binary(g, "multiply", reshape(g, reduce(g, v, {2, 3}, ReduceKind::Sum), stats), inv_count);
  }
  Value spread(Value per_group) { return broadcast_to(g, per_group, s); }
  Value per_channel(const at::Tensor& t) { return spread(reshape(g, convert(g, op.in(t), acc), {1, group, per, 1})); }
};
}  // namespace

// Group norm; the result keeps the input's memory format, as on CPU.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(const at::Tensor& input,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, c10::SymInt N,
                                                                 c10::SymInt C, c10::SymInt HxW, int64_t group,
                                                                 double eps) {
  const int64_t n = N.expect_int(), c = C.expect_int(), hw = HxW.expect_int();
  TORCH_CHECK(group > 0 && c % group == 0, "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == n * c * hw, "Expected input to have ", n * c * hw, " elements, but got ", input.numel());
  Op op("aten::native_group_norm");
  GroupNormView v(op, input, n, c, hw, group);
  Graph& g = v.g;
  auto dt = input.scalar_type();
  Value x = v.view(input);
  Value mean = v.group_mean(x);
  Value xc = binary(g, "subtract", x, v.spread(mean));
  Value var = v.group_mean(binary(g, "multiply", xc, xc));
  Value rstd = unary(g, "rsqrt", binary(g, "add", var, broadcast_to(g, op.scalar(eps, v.acc), v.stats)));
  Value y = binary(g, "multiply", xc, v.spread(rstd));
  if (weight && weight->defined()) y = binary(g, "multiply", y, v.per_channel(*weight));
  if (bias && bias->defined()) y = binary(g, "add", y, v.per_channel(*bias));
  at::Tensor out = op.result(convert(g, reshape(g, y, shape_of(input)), dt), input.suggest_memory_format());
  at::Tensor mean_t = op.result(convert(g, reshape(g, mean, {n, group}), dt));
  at::Tensor rstd_t = op.result(convert(g, reshape(g, rstd, {n, group}), dt));
  op.run();
  return {out, mean_t, rstd_t};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& rstd,
    const std::optional<at::Tensor>& weight, c10::SymInt N, c10::SymInt C, c10::SymInt HxW, int64_t group,
    std::array<bool, 3> output_mask) {
  const int64_t n = N.expect_int(), c = C.expect_int(), hw = HxW.expect_int();
  TORCH_CHECK(group > 0 && c % group == 0, "native_group_norm_backward: C (", c, ") must be divisible by group (",
              group, ")");
  Op op("aten::native_group_norm_backward");
  GroupNormView v(op, input, n, c, hw, group);
  Graph& g = v.g;
  auto dt = input.scalar_type();
  Value go = v.view(grad_out);
  auto stat = [&](const at::Tensor& t) { return v.spread(reshape(g, convert(g, op.in(t), v.acc), v.stats)); };
  Value rs = stat(rstd);
  Value xhat = binary(g, "multiply", binary(g, "subtract", v.view(input), stat(mean)), rs);
  bool has_weight = weight && weight->defined();
  at::Tensor gi, gw, gb;
  if (output_mask[0]) {
    Value gxhat = has_weight ? binary(g, "multiply", go, v.per_channel(*weight)) : go;
    auto mean_of = [&](Value x) { return v.spread(v.group_mean(x)); };
    Value r = binary(g, "multiply", rs,
                     binary(g, "subtract", binary(g, "subtract", gxhat, mean_of(gxhat)),
                            binary(g, "multiply", xhat, mean_of(binary(g, "multiply", gxhat, xhat)))));
    gi = op.result(convert(g, reshape(g, r, shape_of(input)), dt), input.suggest_memory_format());
  }
  if (output_mask[1] && has_weight)
    gw = op.result(convert(g, reshape(g, reduce(g, binary(g, "multiply", go, xhat), {0, 3}, ReduceKind::Sum), {c}),
                           weight->scalar_type()));
  if (output_mask[2] && has_weight)
    gb = op.result(convert(g, reshape(g, reduce(g, go, {0, 3}, ReduceKind::Sum), {c}), weight->scalar_type()));
  op.run();
  return {gi, gw, gb};
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
  at::Tensor out = op.result(convert(g, y, dt), input.suggest_memory_format());
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
    gi = op.result(convert(g, r, dt), input.suggest_memory_format());
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
  at::Tensor out = op.result(convert(g, gelu_backward_value(g, go, x, tanh_approx), dt));
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
  // In the input's layout, as on CPU (empty_like's).
  at::Tensor o = op.result_like(convert(g, out, dt), input);
  at::Tensor mask = op.result_like(keep, input);
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
  at::Tensor out = op.result_like(select(g, convert(g, op.in(mask), c10::kBool), scaled, constant(g, 0, dt, s)),
                                  grad_output);
  op.run();
  return out;
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

// --------------------------------------------------------------------------
// p-norm distances between rows (cdist, pdist) and their gradients, from the
// [B, P, R, M] differences.

namespace {

// x [*, P, M] read as [B, P, M] after broadcasting the batch dimensions to `batch`.
Value batched_rows(Op& op, const at::Tensor& x, const Shape& batch, c10::ScalarType acc) {
  Shape full = batch;
  full.push_back(x.size(-2));
  full.push_back(x.size(-1));
  Value v = broadcast_to(op.g(), convert(op.g(), op.in(x), acc), full);
  return reshape(op.g(), v, {numel_of(batch), x.size(-2), x.size(-1)});
}

Shape cdist_batch(const at::Tensor& x1, const at::Tensor& x2) {
  auto b = at::infer_size_dimvector(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  return Shape(b.begin(), b.end());
}

}  // namespace

at::Tensor _cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2 && x2.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  Shape batch = cdist_batch(x1, x2);
  Shape out = batch;
  out.push_back(x1.size(-2));
  out.push_back(x2.size(-2));
  if (numel_of(out) == 0) return at::empty(out, x1.options());
  if (x1.size(-1) == 0) return at::zeros(out, x1.options());
  Op op("aten::_cdist_forward");
  Graph& g = op.g();
  auto acc = accumulate_type(x1.scalar_type());
  Value d = pairwise_distance(g, batched_rows(op, x1, batch, acc), batched_rows(op, x2, batch, acc), p);
  at::Tensor result = op.result(convert(g, reshape(g, d, out), x1.scalar_type()));
  op.run();
  return result;
}

at::Tensor _cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                           const at::Tensor& cdist) {
  Shape batch = cdist_batch(x1, x2);
  if (x1.numel() == 0 || x2.numel() == 0 || grad.numel() == 0) return at::zeros_like(x1);
  Op op("aten::_cdist_backward");
  Graph& g = op.g();
  auto acc = accumulate_type(x1.scalar_type());
  const int64_t flat = numel_of(batch), rows1 = x1.size(-2), rows2 = x2.size(-2);
  Value gr = reshape(g, convert(g, op.in(grad), acc), {flat, rows1, rows2});
  Value dist = reshape(g, convert(g, op.in(cdist), acc), {flat, rows1, rows2});
  Value r = pairwise_distance_grad(g, gr, batched_rows(op, x1, batch, acc), batched_rows(op, x2, batch, acc), dist, p);
  Shape out = batch;
  out.push_back(rows1);
  out.push_back(x1.size(-1));
  at::Tensor result = op.result(convert(g, reshape(g, r, out), x1.scalar_type()));
  op.run();
  return result.sum_to_size(x1.sizes());
}

at::Tensor _pdist_forward(const at::Tensor& self, double p) {
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = self.size(0), pairs = n * (n - 1) / 2;
  if (pairs == 0) return at::empty({0}, self.options());
  if (self.size(1) == 0) return at::zeros({pairs}, self.options());
  // The (i < j) pairs in row-major order, as flat positions of the n x n matrix.
  at::Tensor ij = at::triu_indices(n, n, 1);
  at::Tensor flat_pairs = (ij[0] * n + ij[1]).to(self.device());
  Op op("aten::_pdist_forward");
  Graph& g = op.g();
  auto acc = accumulate_type(self.scalar_type());
  Value x = reshape(g, convert(g, op.in(self), acc), {1, n, self.size(1)});
  Value d = reshape(g, pairwise_distance(g, x, x, p), {n * n});
  at::Tensor result = op.result(convert(g, gather_flat(g, d, op.in(flat_pairs)), self.scalar_type()));
  op.run();
  return result;
}

at::Tensor _pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist) {
  const int64_t n = self.size(0), m = self.size(1);
  if (n < 2 || m == 0) return at::zeros_like(self);
  at::Tensor ij = at::triu_indices(n, n, 1);
  at::Tensor upper = (ij[0] * n + ij[1]).to(self.device()), lower = (ij[1] * n + ij[0]).to(self.device());
  Op op("aten::_pdist_backward");
  Graph& g = op.g();
  auto acc = accumulate_type(self.scalar_type());
  // Both (i, j) and (j, i) carry the pair's gradient and distance.
  auto symmetric = [&](const at::Tensor& t) {
    Value v = convert(g, op.in(t), acc);
    Value m2 = scatter_flat(g, constant(g, 0, acc, {n * n}), op.in(upper), v, false);
    return reshape(g, scatter_flat(g, m2, op.in(lower), v, false), {1, n, n});
  };
  Value x = reshape(g, convert(g, op.in(self), acc), {1, n, m});
  Value r = pairwise_distance_grad(g, symmetric(grad), x, x, symmetric(pdist), p);
  at::Tensor result = op.result(convert(g, reshape(g, r, {n, m}), self.scalar_type()));
  op.run();
  return result;
}

// --------------------------------------------------------------------------
// embedding_bag: bag b reduces the weight rows of indices[offsets[b] :
// offsets[b + 1]] (sum, mean or max), skipping padding_idx. Besides the
// output it returns what its backward reads: the bag of every index, the
// bag sizes and, for max, the weight row chosen per bag and feature.

namespace {

struct Bags {
  int64_t count = 0;  // number of bags
  Value bag;          // int64 [I]: the bag of each index (count for none)
  Value valid;        // bool [I]: in a bag and not padding
};

Bags bags_of(Op& op, const at::Tensor& indices, const at::Tensor& offsets, bool include_last_offset,
             int64_t padding_idx) {
  Graph& g = op.g();
  const int64_t n = indices.numel(), o = offsets.numel();
  Bags b;
  b.count = include_last_offset ? o - 1 : o;
  Value off = convert(g, op.in(offsets), c10::kLong);
  Value idx = convert(g, op.in(indices), c10::kLong);
  Value position = iota(g, c10::kLong, {n}, 0);
  // Bag ends: the next offset, the last one (include_last_offset) or the end of indices.
  Value ends = b.count > 1 ? slice(g, off, {1}, {b.count}, {1}) : constant(g, 0, c10::kLong, {0});
  Value last = include_last_offset ? slice(g, off, {o - 1}, {o}, {1}) : constant(g, n, c10::kLong, {1});
  ends = concat(g, {ends, last}, 0);
  const Shape grid{n, b.count};
  Value passed = compare(g, broadcast_in_dim(g, ends, grid, {1}), broadcast_in_dim(g, position, grid, {0}), "LE",
                         c10::kLong);
  b.bag = reduce(g, convert(g, passed, c10::kLong), {1}, ReduceKind::Sum);
  Value first = slice(g, off, {0}, {1}, {1});
  Value in_bag = binary(g, "and", compare(g, b.bag, constant(g, b.count, c10::kLong, {n}), "LT", c10::kLong),
                        compare(g, position, broadcast_in_dim(g, reshape(g, first, {}), {n}, {}), "GE", c10::kLong));
  b.bag = select(g, in_bag, b.bag, constant(g, b.count, c10::kLong, {n}));
  b.valid = padding_idx >= 0 ? binary(g, "and", in_bag, compare(g, idx, constant(g, padding_idx, c10::kLong, {n}), "NE",
                                                                     c10::kLong))
                             : in_bag;
  return b;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx) {
  // CPU's checks, in its order and words.
  TORCH_CHECK(indices.dim() == 1 || indices.dim() == 2, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ",
              indices.dim());
  if (indices.dim() == 1)
    TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  TORCH_CHECK(indices.dim() == 1 && offsets.dim() == 1, "embedding_bag: indices and offsets must be 1D");
  TORCH_CHECK(mode >= 0 && mode <= 2, "embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max)");
  TORCH_CHECK(!include_last_offset || offsets.numel() >= 1, "embedding_bag: include_last_offset needs at least one offset");
  bool weighted = per_sample_weights && per_sample_weights->defined();
  TORCH_CHECK(!weighted || mode == 0, "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
              "supported for mode='sum' (got mode='", mode == 1 ? "mean" : "max", "'). Please open a feature request "
              "on GitHub.");
  const int64_t n = indices.numel(), d = weight.size(1), v = weight.size(0);
  if (padding_idx < 0 && padding_idx != -1) padding_idx += v;
  Op op("aten::_embedding_bag");
  Graph& g = op.g();
  auto dt = weight.scalar_type(), acc = accumulate_type(dt);
  Bags b = bags_of(op, indices, offsets, include_last_offset, padding_idx);
  const int64_t count = b.count;
  Value given = convert(g, op.in(indices), c10::kLong);
  check_index_values(
      op, indices, given, 0, v,
      [](int64_t bad) {
        return "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be " + std::to_string(bad);
      },
      /*index_error=*/false, "embedding_bag: Expected idx >= 0 && idx < num_embeddings (a tpu index tensor held an "
      "index outside [0, " + std::to_string(v) + "))");
  const Shape nd{n, d};
  Value idx = binary(g, "minimum", binary(g, "maximum", given, constant(g, 0, c10::kLong, {n})),
                     constant(g, v - 1, c10::kLong, {n}));
  Value rows = gather_along(g, convert(g, op.in(weight), acc), 0, idx);  // [I, D]
  if (weighted) {
    // Each weighted row is rounded to the weight's dtype before the bag sums it, as a
    // multiply in that dtype would (PyTorch's reference for a weighted bag).
    rows = binary(g, "multiply", rows, broadcast_in_dim(g, convert(g, op.in(*per_sample_weights), acc), nd, {0}));
    if (acc != dt) rows = convert(g, convert(g, rows, dt), acc);
  }
  Value target = bag_feature_index(g, b.bag, b.valid, count, d);
  Value sizes = slice(g, scatter_flat(g, constant(g, 0, c10::kLong, {count + 1}), select(g, b.valid, b.bag,
                                      constant(g, count, c10::kLong, {n})), convert(g, b.valid, c10::kLong), true),
                      {0}, {count}, {1});
  const Shape bd{count, d};
  Value empty = broadcast_in_dim(g, compare(g, sizes, constant(g, 0, c10::kLong, {count}), "EQ", c10::kLong), bd, {0});
  Value out, max_indices = constant(g, 0, c10::kLong, {count});
  if (mode == 2) {
    Value best = scatter_flat(g, constant(g, reduce_identity(acc, ReduceKind::Max), acc, {(count + 1) * d}), target,
                              rows, ReduceKind::Max);
    out = reshape(g, slice(g, best, {0}, {count * d}, {1}), bd);
    // The first index reaching the maximum names the row the gradient goes to.
    Value hit = binary(g, "and", broadcast_in_dim(g, b.valid, nd, {0}), compare(g, rows, gather_flat(g, best, target), "EQ", acc));
    Value position = select(g, hit, iota(g, c10::kLong, nd, 0), constant(g, n, c10::kLong, nd));
    Value first = scatter_flat(g, constant(g, n, c10::kLong, {(count + 1) * d}), target, position, ReduceKind::Min);
    first = reshape(g, slice(g, first, {0}, {count * d}, {1}), bd);
    Value padded_idx = concat(g, {convert(g, op.in(indices), c10::kLong), constant(g, -1, c10::kLong, {1})}, 0);
    max_indices = select(g, empty, constant(g, -1, c10::kLong, bd), gather_flat(g, padded_idx, first));
  } else {
    Value sums = scatter_flat(g, constant(g, 0, acc, {(count + 1) * d}), target, rows, true);
    out = reshape(g, slice(g, sums, {0}, {count * d}, {1}), bd);
    if (mode == 1)
      out = binary(g, "divide", out, broadcast_in_dim(g, convert(g, binary(g, "maximum", sizes, constant(g, 1, c10::kLong, {count})), acc), bd, {0}));
  }
  out = select(g, empty, constant(g, 0, acc, bd), out);
  at::Tensor output = op.result(convert(g, out, dt));
  at::Tensor offset2bag = op.result(b.bag);
  at::Tensor bag_size = op.result(sizes);
  at::Tensor max_idx = op.result(max_indices);
  op.run();
  return {output, offset2bag, bag_size, max_idx};
}

at::Tensor _embedding_bag_dense_backward(const at::Tensor& grad, const at::Tensor& indices,
                                         const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                         const at::Tensor& maximum_indices, c10::SymInt num_weights,
                                         bool scale_grad_by_freq, int64_t mode,
                                         const std::optional<at::Tensor>& per_sample_weights, int64_t padding_idx) {
  const int64_t v = num_weights.expect_int(), n = indices.numel(), d = grad.size(1), count = grad.size(0);
  Op op("aten::_embedding_bag_dense_backward");
  Graph& g = op.g();
  auto dt = grad.scalar_type(), acc = accumulate_type(dt);
  Value gr = convert(g, op.in(grad), acc);
  Value idx = convert(g, op.in(indices), c10::kLong);
  Value result;
  if (mode == 2) {
    // Each (bag, feature) gradient goes to the row that won the maximum.
    const Shape bd{count, d};
    Value rows = convert(g, op.in(maximum_indices), c10::kLong);
    Value chosen = compare(g, rows, constant(g, 0, c10::kLong, bd), "GE", c10::kLong);
    Value target = binary(g, "add", binary(g, "multiply", select(g, chosen, rows, constant(g, v, c10::kLong, bd)),
                                           constant(g, d, c10::kLong, bd)), iota(g, c10::kLong, bd, 1));
    result = scatter_flat(g, constant(g, 0, acc, {(v + 1) * d}), target, gr, true);
  } else {
    const Shape nd{n, d};
    Value bag = convert(g, op.in(offset2bag), c10::kLong);
    Value valid = compare(g, bag, constant(g, count, c10::kLong, {n}), "LT", c10::kLong);
    if (padding_idx >= 0)
      valid = binary(g, "and", valid, compare(g, idx, constant(g, padding_idx, c10::kLong, {n}), "NE", c10::kLong));
    Value safe_bag = select(g, valid, bag, constant(g, 0, c10::kLong, {n}));
    Value contrib = gather_along(g, reshape(g, gr, {count, d}), 0, safe_bag);
    Value factor = convert(g, valid, acc);
    if (mode == 1) {
      Value sizes = convert(g, binary(g, "maximum", gather_flat(g, convert(g, op.in(bag_size), c10::kLong), safe_bag),
                                      constant(g, 1, c10::kLong, {n})), acc);
      factor = binary(g, "divide", factor, sizes);
    }
    if (per_sample_weights && per_sample_weights->defined())
      factor = binary(g, "multiply", factor, convert(g, op.in(*per_sample_weights), acc));
    if (scale_grad_by_freq) {
      Value counts = scatter_flat(g, constant(g, 0, acc, {v + 1}), select(g, valid, idx, constant(g, v, c10::kLong, {n})),
                                  constant(g, 1, acc, {n}), true);
      factor = binary(g, "divide", factor, binary(g, "maximum", gather_flat(g, counts, select(g, valid, idx, constant(g, v, c10::kLong, {n}))),
                                                  constant(g, 1, acc, {n})));
    }
    contrib = binary(g, "multiply", contrib, broadcast_in_dim(g, factor, nd, {0}));
    Value row = select(g, valid, idx, constant(g, v, c10::kLong, {n}));
    Value target = binary(g, "add", binary(g, "multiply", broadcast_in_dim(g, row, nd, {0}), constant(g, d, c10::kLong, nd)),
                          iota(g, c10::kLong, nd, 1));
    result = scatter_flat(g, constant(g, 0, acc, {(v + 1) * d}), target, contrib, true);
  }
  at::Tensor out = op.result(convert(g, reshape(g, slice(g, result, {0}, {v * d}, {1}), {v, d}), dt));
  op.run();
  return out;
}

at::Tensor _embedding_bag_per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight,
                                                      const at::Tensor& indices, const at::Tensor& offsets,
                                                      const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  TORCH_CHECK(mode == 0, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  const int64_t n = indices.numel(), d = weight.size(1), v = weight.size(0), count = grad.size(0);
  Op op("aten::_embedding_bag_per_sample_weights_backward");
  Graph& g = op.g();
  auto dt = grad.scalar_type(), acc = accumulate_type(dt);
  const Shape nd{n, d};
  Value idx = convert(g, op.in(indices), c10::kLong);
  Value bag = convert(g, op.in(offset2bag), c10::kLong);
  Value valid = compare(g, bag, constant(g, count, c10::kLong, {n}), "LT", c10::kLong);
  if (padding_idx >= 0)
    valid = binary(g, "and", valid, compare(g, idx, constant(g, padding_idx, c10::kLong, {n}), "NE", c10::kLong));
  auto row_of = [&](Value which, int64_t rows) {
    Value safe = binary(g, "minimum", binary(g, "maximum", which, constant(g, 0, c10::kLong, {n})),
                        constant(g, rows - 1, c10::kLong, {n}));
    return binary(g, "add", binary(g, "multiply", broadcast_in_dim(g, safe, nd, {0}), constant(g, d, c10::kLong, nd)),
                  iota(g, c10::kLong, nd, 1));
  };
  Value w = gather_flat(g, reshape(g, convert(g, op.in(weight), acc), {v * d}), row_of(idx, v));
  Value gr = gather_flat(g, reshape(g, convert(g, op.in(grad), acc), {count * d}), row_of(bag, count));
  Value products = binary(g, "multiply", w, gr);
  if (acc != dt) products = convert(g, convert(g, products, dt), acc);  // rounded as the forward's rows
  Value dotted = reduce(g, products, {1}, ReduceKind::Sum);
  at::Tensor out = op.result(convert(g, select(g, valid, dotted, constant(g, 0, acc, {n})), dt));
  op.run();
  return out;
}

at::Tensor _embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                                   const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                   const at::Tensor& maximum_indices, c10::SymInt num_weights, bool scale_grad_by_freq,
                                   int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights,
                                   int64_t padding_idx) {
  if (sparse)  // PyTorch's composite: a sparse COO gradient built from the dense per-index rows
    return at::_embedding_bag_sparse_backward_symint(grad, indices, offsets, offset2bag, bag_size, num_weights,
                                                     scale_grad_by_freq, mode, per_sample_weights, padding_idx);
  return torch_tpu::aten::_embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, maximum_indices,
                                                        num_weights, scale_grad_by_freq, mode, per_sample_weights,
                                                        padding_idx);
}

// Rows of `self` named by `indices` whose p-norm exceeds max_norm are scaled
// down to max_norm (PyTorch's factor max_norm / (norm + 1e-7)), in place.
at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm, double norm_type) {
  TORCH_CHECK(self.dim() == 2, "embedding_renorm_: weight must be 2-D");
  const int64_t v = self.size(0), d = self.size(1), n = indices.numel();
  if (n == 0) return self;
  Op op("aten::embedding_renorm_");
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  Value w = convert(g, op.in(self), acc);
  // Which rows are named (repeats count once).
  Value named = scatter_flat(g, constant(g, 0, c10::kInt, {v}), reshape(g, convert(g, op.in(indices), c10::kLong), {n}),
                             constant(g, 1, c10::kInt, {n}), ReduceKind::Max);
  Value a = unary(g, "abs", w);
  Value norm;
  if (std::isinf(norm_type)) {
    norm = reduce(g, a, {1}, norm_type > 0 ? ReduceKind::Max : ReduceKind::Min);
  } else if (norm_type == 1) {
    norm = reduce(g, a, {1}, ReduceKind::Sum);
  } else if (norm_type == 2) {
    norm = unary(g, "sqrt", reduce(g, binary(g, "multiply", a, a), {1}, ReduceKind::Sum));
  } else {
    Value s = reduce(g, binary(g, "power", a, constant(g, norm_type, acc, {v, d})), {1}, ReduceKind::Sum);
    norm = binary(g, "power", s, constant(g, 1.0 / norm_type, acc, {v}));
  }
  Value over = binary(g, "and", compare(g, named, constant(g, 0, c10::kInt, {v}), "NE", c10::kInt),
                      compare(g, norm, constant(g, max_norm, acc, {v}), "GT", acc));
  Value scale = select(g, over, binary(g, "divide", constant(g, max_norm, acc, {v}),
                                       binary(g, "add", norm, constant(g, 1e-7, acc, {v}))), constant(g, 1, acc, {v}));
  op.write(self, convert(g, binary(g, "multiply", w, broadcast_in_dim(g, scale, {v, d}, {0})), dt));
  op.run();
  return self;
}

// ---------------------------------------------------------------- weight norm
// w = v * g / ||v||, the 2-norm over every dimension but `dim` (0 or the last),
// which g's shape keeps; the norm is returned too (float for bfloat16 g, as the
// CPU and CUDA kernels keep it).

namespace {

struct WeightNormLayout {
  std::vector<int64_t> others;  // the dimensions the norm runs over
  Shape kept;                   // v's shape with 1 in those dimensions
};

WeightNormLayout weight_norm_layout(const at::Tensor& v, const at::Tensor& g, int64_t dim) {
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1, "fused kernels can only be applied for first or last dim");
  TORCH_CHECK(g.numel() == v.size(dim), "_weight_norm_interface: g has ", g.numel(), " elements, expected ",
              v.size(dim));
  WeightNormLayout l;
  l.kept = shape_of(v);
  for (int64_t d = 0; d < v.dim(); ++d) {
    if (d == dim) continue;
    l.others.push_back(d);
    l.kept[d] = 1;
  }
  return l;
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> weight_norm_interface(const at::Tensor& v, const at::Tensor& g, int64_t dim) {
  WeightNormLayout l = weight_norm_layout(v, g, dim);
  auto acc = accumulate_type(v.scalar_type());
  auto norm_dt = g.scalar_type() == c10::kBFloat16 ? c10::kFloat : g.scalar_type();
  Op op("aten::_weight_norm_interface");
  Graph& gr = op.g();
  Value x = convert(gr, op.in(v), acc);
  Value norm = reshape(gr, unary(gr, "sqrt", reduce(gr, binary(gr, "multiply", x, x), l.others, ReduceKind::Sum)),
                       l.kept);
  Value factor = binary(gr, "divide", reshape(gr, convert(gr, op.in(g), acc), l.kept), norm);
  Value w = binary(gr, "multiply", x, broadcast_to(gr, factor, shape_of(v)));
  at::Tensor out_w = op.result(convert(gr, w, v.scalar_type()));
  at::Tensor out_norm = op.result(reshape(gr, convert(gr, norm, norm_dt), shape_of(g)));
  op.run();
  return {out_w, out_norm};
}

std::tuple<at::Tensor, at::Tensor> weight_norm_interface_backward(const at::Tensor& grad_w, const at::Tensor& saved_v,
                                                                  const at::Tensor& saved_g,
                                                                  const at::Tensor& saved_norms, int64_t dim) {
  WeightNormLayout l = weight_norm_layout(saved_v, saved_g, dim);
  auto acc = accumulate_type(saved_v.scalar_type());
  Op op("aten::_weight_norm_interface_backward");
  Graph& gr = op.g();
  Shape vs = shape_of(saved_v);
  Value v = convert(gr, op.in(saved_v), acc), gw = convert(gr, op.in(grad_w), acc);
  Value norm = reshape(gr, convert(gr, op.in(saved_norms), acc), l.kept);
  Value gv = reshape(gr, convert(gr, op.in(saved_g), acc), l.kept);
  // grad_g = sum(grad_w * v) / norm; grad_v = g / norm * (grad_w - v * sum(grad_w * v) / norm^2).
  Value dot = reshape(gr, reduce(gr, binary(gr, "multiply", gw, v), l.others, ReduceKind::Sum), l.kept);
  Value grad_g = binary(gr, "divide", dot, norm);
  Value coeff = binary(gr, "divide", grad_g, norm);
  Value grad_v = binary(gr, "multiply", broadcast_to(gr, binary(gr, "divide", gv, norm), vs),
                        binary(gr, "subtract", gw, binary(gr, "multiply", v, broadcast_to(gr, coeff, vs))));
  at::Tensor out_v = op.result(convert(gr, grad_v, saved_v.scalar_type()));
  at::Tensor out_g = op.result(reshape(gr, convert(gr, grad_g, saved_g.scalar_type()), shape_of(saved_g)));
  op.run();
  return {out_v, out_g};
}

}  // namespace torch_tpu::aten
