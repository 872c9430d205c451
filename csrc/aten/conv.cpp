// Convolutions (1d/2d/3d, grouped, dilated, transposed) and their backward,
// as stablehlo.convolution; pooling (max with indices, average, adaptive
// average) and its backward, as windowed reductions. PyTorch routes every convolution of a backend
// without its own kernels through convolution_overrideable and
// convolution_backward_overrideable.
//
// A transposed convolution is a convolution of the input dilated by the
// stride with the kernel flipped and its in/out channels swapped; the weight
// gradient is a convolution of the input with the output gradient, grouped
// over the batch (batch_group_count) when the forward was grouped.
#include <array>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/conv.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

ConvParams conv_params(const at::Tensor& input, at::IntArrayRef stride, at::IntArrayRef padding,
                       at::IntArrayRef dilation, at::IntArrayRef output_padding, int64_t groups) {
  ConvParams p;
  p.spatial = input.dim() - 2;
  auto expand = [&](at::IntArrayRef v, int64_t fill) {
    std::vector<int64_t> out(p.spatial, fill);
    for (size_t i = 0; i < p.spatial; ++i) out[i] = v.empty() ? fill : v.size() == 1 ? v[0] : v[i];
    return out;
  };
  p.stride = expand(stride, 1);
  p.padding = expand(padding, 0);
  p.dilation = expand(dilation, 1);
  p.output_padding = expand(output_padding, 0);
  p.groups = groups;
  return p;
}

void check_conv(const at::Tensor& input, const at::Tensor& weight, const ConvParams& p, bool transposed) {
  TORCH_CHECK(input.dim() >= 3 && input.dim() <= 5, "tpu: convolution expects a batched 3-D, 4-D or 5-D input, got ",
              input.dim(), "-D");
  TORCH_CHECK(weight.dim() == input.dim(), "weight should have ", input.dim(), " dimensions, got ", weight.dim());
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.scalar_type(),
              ") and weight type (", weight.scalar_type(), ") should be the same");
  int64_t in_channels = transposed ? weight.size(0) : weight.size(1) * p.groups;
  TORCH_CHECK(input.size(1) == in_channels, "Given groups=", p.groups, ", weight of size ", weight.sizes(),
              ", expected input", input.sizes(), " to have ", in_channels, " channels, but got ", input.size(1),
              " channels instead");
}

// As the CPU's convolution: its output and gradients are channels_last when the input or the weight is.
at::MemoryFormat conv_memory_format(const at::Tensor& input, const at::Tensor& weight) {
  auto format = input.suggest_memory_format();
  return format != at::MemoryFormat::Contiguous ? format : weight.suggest_memory_format();
}

}  // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  ConvParams p = conv_params(input, stride, padding, dilation, output_padding, groups);
  check_conv(input, weight, p, transposed);
  Op op("aten::convolution");
  Graph& g = op.g();
  auto dt = input.scalar_type(), ct = accumulate_type(dt);
  Value r = conv_forward(g, convert(g, op.in(input), ct), convert(g, op.in(weight), ct), p, transposed);
  if (bias && bias->defined()) {
    Shape rs = g.type(r).shape;
    r = binary(g, "add", r, broadcast_in_dim(g, convert(g, op.in(*bias), ct), rs, {1}));
  }
  at::Tensor out = op.result(convert(g, r, dt), conv_memory_format(input, weight));
  op.run();
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  ConvParams p = conv_params(input, stride, padding, dilation, output_padding, groups);
  Op op("aten::convolution_backward");
  Graph& g = op.g();
  auto dt = input.scalar_type(), ct = accumulate_type(dt);
  Value x = convert(g, op.in(input), ct), w = convert(g, op.in(weight), ct), dy = convert(g, op.in(grad_output), ct);
  Shape xs = shape_of(input), ws = shape_of(weight);
  const auto format = conv_memory_format(input, weight);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    Value gi;
    if (!transposed) {
      // The transposed convolution of dy, with the output padding that restores x's size.
      ConvParams q = p;
      for (size_t i = 0; i < p.spatial; ++i) {
        int64_t natural = (g.type(dy).shape[i + 2] - 1) * p.stride[i] - 2 * p.padding[i] +
                          p.dilation[i] * (ws[i + 2] - 1) + 1;
        q.output_padding[i] = xs[i + 2] - natural;
      }
      gi = conv_forward(g, dy, w, q, true);
    } else {
      // An output padding of a stride or more leaves positions no input reached: drop them.
      gi = conv_forward(g, dy, w, p, false);
      for (size_t i = 0; i < p.spatial; ++i) {
        if (g.type(gi).shape[i + 2] != xs[i + 2]) gi = slice_dim(g, gi, i + 2, 0, xs[i + 2]);
      }
    }
    grad_input = op.result(convert(g, gi, dt), format);
  }
  if (output_mask[1]) {
    // A transposed convolution's weight gradient is the forward one with x and dy swapped.
    Value gw = transposed ? conv_weight_grad(g, dy, x, ws, p) : conv_weight_grad(g, x, dy, ws, p);
    grad_weight = op.result(convert(g, gw, dt), format);
  }
  if (output_mask[2]) {
    std::vector<int64_t> dims{0};
    for (size_t i = 0; i < p.spatial; ++i) dims.push_back(i + 2);
    grad_bias = op.result(convert(g, reduce(g, dy, dims, ReduceKind::Sum), dt));
  }
  op.run();
  return {grad_input, grad_weight, grad_bias};
}

// --------------------------------------------------------------------------
// Pooling. Inputs are (N, C, *spatial) or (C, *spatial); windows slide over
// the trailing `spatial` dimensions only.

namespace {

PoolParams pool_params(const char* name, const at::Tensor& self, size_t spatial, at::IntArrayRef kernel,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  TORCH_CHECK(self.dim() == (int64_t)spatial + 1 || self.dim() == (int64_t)spatial + 2, name, ": expected ",
              spatial + 1, "D or ", spatial + 2, "D input, but got ", self.sizes());
  PoolParams p;
  p.spatial = spatial;
  p.lead = self.dim() - spatial;
  auto expand = [&](at::IntArrayRef v, at::IntArrayRef fallback, int64_t fill) {
    at::IntArrayRef src = v.empty() ? fallback : v;
    std::vector<int64_t> out(spatial, fill);
    for (size_t i = 0; i < spatial && !src.empty(); ++i) out[i] = src.size() == 1 ? src[0] : src[i];
    return out;
  };
  p.kernel = expand(kernel, {}, 1);
  p.stride = expand(stride, kernel, 1);
  p.padding = expand(padding, {}, 0);
  p.dilation = expand(dilation, {}, 1);
  // PyTorch's order: the stride while computing the output shape, then the
  // other parameters, then the input's shape.
  for (size_t i = 0; i < spatial; ++i) TORCH_CHECK(p.stride[i] != 0, name, ": stride should not be zero");
  auto all_positive = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; });
  };
  TORCH_CHECK(all_positive(p.kernel), name, ": kernel size should be greater than zero, but got ", at::IntArrayRef(p.kernel));
  TORCH_CHECK(all_positive(p.stride), name, ": stride should be greater than zero, but got ", at::IntArrayRef(p.stride));
  TORCH_CHECK(all_positive(p.dilation), name, ": dilation should be greater than zero, but got ", at::IntArrayRef(p.dilation));
  // Every dimension but a batch one is non-empty.
  for (int64_t i = p.lead == 2 ? 1 : 0; i < self.dim(); ++i) {
    if (spatial == 3) {
      TORCH_CHECK(self.size(i) > 0, name, ": Expected input's non-batch dimensions to have positive length, but input "
                  "has a shape of ", self.sizes(), " and non-batch dimension ", self.size(i), " has length zero!");
    } else {
      TORCH_CHECK(self.size(i) > 0, name, ": Expected ", spatial + 1, "D or ", spatial + 2, "D (batch mode) tensor "
                  "with optional 0 dim batch size for input, but got: ", self.sizes());
    }
  }
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = self.size(p.lead + i), k = p.kernel[i], s = p.stride[i], pad = p.padding[i], d = p.dilation[i];
    TORCH_CHECK(pad >= 0, name, ": pad must be non-negative, but got pad: ", pad);
    TORCH_CHECK(pad <= k / 2, name, ": pad should be at most half of effective kernel size, but got pad=", pad,
                ", kernel_size=", k);
    int64_t span = d * (k - 1) + 1;
    int64_t numer = in + 2 * pad - span + (ceil_mode ? s - 1 : 0);
    int64_t out = (numer >= 0 ? numer / s : -((-numer + s - 1) / s)) + 1;
    // The last window must start inside the input or its left padding.
    if (ceil_mode && (out - 1) * s >= in + pad) --out;
    p.out.push_back(out);
    p.pad_hi.push_back(std::max<int64_t>((out - 1) * s + span - in - pad, 0));
  }
  if (std::any_of(p.out.begin(), p.out.end(), [](int64_t o) { return o <= 0; })) {
    auto sizes = [](int64_t planes, auto spatial_sizes) {
      std::string s = "(" + std::to_string(planes);
      for (int64_t v : spatial_sizes) s += "x" + std::to_string(v);
      return s + ")";
    };
    int64_t planes = self.size(p.lead - 1);
    TORCH_CHECK(false, name, ": Given input size: ", sizes(planes, self.sizes().slice(p.lead)),
                ". Calculated output size: ", sizes(planes, p.out), ". Output size is too small");
  }
  return p;
}

std::tuple<at::Tensor, at::Tensor> max_pool_with_indices(const char* name, size_t spatial, const at::Tensor& self,
                                                         at::IntArrayRef kernel, at::IntArrayRef stride,
                                                         at::IntArrayRef padding, at::IntArrayRef dilation,
                                                         bool ceil_mode) {
  if (spatial == 3 && self.dim() == 4) {
    // As on CPU: an unbatched channels-last input is pooled as a batch of one,
    // and its results keep the layout (which suggest_memory_format misses
    // for the unsqueezed input).
    auto cl = at::MemoryFormat::ChannelsLast3d;
    at::Tensor batch = self.unsqueeze(0);
    if (!batch.is_contiguous() && batch.is_contiguous(cl)) {
      auto [out, idx] = max_pool_with_indices(name, spatial, batch, kernel, stride, padding, dilation, ceil_mode);
      return {out.contiguous(cl).squeeze(0), idx.contiguous(cl).squeeze(0)};
    }
  }
  PoolParams p = pool_params(name, self, spatial, kernel, stride, padding, dilation, ceil_mode);
  Op op(name);
  Graph& g = op.g();
  Shape shape = shape_of(self);
  auto [values, indices] = reduce_window_argmax(g, op.in(self), plane_positions(g, shape, p.lead), full(p, p.kernel, 1),
                                                full(p, p.stride, 1), full(p, p.dilation, 1), full(p, p.padding, 0),
                                                full(p, p.pad_hi, 0));
  at::Tensor out = op.result(values, self.suggest_memory_format());
  at::Tensor idx = op.result(indices, self.suggest_memory_format());
  op.run();
  return {out, idx};
}

// Scatters each output gradient to the input position its index names.
at::Tensor max_pool_backward(const char* name, const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& indices, size_t spatial) {
  Op op(name);
  Graph& g = op.g();
  size_t lead = self.dim() - spatial;
  int64_t plane = 1;
  for (size_t d = lead; d < (size_t)self.dim(); ++d) plane *= self.size(d);
  Shape gs = shape_of(grad_output);
  // The plane each output element belongs to, times the plane size, plus its index.
  Value plane_start = constant(g, 0, c10::kLong, gs);
  int64_t stride = plane;
  for (size_t d = lead; d-- > 0;) {
    plane_start = binary(g, "add", plane_start,
                         binary(g, "multiply", iota(g, c10::kLong, gs, d), constant(g, stride, c10::kLong, gs)));
    stride *= gs[d];
  }
  Value flat_index = binary(g, "add", plane_start, convert(g, op.in(indices), c10::kLong));
  auto acc = accumulate_type(self.scalar_type());
  Value zeros = constant(g, 0, acc, {self.numel()});
  Value r = scatter_flat(g, zeros, flat_index, convert(g, op.in(grad_output), acc), true);
  at::Tensor out = op.result(convert(g, reshape(g, r, shape_of(self)), self.scalar_type()), self.suggest_memory_format());
  op.run();
  return out;
}

at::Tensor avg_pool(const char* name, size_t spatial, const at::Tensor& self, at::IntArrayRef kernel,
                    at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override) {
  TORCH_CHECK(!divisor_override || *divisor_override != 0, name, ": divisor must be not zero");
  PoolParams p = pool_params(name, self, spatial, kernel, stride, padding, {}, ceil_mode);
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  std::vector<int64_t> ones(self.dim(), 1);
  Value sum = reduce_window(g, convert(g, op.in(self), acc), ReduceKind::Sum, full(p, p.kernel, 1), full(p, p.stride, 1),
                            ones, full(p, p.padding, 0), full(p, p.pad_hi, 0));
  Shape out_shape = g.type(sum).shape;
  Value r = binary(g, "divide", sum, avg_divisor(g, p, shape_of(self), out_shape, count_include_pad, divisor_override, acc));
  at::Tensor out = op.result(convert(g, r, dt), self.suggest_memory_format());
  op.run();
  return out;
}

// The adjoint of a window sum: each input position collects the (already
// divided) gradients of the windows that cover it. The gradient is spread
// by the stride (interior padding) and summed over kernel-sized windows.
at::Tensor avg_pool_backward(const char* name, size_t spatial, const at::Tensor& grad_output, const at::Tensor& self,
                             at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor_override) {
  PoolParams p = pool_params(name, self, spatial, kernel, stride, padding, {}, ceil_mode);
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  Shape in_shape = shape_of(self), out_shape = shape_of(grad_output);
  Value scaled = binary(g, "divide", convert(g, op.in(grad_output), acc),
                        avg_divisor(g, p, in_shape, out_shape, count_include_pad, divisor_override, acc));
  std::vector<int64_t> lo(self.dim(), 0), hi(self.dim(), 0), interior(self.dim(), 0);
  for (size_t i = 0; i < spatial; ++i) {
    size_t d = p.lead + i;
    lo[d] = p.kernel[i] - 1 - p.padding[i];
    interior[d] = p.stride[i] - 1;
    int64_t spread = p.stride[i] * (out_shape[d] - 1) + 1;
    hi[d] = in_shape[d] + p.kernel[i] - 1 - lo[d] - spread;
  }
  Value spread = pad(g, scaled, 0, lo, hi, interior);
  std::vector<int64_t> ones(self.dim(), 1), zeros(self.dim(), 0);
  Value r = reduce_window(g, spread, ReduceKind::Sum, full(p, p.kernel, 1), ones, ones, zeros, zeros);
  at::Tensor out = op.result(convert(g, r, dt), self.suggest_memory_format());
  op.run();
  return out;
}

// The (values, int64 indices) of a max pool whose output is empty.
std::tuple<at::Tensor, at::Tensor> empty_values_and_indices(const at::Tensor& self, const Shape& shape) {
  return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(at::kLong))};
}

// The checks adaptive pooling makes on CPU and CUDA: floating inputs of
// spatial + 1 or + 2 dimensions, all but the batch one non-empty.
void check_adaptive_pool_input(const char* name, size_t spatial, const at::Tensor& self, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == spatial, name, ": output_size must be ", spatial, "-dimensional");
  TORCH_CHECK(self.dim() == (int64_t)spatial + 1 || self.dim() == (int64_t)spatial + 2, name, ": expected ",
              spatial + 1, "D or ", spatial + 2, "D input, but got ", self.sizes());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "\"", name, "\" not implemented for '",
              c10::toString(self.scalar_type()), "'");
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, name, ": Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ", self.sizes(), " with dimension ", i, " being empty");
  for (int64_t o : output_size)
    TORCH_CHECK(o >= 0, name, ": elements of output_size must be greater than or equal to 0 but got ", output_size);
}

// The backward of an adaptive pool refuses an empty gradient (an output size
// of zero), as on CPU and CUDA.
void check_adaptive_pool_grad(const char* name, const at::Tensor& grad_output) {
  for (int64_t i = 1; i < grad_output.dim(); ++i)
    TORCH_CHECK(grad_output.size(i) > 0, name, ": Expected grad_output to have non-zero size for non-batch "
                "dimensions, but grad_output has sizes ", grad_output.sizes(), " with dimension ", i, " being empty");
}

at::Tensor adaptive_avg_pool(const char* name, size_t spatial, const at::Tensor& self, at::IntArrayRef output_size) {
  check_adaptive_pool_input(name, spatial, self, output_size);
  size_t lead = self.dim() - spatial;
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  std::vector<Value> mats;
  for (size_t i = 0; i < spatial; ++i) mats.push_back(adaptive_matrix(g, self.size(lead + i), output_size[i], acc));
  at::Tensor out = op.result(convert(g, adaptive_apply(g, convert(g, op.in(self), acc), lead, mats, false), dt), self.suggest_memory_format());
  op.run();
  return out;
}

at::Tensor adaptive_avg_pool_backward(const char* name, size_t spatial, const at::Tensor& grad_output,
                                      const at::Tensor& self) {
  check_adaptive_pool_grad(name, grad_output);
  size_t lead = self.dim() - spatial;
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  std::vector<Value> mats;
  for (size_t i = 0; i < spatial; ++i)
    mats.push_back(adaptive_matrix(g, self.size(lead + i), grad_output.size(lead + i), acc));
  Value r = adaptive_apply(g, convert(g, op.in(grad_output), acc), lead, mats, true);
  at::Tensor out = op.result(convert(g, r, dt));
  op.run();
  return out;
}

// Adaptive max pooling: every output position gathers its bin
// [floor(o*in/out), ceil((o+1)*in/out)) per dimension, padded to the widest
// bin, and takes the first maximum in row-major order (PyTorch's scan order).
// The max of each window and its position in its plane: `position` (int64,
// shape lead dims + out_shape + window) names each window element's place in
// its plane (row-major over the spatial dims), `valid` which elements count.
std::tuple<at::Tensor, at::Tensor> max_over_windows(Op& op, const at::Tensor& self, size_t lead, const Shape& out_shape,
                                                    const std::vector<int64_t>& window_shape, Value position,
                                                    Value valid) {
  Graph& g = op.g();
  Shape in = shape_of(self);
  Shape gathered = out_shape;
  gathered.insert(gathered.end(), window_shape.begin(), window_shape.end());
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, gathered); };
  int64_t plane = 1;
  for (size_t i = lead; i < in.size(); ++i) plane *= in[i];
  Value flat = c(0);
  for (size_t d = 0; d < lead; ++d) flat = binary(g, "add", binary(g, "multiply", flat, c(in[d])), iota(g, c10::kLong, gathered, d));
  flat = binary(g, "add", binary(g, "multiply", flat, c(plane)), position);
  Value x = op.in(self);
  Value values = gather_flat(g, reshape(g, x, {self.numel()}), flat);
  values = select(g, valid, values, constant(g, reduce_identity(self.scalar_type(), ReduceKind::Max), self.scalar_type(), gathered));
  int64_t window = numel_of(window_shape);
  Shape windows = out_shape;
  windows.push_back(window);
  auto [best, choice] = arg_reduce(g, reshape(g, values, windows), (int64_t)windows.size() - 1, true);
  std::vector<int64_t> kept(out_shape.size());
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = (int64_t)i;
  Value chosen = select(g, compare(g, iota(g, c10::kLong, windows, windows.size() - 1),
                                   broadcast_in_dim(g, choice, windows, kept), "EQ", c10::kLong),
                        reshape(g, position, windows), constant(g, 0, c10::kLong, windows));
  at::Tensor out = op.result(best, self.suggest_memory_format());
  at::Tensor idx = op.result(reduce(g, chosen, {(int64_t)windows.size() - 1}, ReduceKind::Sum), self.suggest_memory_format());
  op.run();
  return {out, idx};
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool(const char* name, size_t spatial, const at::Tensor& self,
                                                     at::IntArrayRef output_size) {
  check_adaptive_pool_input(name, spatial, self, output_size);
  size_t lead = self.dim() - spatial;
  Shape in = shape_of(self);
  Shape gathered(in.begin(), in.begin() + lead), out_shape(in.begin(), in.begin() + lead);
  std::vector<int64_t> widest;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t n = in[lead + i], o = output_size[i], w = 0;
    for (int64_t k = 0; k < o; ++k) w = std::max(w, ((k + 1) * n + o - 1) / o - k * n / o);
    widest.push_back(w);
    gathered.push_back(o);
    out_shape.push_back(o);
  }
  if (numel_of(out_shape) == 0) return empty_values_and_indices(self, out_shape);
  gathered.insert(gathered.end(), widest.begin(), widest.end());
  Op op(name);
  Graph& g = op.g();
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, gathered); };
  Value position = c(0), valid = constant(g, true, c10::kBool, gathered);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t n = in[lead + i], o = output_size[i];
    Value bin = iota(g, c10::kLong, gathered, lead + i), offset = iota(g, c10::kLong, gathered, lead + spatial + i);
    Value start = binary(g, "divide", binary(g, "multiply", bin, c(n)), c(o));
    Value end = binary(g, "divide", binary(g, "add", binary(g, "multiply", binary(g, "add", bin, c(1)), c(n)), c(o - 1)),
                       c(o));
    Value source = binary(g, "add", start, offset);
    valid = binary(g, "and", valid, compare(g, source, end, "LT", c10::kLong));
    source = binary(g, "minimum", source, c(n - 1));
    position = binary(g, "add", binary(g, "multiply", position, c(n)), source);
  }
  return max_over_windows(op, self, lead, out_shape, widest, position, valid);
}

// fractional_max_pool: window j of spatial dim i starts at
// int((j + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1), the
// last one at in - k, with u the plane's random sample for that dim (PyTorch's
// CPU formula, in the input's dtype: half types round after each step).
std::tuple<at::Tensor, at::Tensor> fractional_max_pool(const char* name, size_t spatial, const at::Tensor& self,
                                                       at::IntArrayRef kernel, at::IntArrayRef output_size,
                                                       const at::Tensor& samples) {
  // CPU's checks and messages, in its order.
  TORCH_CHECK(kernel.size() == spatial, name, ": kernel_size must either be a single int or tuple of Ints");
  TORCH_CHECK(output_size.size() == spatial, name, ": output_size must either be a single int or tuple of Ints");
  TORCH_CHECK(self.dim() == (int64_t)spatial + 1 || self.dim() == (int64_t)spatial + 2, name, ": Expected ",
              spatial + 1, "D or ", spatial + 2, "D tensor, but got: ", self.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, name, ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
  size_t lead = self.dim() - spatial;
  int64_t batch = self.dim() == (int64_t)spatial + 2 ? self.size(0) : 1, channels = self.size(lead - 1);
  TORCH_CHECK(samples.scalar_type() == self.scalar_type(), name,
              ": Expect _random_samples to have the same dtype as input");
  TORCH_CHECK(samples.dim() == 3, name, ": Expect _random_samples to have 3 dimensions, got ", samples.dim());
  // As on CPU, samples beyond the batch are not used.
  TORCH_CHECK(samples.size(0) >= batch, name, ": Expect _random_samples.size(0) no less then input batch size.");
  TORCH_CHECK(samples.size(1) == channels, name, ": Expect _random_samples.size(1) equals to input channel size.");
  TORCH_CHECK(samples.size(2) == (int64_t)spatial, name, ": Expect _random_samples.size(2) equals to ", spatial,
              " got ", samples.size(2), ".");
  at::Tensor used = samples.narrow(0, 0, batch);
  Shape in = shape_of(self), out_shape(in.begin(), in.begin() + lead);
  for (size_t i = 0; i < spatial; ++i) {
    TORCH_CHECK(output_size[i] >= 0 && kernel[i] > 0, name, ": kernel_size must be positive and output_size ",
                "non-negative, but got kernel_size=", kernel, " and output_size=", output_size);
    const char* dim_name = i + 2 == spatial ? "height" : i + 1 == spatial ? "width" : "time";
    TORCH_CHECK(output_size[i] + kernel[i] - 1 <= in[lead + i], name, ": pool ", dim_name, " ", kernel[i],
                " too large relative to input ", dim_name, " ", in[lead + i], " for output ", dim_name, " ",
                output_size[i]);
    out_shape.push_back(output_size[i]);
  }
  if (numel_of(out_shape) == 0) return empty_values_and_indices(self, out_shape);
  std::vector<int64_t> window(kernel.begin(), kernel.end());
  Shape gathered = out_shape;
  gathered.insert(gathered.end(), window.begin(), window.end());
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type(), work = accumulate_type(dt);
  auto rounded = [&](Value v) { return work == dt ? v : convert(g, convert(g, v, dt), work); };
  std::vector<int64_t> plane_dims(lead);
  for (size_t d = 0; d < lead; ++d) plane_dims[d] = (int64_t)d;
  Shape per_plane(in.begin(), in.begin() + lead);
  per_plane.push_back((int64_t)spatial);
  Value u_all = convert(g, reshape(g, op.in(used), per_plane), work);
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, gathered); };
  Value position = c(0);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t n = in[lead + i], o = output_size[i], k = kernel[i];
    // 2-D samples are (w, h); 3-D ones (t, h, w).
    int64_t sample = spatial == 2 ? (int64_t)(spatial - 1 - i) : (int64_t)i;
    std::vector<int64_t> lo(per_plane.size(), 0), hi(per_plane.begin(), per_plane.end()), one(per_plane.size(), 1);
    lo.back() = sample;
    hi.back() = sample + 1;
    Shape plane_shape(per_plane.begin(), per_plane.end() - 1);
    Value u = broadcast_in_dim(g, reshape(g, slice(g, u_all, lo, hi, one), plane_shape), gathered, plane_dims);
    Value bin = iota(g, c10::kLong, gathered, lead + i);
    Value start = c(n - k);
    if (o > 1) {
      Value alpha = rounded(binary(g, "divide", rounded(constant(g, n - k, work, gathered)),
                                   rounded(constant(g, o - 1, work, gathered))));
      Value at_bin = rounded(binary(g, "multiply", rounded(binary(g, "add", rounded(convert(g, bin, work)), u)), alpha));
      Value at_zero = rounded(binary(g, "multiply", u, alpha));
      at_bin = convert(g, at_bin, c10::kLong);
      at_zero = convert(g, at_zero, c10::kLong);
      start = select(g, compare(g, bin, c(o - 1), "LT", c10::kLong), binary(g, "subtract", at_bin, at_zero), start);
    }
    Value source = binary(g, "add", start, iota(g, c10::kLong, gathered, lead + spatial + i));
    position = binary(g, "add", binary(g, "multiply", position, c(n)), source);
  }
  return max_over_windows(op, self, lead, out_shape, window, position, constant(g, true, c10::kBool, gathered));
}

// max_unpool: each value lands at the position its index names within its
// plane of the (zero) output.
at::Tensor max_unpool(const char* name, size_t spatial, const at::Tensor& self, const at::Tensor& indices,
                      at::IntArrayRef output_size) {
  TORCH_CHECK(indices.scalar_type() == at::kLong, name, ": elements in indices should be type int64 but got: ",
              indices.scalar_type());
  TORCH_CHECK(output_size.size() == spatial, name, ": There should be exactly ", spatial,
              " elements (height, width) in output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == (int64_t)spatial + 1 || self.dim() == (int64_t)spatial + 2, name, ": Input to max_unpooling",
              spatial, "d should be a ", spatial + 1, "d or ", spatial + 2, "d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(), name, ": Expected shape of indices to be same as that of the input "
              "tensor (", self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  size_t lead = self.dim() - spatial;
  Shape out_shape(self.sizes().begin(), self.sizes().begin() + lead);
  int64_t plane = 1;
  for (int64_t v : output_size) {
    out_shape.push_back(v);
    plane *= v;
  }
  Op op(name);
  Graph& g = op.g();
  Shape shape = shape_of(self);
  Value plane_start = constant(g, 0, c10::kLong, shape);
  for (size_t d = 0; d < lead; ++d)
    plane_start = binary(g, "add", binary(g, "multiply", plane_start, constant(g, shape[d], c10::kLong, shape)),
                         iota(g, c10::kLong, shape, d));
  Value flat = binary(g, "add", binary(g, "multiply", plane_start, constant(g, plane, c10::kLong, shape)), op.in(indices));
  Value zeros = constant(g, 0, self.scalar_type(), {numel_of(out_shape)});
  Value r = scatter_flat(g, zeros, flat, op.in(self), false);
  at::Tensor out = op.result(reshape(g, r, out_shape));
  op.run();
  return out;
}

}  // namespace

// Repeated indices leave which value lands unspecified, on every device.
at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size) {
  at::globalContext().alertNotDeterministic("max_unpooling2d_forward_out");
  return max_unpool("aten::max_unpool2d", 2, self, indices, output_size);
}
std::tuple<at::Tensor, at::Tensor> fractional_max_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                         at::IntArrayRef output_size, const at::Tensor& random_samples) {
  return fractional_max_pool("aten::fractional_max_pool2d", 2, self, kernel_size, output_size, random_samples);
}
at::Tensor fractional_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                          at::IntArrayRef /*kernel_size*/, at::IntArrayRef /*output_size*/,
                                          const at::Tensor& indices) {
  return max_pool_backward("aten::fractional_max_pool2d_backward", grad_output, self, indices, 2);
}
std::tuple<at::Tensor, at::Tensor> fractional_max_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                         at::IntArrayRef output_size, const at::Tensor& random_samples) {
  return fractional_max_pool("aten::fractional_max_pool3d", 3, self, kernel_size, output_size, random_samples);
}
at::Tensor fractional_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                          at::IntArrayRef /*kernel_size*/, at::IntArrayRef /*output_size*/,
                                          const at::Tensor& indices) {
  return max_pool_backward("aten::fractional_max_pool3d_backward", grad_output, self, indices, 3);
}
at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                        at::IntArrayRef stride, at::IntArrayRef padding) {
  at::globalContext().alertNotDeterministic("max_unpooling3d_forward_out");
  TORCH_CHECK(stride.size() == 3 && padding.size() == 3, "max_unpool3d: stride and padding must have 3 elements");
  for (size_t i = 0; i < 3; ++i)
    TORCH_CHECK(stride[i] > 0, "max_unpool3d: strides should be greater than zero, but got stride: ", stride);
  return max_unpool("aten::max_unpool3d", 3, self, indices, output_size);
}

// --------------------------------------------------------------------------
// im2col / col2im (nn.functional.unfold and fold): every element of the
// [N, C, kh, kw, oh, ow] patch grid reads (or adds into) one input position,
// or none where the window covers padding.

namespace {

struct PatchGrid {
  Shape grid;     // [N, C, kh, kw, oh, ow]
  Value flat;     // int64 position in the flattened [N, C, H, W] image
  Value valid;    // false where the position is padding
  int64_t positions;  // oh * ow
};

// The number of sliding blocks (oh, ow), with PyTorch's argument checks.
std::pair<int64_t, int64_t> patch_extent(const char* name, int64_t h, int64_t w, at::IntArrayRef kernel,
                                         at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK(kernel.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2, name,
              ": kernel_size, dilation, padding and stride must have 2 elements each");
  for (int i = 0; i < 2; ++i) {
    TORCH_CHECK(kernel[i] > 0, name, ": kernel size should be greater than zero, but got kernel_height: ", kernel[0],
                " kernel_width: ", kernel[1]);
    TORCH_CHECK(dilation[i] > 0, name, ": dilation should be greater than zero, but got dilation_height: ",
                dilation[0], " dilation_width: ", dilation[1]);
    TORCH_CHECK(stride[i] > 0, name, ": stride should be greater than zero, but got stride_height: ", stride[0],
                " stride_width: ", stride[1]);
    TORCH_CHECK(padding[i] >= 0, name, ": padding should be non-negative, but got pad_height: ", padding[0],
                " pad_width: ", padding[1]);
  }
  int64_t oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) / stride[0] + 1;
  int64_t ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) / stride[1] + 1;
  TORCH_CHECK(oh > 0 && ow > 0, name, ": Given input with spatial size (", h, ", ", w, "), kernel_size=(", kernel[0],
              ", ", kernel[1], "), dilation=(", dilation[0], ", ", dilation[1], "), padding=(", padding[0], ", ",
              padding[1], "), calculated shape of the array of sliding blocks as (", oh, ", ", ow,
              "), but its components must be at least one.");
  return {oh, ow};
}

PatchGrid patch_grid(Graph& g, const char* name, int64_t n, int64_t c, int64_t h, int64_t w, at::IntArrayRef kernel,
                     at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  auto [oh, ow] = patch_extent(name, h, w, kernel, dilation, padding, stride);
  PatchGrid p;
  p.grid = {n, c, kernel[0], kernel[1], oh, ow};
  p.positions = oh * ow;
  auto k = [&](int64_t v) { return constant(g, v, c10::kLong, p.grid); };
  auto at = [&](int64_t d) { return iota(g, c10::kLong, p.grid, d); };
  Value row = binary(g, "add", binary(g, "subtract", binary(g, "multiply", at(4), k(stride[0])), k(padding[0])),
                     binary(g, "multiply", at(2), k(dilation[0])));
  Value col = binary(g, "add", binary(g, "subtract", binary(g, "multiply", at(5), k(stride[1])), k(padding[1])),
                     binary(g, "multiply", at(3), k(dilation[1])));
  auto inside = [&](Value v, int64_t size) {
    return binary(g, "and", compare(g, v, k(0), "GE", c10::kLong), compare(g, v, k(size), "LT", c10::kLong));
  };
  p.valid = binary(g, "and", inside(row, h), inside(col, w));
  row = binary(g, "minimum", binary(g, "maximum", row, k(0)), k(h - 1));
  col = binary(g, "minimum", binary(g, "maximum", col, k(0)), k(w - 1));
  Value image = binary(g, "add", binary(g, "multiply", at(0), k(c)), at(1));
  p.flat = binary(g, "add", binary(g, "multiply", binary(g, "add", binary(g, "multiply", image, k(h)), row), k(w)), col);
  return p;
}
}  // namespace

at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK((self.dim() == 3 || self.dim() == 4) && self.size(-1) > 0 && self.size(-2) > 0 && self.size(-3) > 0,
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ", self.sizes());
  bool batched = self.dim() == 4;
  int64_t n = batched ? self.size(0) : 1, c = self.size(-3), h = self.size(-2), w = self.size(-1);
  if (n == 0) {
    auto [oh, ow] = patch_extent("im2col", h, w, kernel_size, dilation, padding, stride);
    return at::empty({0, c * kernel_size[0] * kernel_size[1], oh * ow}, self.options());
  }
  Op op("aten::im2col");
  Graph& g = op.g();
  PatchGrid p = patch_grid(g, "im2col", n, c, h, w, kernel_size, dilation, padding, stride);
  Value values = gather_flat(g, reshape(g, op.in(self), {self.numel()}), p.flat);
  values = select(g, p.valid, values, constant(g, 0, self.scalar_type(), p.grid));
  Shape out{n, c * kernel_size[0] * kernel_size[1], p.positions};
  if (!batched) out.erase(out.begin());
  at::Tensor result = op.result(reshape(g, values, out));
  op.run();
  return result;
}

at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK(output_size.size() == 2, "col2im: output_size is expected to have size 2, but got size ",
              output_size.size());
  TORCH_CHECK((self.dim() == 2 || self.dim() == 3) && self.size(-1) > 0 && self.size(-2) > 0,
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
              "for input, but got: ", self.sizes());
  bool batched = self.dim() == 3;
  int64_t blocks = kernel_size.size() == 2 ? kernel_size[0] * kernel_size[1] : 0;
  TORCH_CHECK(blocks > 0 && self.size(-2) % blocks == 0, "Expected size of input's dimension 1 to be divisible by "
              "the product of kernel_size, but got input.size(1)=", self.size(-2), " and kernel_size=", kernel_size);
  int64_t n = batched ? self.size(0) : 1, c = self.size(-2) / blocks, h = output_size[0], w = output_size[1];
  if (n == 0) {
    patch_extent("col2im", h, w, kernel_size, dilation, padding, stride);
    return at::empty({0, c, h, w}, self.options());
  }
  Op op("aten::col2im");
  Graph& g = op.g();
  PatchGrid p = patch_grid(g, "col2im", n, c, h, w, kernel_size, dilation, padding, stride);
  TORCH_CHECK(self.size(-1) == p.positions, "Given output_size=(", h, ", ", w, "), kernel_size=(", kernel_size[0],
              ", ", kernel_size[1], "), dilation=(", dilation[0], ", ", dilation[1], "), padding=(", padding[0], ", ",
              padding[1], "), stride=(", stride[0], ", ", stride[1], "), expected size of input's dimension 2 to "
              "match the calculated number of sliding blocks ", p.positions, ", but got input.size(2)=",
              self.size(-1), ".");
  int64_t total = n * c * h * w;
  auto acc = accumulate_type(self.scalar_type());
  // Padding positions add into one spare slot past the end.
  Value index = select(g, p.valid, p.flat, constant(g, total, c10::kLong, p.grid));
  Value updates = reshape(g, convert(g, op.in(self), acc), p.grid);
  Value sums = scatter_flat(g, constant(g, 0, acc, {total + 1}), index, updates, true);
  Shape out{n, c, h, w};
  if (!batched) out.erase(out.begin());
  at::Tensor result = op.result(convert(g, reshape(g, slice(g, sums, {0}, {total}, {1}), out), self.scalar_type()));
  op.run();
  return result;
}

// --------------------------------------------------------------------------
// grid_sampler (2d and 3d): every output point reads the input at the
// coordinates its grid entry names, with bilinear (trilinear), nearest or
// bicubic (2d) interpolation and zeros, border or reflection padding.

namespace {

at::Tensor grid_sample(const char* name, size_t spatial, const at::Tensor& input, const at::Tensor& grid,
                       int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  TORCH_CHECK(input.dim() == (int64_t)spatial + 2 && grid.dim() == (int64_t)spatial + 2, name, ": expected ",
              spatial + 2, "D input and grid, but got input of shape ", input.sizes(), " and grid of shape ",
              grid.sizes());
  TORCH_CHECK(input.size(0) == grid.size(0), name, ": expected grid and input to have same batch size, but got input "
              "with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(-1) == (int64_t)spatial, name, ": expected grid to have size ", spatial,
              " in last dimension, but got grid with sizes ", grid.sizes());
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), name, ": expected input and grid to have the same dtype, but "
              "input has ", input.scalar_type(), " and grid has ", grid.scalar_type());
  TORCH_CHECK(interpolation_mode >= 0 && interpolation_mode <= 2 && padding_mode >= 0 && padding_mode <= 2, name,
              ": unknown interpolation or padding mode");
  TORCH_CHECK(interpolation_mode != 2 || spatial == 2, name, ": bicubic interpolation only supports 4D input");
  for (size_t i = 0; i < spatial; ++i)
    TORCH_CHECK(input.size(2 + i) > 0, name, ": expected input to have non-empty spatial dimensions, but input has "
                "sizes ", input.sizes());
  Shape out_shape{input.size(0), input.size(1)};
  for (size_t i = 0; i < spatial; ++i) out_shape.push_back(grid.size(1 + i));
  if (numel_of(out_shape) == 0) return at::empty(out_shape, input.options());
  auto padding = static_cast<GridPadding>(padding_mode);
  Op op(name);
  Graph& g = op.g();
  auto dt = input.scalar_type(), acc = accumulate_type(dt);
  Value x = convert(g, op.in(input), acc);
  Value gv = convert(g, op.in(grid), acc);
  Shape gs = shape_of(grid);
  Shape o(gs.begin(), gs.end() - 1);  // [N, *O]
  // Grid entries list coordinates fastest dimension first (x = width).
  std::vector<Value> raw(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t last = static_cast<int64_t>(gs.size()) - 1, entry = static_cast<int64_t>(spatial - 1 - i);
    std::vector<int64_t> start(gs.size(), 0), limit = gs, step(gs.size(), 1);
    start[last] = entry;
    limit[last] = entry + 1;
    raw[i] = unnormalize(g, reshape(g, slice(g, gv, start, limit, step), o), input.size(2 + i), align_corners);
  }
  std::vector<Tap> taps;
  auto c = [&](double v) { return constant(g, v, acc, o); };
  if (interpolation_mode == 2) {  // bicubic: padding applies to each tap
    std::vector<Value> base(2), frac(2);
    std::vector<std::array<Value, 4>> weights(2);
    for (int i = 0; i < 2; ++i) {
      base[i] = unary(g, "floor", raw[i]);
      weights[i] = cubic_weights(g, binary(g, "subtract", raw[i], base[i]));
    }
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        Value ya = binary(g, "add", base[0], c(a - 1)), xb = binary(g, "add", base[1], c(b - 1));
        taps.push_back({{pad_coordinate(g, ya, input.size(2), padding, align_corners),
                         pad_coordinate(g, xb, input.size(3), padding, align_corners)},
                        binary(g, "multiply", weights[0][a], weights[1][b])});
      }
  } else {
    std::vector<Value> src(spatial);
    for (size_t i = 0; i < spatial; ++i) src[i] = pad_coordinate(g, raw[i], input.size(2 + i), padding, align_corners);
    if (interpolation_mode == 1) {
      std::vector<Value> nearest(spatial);
      for (size_t i = 0; i < spatial; ++i) nearest[i] = unary(g, "round_nearest_even", src[i]);
      taps.push_back({nearest, c(1)});
    } else {
      for (int corner = 0; corner < (1 << spatial); ++corner) {
        Tap t{{}, c(1)};
        for (size_t i = 0; i < spatial; ++i) {
          Value lo = unary(g, "floor", src[i]);
          bool high = (corner >> (spatial - 1 - i)) & 1;
          Value frac = binary(g, "subtract", src[i], lo);
          t.coords.push_back(high ? binary(g, "add", lo, c(1)) : lo);
          t.weight = binary(g, "multiply", t.weight, high ? frac : binary(g, "subtract", c(1), frac));
        }
        taps.push_back(t);
      }
    }
  }
  at::Tensor out = op.result(convert(g, sample_taps(g, x, taps), dt));
  op.run();
  return out;
}

}  // namespace

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners) {
  return grid_sample("grid_sampler_2d", 2, input, grid, interpolation_mode, padding_mode, align_corners);
}
at::Tensor grid_sampler_3d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners) {
  return grid_sample("grid_sampler_3d", 3, input, grid, interpolation_mode, padding_mode, align_corners);
}

#define TPU_POOLING(n)                                                                                              \
  std::tuple<at::Tensor, at::Tensor> max_pool##n##d_with_indices(const at::Tensor& self, at::IntArrayRef kernel,     \
                                                                 at::IntArrayRef stride, at::IntArrayRef padding,    \
                                                                 at::IntArrayRef dilation, bool ceil_mode) {         \
    return max_pool_with_indices("aten::max_pool" #n "d_with_indices", n, self, kernel, stride, padding, dilation,  \
                                 ceil_mode);                                                                         \
  }                                                                                                                  \
  at::Tensor max_pool##n##d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,             \
                                                  at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, \
                                                  bool, const at::Tensor& indices) {                                 \
    return max_pool_backward("aten::max_pool" #n "d_with_indices_backward", grad_output, self, indices, n);         \
  }                                                                                                                  \
  at::Tensor avg_pool##n##d(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,                  \
                            at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,                         \
                            std::optional<int64_t> divisor_override) {                                               \
    return avg_pool("aten::avg_pool" #n "d", n, self, kernel, stride, padding, ceil_mode, count_include_pad,         \
                    divisor_override);                                                                               \
  }                                                                                                                  \
  at::Tensor avg_pool##n##d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel,  \
                                     at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,                \
                                     bool count_include_pad, std::optional<int64_t> divisor_override) {              \
    return avg_pool_backward("aten::avg_pool" #n "d_backward", n, grad_output, self, kernel, stride, padding,       \
                             ceil_mode, count_include_pad, divisor_override);                                        \
  }                                                                                                                  \
  at::Tensor adaptive_avg_pool##n##d(const at::Tensor& self, at::IntArrayRef output_size) {                          \
    return adaptive_avg_pool("aten::_adaptive_avg_pool" #n "d", n, self, output_size);                              \
  }                                                                                                                  \
  at::Tensor adaptive_avg_pool##n##d_backward(const at::Tensor& grad_output, const at::Tensor& self) {               \
    return adaptive_avg_pool_backward("aten::_adaptive_avg_pool" #n "d_backward", n, grad_output, self);            \
  }                                                                                                                  \
  std::tuple<at::Tensor, at::Tensor> adaptive_max_pool##n##d(const at::Tensor& self, at::IntArrayRef output_size) {  \
    return adaptive_max_pool("aten::adaptive_max_pool" #n "d", n, self, output_size);                               \
  }                                                                                                                  \
  at::Tensor adaptive_max_pool##n##d_backward(const at::Tensor& grad_output, const at::Tensor& self,                 \
                                              const at::Tensor& indices) {                                           \
    check_adaptive_pool_grad("aten::adaptive_max_pool" #n "d_backward", grad_output);                               \
    return max_pool_backward("aten::adaptive_max_pool" #n "d_backward", grad_output, self, indices, n);             \
  }
TPU_POOLING(2)
TPU_POOLING(3)
#undef TPU_POOLING

// --------------------------------------------------------------------------
// Resampling (upsample nearest / linear / cubic) and reflection or
// replication padding, with their backward. Linear and cubic interpolation
// are separable: one (out x in) weight matrix per spatial dimension, applied
// like adaptive pooling; nearest gathers.

namespace {

struct Resample {
  Interp mode;
  bool align_corners = false;
  bool antialias = false;
};

// One dimension's interpolation matrix for `how`.
Value resample_matrix(Graph& g, int64_t in, int64_t out, const Resample& how, std::optional<double> scale,
                      c10::ScalarType dt, std::optional<c10::ScalarType> weights_in = std::nullopt) {
  if (how.antialias) return antialias_matrix(g, in, out, how.mode, how.align_corners, scale, dt);
  return interp_matrix(g, in, out, how.mode, how.align_corners, scale, dt, weights_in);
}

at::Tensor upsample(const char* name, const at::Tensor& self, at::IntArrayRef output_size, Resample how,
                    const std::vector<std::optional<double>>& scales) {
  size_t spatial = output_size.size(), lead = self.dim() - spatial;
  TORCH_CHECK(self.dim() == (int64_t)spatial + 2, name, ": expected a ", spatial + 2, "D input, got ", self.sizes());
  for (size_t i = 0; i < spatial; ++i)
    TORCH_CHECK(self.size(lead + i) > 0 && output_size[i] > 0, name, ": input and output sizes should be greater "
                "than 0, but got input ", self.sizes(), " and output ", output_size);
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type();
  const bool integral = c10::isIntegralType(dt, /*includeBool=*/true);
  Shape in = shape_of(self), out = in;
  for (size_t i = 0; i < spatial; ++i) out[lead + i] = output_size[i];
  Value r;
  if (how.mode == Interp::Nearest || how.mode == Interp::NearestExact) {
    Value idx = nearest_flat_index(g, in, out, lead, how.mode == Interp::NearestExact, scales);
    r = reshape(g, gather_flat(g, reshape(g, op.in(self), {self.numel()}), idx), out);
  } else {
    // uint8 images interpolate in float and round to the nearest value in range, as on the CPU.
    TORCH_CHECK_NOT_IMPLEMENTED(!integral || dt == c10::kByte, "\"", name, "\" not implemented for '",
                                c10::toString(dt), "'");
    auto acc = integral ? c10::kFloat : accumulate_type(dt);
    // The CPU's bicubic kernel keeps its weights in the input dtype (half types
    // round them); its linear kernels keep them in float.
    std::optional<c10::ScalarType> cubic_weights_in;
    if (how.mode == Interp::Cubic && !integral && acc != dt) cubic_weights_in = dt;
    std::vector<Value> mats;
    for (size_t i = 0; i < spatial; ++i)
      mats.push_back(resample_matrix(g, in[lead + i], out[lead + i], how, scales[i], acc, cubic_weights_in));
    r = adaptive_apply(g, convert(g, op.in(self), acc), lead, mats, false);
    if (integral) {
      Value rounded = unary(g, "round_nearest_afz", r);
      r = binary(g, "minimum", binary(g, "maximum", rounded, constant_like(g, r, 0)), constant_like(g, r, 255));
    }
    r = convert(g, r, dt);
  }
  // As the CPU: a channels_last input gives a channels_last result.
  at::Tensor result = op.result(r, self.suggest_memory_format());
  op.run();
  return result;
}

at::Tensor upsample_backward(const char* name, const at::Tensor& grad_output, at::IntArrayRef output_size,
                             at::IntArrayRef input_size, Resample how,
                             const std::vector<std::optional<double>>& scales) {
  size_t spatial = output_size.size(), lead = input_size.size() - spatial;
  Op op(name);
  Graph& g = op.g();
  auto dt = grad_output.scalar_type(), acc = accumulate_type(dt);
  Shape in(input_size.begin(), input_size.end()), out = shape_of(grad_output);
  Value r;
  if (how.mode == Interp::Nearest || how.mode == Interp::NearestExact) {
    Value idx = nearest_flat_index(g, in, out, lead, how.mode == Interp::NearestExact, scales);
    r = reshape(g, scatter_flat(g, constant(g, 0, acc, {numel_of(in)}), idx, convert(g, op.in(grad_output), acc), true), in);
  } else {
    std::vector<Value> mats;
    for (size_t i = 0; i < spatial; ++i)
      mats.push_back(resample_matrix(g, in[lead + i], out[lead + i], how, scales[i], acc));
    r = adaptive_apply(g, convert(g, op.in(grad_output), acc), lead, mats, true);
  }
  at::Tensor result = op.result(convert(g, r, dt), grad_output.suggest_memory_format());
  op.run();
  return result;
}

at::Tensor edge_pad(const char* name, const at::Tensor& self, at::IntArrayRef padding, bool reflect, size_t spatial) {
  TORCH_CHECK(padding.size() == 2 * spatial, name, ": padding size is expected to be ", 2 * spatial);
  bool batched = self.dim() == (int64_t)spatial + 2;
  bool non_empty = self.dim() == (int64_t)spatial + 1 || batched;
  for (int64_t d = batched ? 1 : 0; non_empty && d < self.dim(); ++d) non_empty = self.size(d) != 0;
  TORCH_CHECK(non_empty, "Expected ", spatial + 1, "D or ", spatial + 2, "D (batch mode) tensor with possibly 0 batch "
              "size and other non-zero dimensions for input, but got: ", self.sizes());
  for (size_t i = 0; i < spatial; ++i) {
    size_t dim = self.dim() - 1 - i;
    int64_t lo = padding[2 * i], hi = padding[2 * i + 1], n = self.size(dim);
    TORCH_CHECK(!reflect || (lo < n && hi < n), "Argument #4: Padding size should be less than the corresponding "
                "input dimension, but got: padding (", lo, ", ", hi, ") at dimension ", dim, " of input ", self.sizes());
    TORCH_CHECK(n > 0 && n + lo + hi > 0, name, ": input dimension ", dim, " of size ", n,
                " is too small for padding (", lo, ", ", hi, ")");
  }
  Op op(name);
  Graph& g = op.g();
  Shape out;
  Value idx = edge_flat_index(g, shape_of(self), padding, reflect, spatial, out);
  at::Tensor result = op.result(reshape(g, gather_flat(g, reshape(g, op.in(self), {self.numel()}), idx), out),
                                self.suggest_memory_format());
  op.run();
  return result;
}

at::Tensor edge_pad_backward(const char* name, const at::Tensor& grad_output, const at::Tensor& self,
                             at::IntArrayRef padding, bool reflect, size_t spatial) {
  Op op(name);
  Graph& g = op.g();
  auto acc = accumulate_type(self.scalar_type());
  Shape out;
  Value idx = edge_flat_index(g, shape_of(self), padding, reflect, spatial, out);
  Value r = scatter_flat(g, constant(g, 0, acc, {self.numel()}), idx, convert(g, op.in(grad_output), acc), true);
  at::Tensor result = op.result(convert(g, reshape(g, r, shape_of(self)), self.scalar_type()), self.suggest_memory_format());
  op.run();
  return result;
}

}  // namespace

using Scale = std::optional<double>;
at::Tensor upsample_nearest1d(const at::Tensor& self, at::IntArrayRef output_size, Scale scale) {
  return upsample("aten::upsample_nearest1d", self, output_size, {Interp::Nearest}, {scale});
}
at::Tensor upsample_nearest1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           Scale scale) {
  return upsample_backward("aten::upsample_nearest1d_backward", grad_output, output_size, input_size, {Interp::Nearest}, {scale});
}
at::Tensor _upsample_nearest_exact1d(const at::Tensor& self, at::IntArrayRef output_size, Scale scale) {
  return upsample("aten::_upsample_nearest_exact1d", self, output_size, {Interp::NearestExact}, {scale});
}
at::Tensor _upsample_nearest_exact1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           Scale scale) {
  return upsample_backward("aten::_upsample_nearest_exact1d_backward", grad_output, output_size, input_size, {Interp::NearestExact}, {scale});
}
at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, Scale scale_h, Scale scale_w) {
  return upsample("aten::upsample_nearest2d", self, output_size, {Interp::Nearest}, {scale_h, scale_w});
}
at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::upsample_nearest2d_backward", grad_output, output_size, input_size, {Interp::Nearest}, {scale_h, scale_w});
}
at::Tensor _upsample_nearest_exact2d(const at::Tensor& self, at::IntArrayRef output_size, Scale scale_h, Scale scale_w) {
  return upsample("aten::_upsample_nearest_exact2d", self, output_size, {Interp::NearestExact}, {scale_h, scale_w});
}
at::Tensor _upsample_nearest_exact2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::_upsample_nearest_exact2d_backward", grad_output, output_size, input_size, {Interp::NearestExact}, {scale_h, scale_w});
}
at::Tensor upsample_nearest3d(const at::Tensor& self, at::IntArrayRef output_size, Scale scale_d, Scale scale_h, Scale scale_w) {
  return upsample("aten::upsample_nearest3d", self, output_size, {Interp::Nearest}, {scale_d, scale_h, scale_w});
}
at::Tensor upsample_nearest3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           Scale scale_d, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::upsample_nearest3d_backward", grad_output, output_size, input_size, {Interp::Nearest}, {scale_d, scale_h, scale_w});
}
at::Tensor _upsample_nearest_exact3d(const at::Tensor& self, at::IntArrayRef output_size, Scale scale_d, Scale scale_h, Scale scale_w) {
  return upsample("aten::_upsample_nearest_exact3d", self, output_size, {Interp::NearestExact}, {scale_d, scale_h, scale_w});
}
at::Tensor _upsample_nearest_exact3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           Scale scale_d, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::_upsample_nearest_exact3d_backward", grad_output, output_size, input_size, {Interp::NearestExact}, {scale_d, scale_h, scale_w});
}
at::Tensor upsample_linear1d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, Scale scale) {
  return upsample("aten::upsample_linear1d", self, output_size, {Interp::Linear, align_corners}, {scale});
}
at::Tensor upsample_linear1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, Scale scale) {
  return upsample_backward("aten::upsample_linear1d_backward", grad_output, output_size, input_size, {Interp::Linear, align_corners}, {scale});
}
at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, Scale scale_h, Scale scale_w) {
  return upsample("aten::upsample_bilinear2d", self, output_size, {Interp::Linear, align_corners}, {scale_h, scale_w});
}
at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::upsample_bilinear2d_backward", grad_output, output_size, input_size, {Interp::Linear, align_corners}, {scale_h, scale_w});
}
at::Tensor _upsample_bilinear2d_aa(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, Scale scale_h,
                                   Scale scale_w) {
  return upsample("aten::_upsample_bilinear2d_aa", self, output_size, {Interp::Linear, align_corners, true},
                  {scale_h, scale_w});
}
at::Tensor _upsample_bilinear2d_aa_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                            at::IntArrayRef input_size, bool align_corners, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::_upsample_bilinear2d_aa_backward", grad_output, output_size, input_size,
                           {Interp::Linear, align_corners, true}, {scale_h, scale_w});
}
at::Tensor _upsample_bicubic2d_aa(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, Scale scale_h,
                                  Scale scale_w) {
  return upsample("aten::_upsample_bicubic2d_aa", self, output_size, {Interp::Cubic, align_corners, true},
                  {scale_h, scale_w});
}
at::Tensor _upsample_bicubic2d_aa_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                           at::IntArrayRef input_size, bool align_corners, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::_upsample_bicubic2d_aa_backward", grad_output, output_size, input_size,
                           {Interp::Cubic, align_corners, true}, {scale_h, scale_w});
}
at::Tensor upsample_trilinear3d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, Scale scale_d, Scale scale_h, Scale scale_w) {
  return upsample("aten::upsample_trilinear3d", self, output_size, {Interp::Linear, align_corners}, {scale_d, scale_h, scale_w});
}
at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, Scale scale_d, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::upsample_trilinear3d_backward", grad_output, output_size, input_size, {Interp::Linear, align_corners}, {scale_d, scale_h, scale_w});
}
at::Tensor upsample_bicubic2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, Scale scale_h, Scale scale_w) {
  return upsample("aten::upsample_bicubic2d", self, output_size, {Interp::Cubic, align_corners}, {scale_h, scale_w});
}
at::Tensor upsample_bicubic2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, Scale scale_h, Scale scale_w) {
  return upsample_backward("aten::upsample_bicubic2d_backward", grad_output, output_size, input_size, {Interp::Cubic, align_corners}, {scale_h, scale_w});
}
at::Tensor reflection_pad1d(const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad("aten::reflection_pad1d", self, padding, true, 1);
}
at::Tensor reflection_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad_backward("aten::reflection_pad1d_backward", grad_output, self, padding, true, 1);
}
at::Tensor reflection_pad2d(const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad("aten::reflection_pad2d", self, padding, true, 2);
}
at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad_backward("aten::reflection_pad2d_backward", grad_output, self, padding, true, 2);
}
at::Tensor reflection_pad3d(const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad("aten::reflection_pad3d", self, padding, true, 3);
}
at::Tensor reflection_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad_backward("aten::reflection_pad3d_backward", grad_output, self, padding, true, 3);
}
at::Tensor replication_pad1d(const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad("aten::replication_pad1d", self, padding, false, 1);
}
at::Tensor replication_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad_backward("aten::replication_pad1d_backward", grad_output, self, padding, false, 1);
}
at::Tensor replication_pad2d(const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad("aten::replication_pad2d", self, padding, false, 2);
}
at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad_backward("aten::replication_pad2d_backward", grad_output, self, padding, false, 2);
}
at::Tensor replication_pad3d(const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad("aten::replication_pad3d", self, padding, false, 3);
}
at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) {
  return edge_pad_backward("aten::replication_pad3d_backward", grad_output, self, padding, false, 3);
}

}  // namespace torch_tpu::aten
