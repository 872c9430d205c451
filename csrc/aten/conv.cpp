// Convolutions (1d/2d/3d, grouped, dilated, transposed) and their backward,
// as stablehlo.convolution. PyTorch routes every convolution of a backend
// without its own kernels through convolution_overrideable and
// convolution_backward_overrideable.
//
// A transposed convolution is a convolution of the input dilated by the
// stride with the kernel flipped and its in/out channels swapped; the weight
// gradient is a convolution of the input with the output gradient, grouped
// over the batch (batch_group_count) when the forward was grouped.
#include "aten/kernels.h"
#include "aten/op.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  size_t spatial = 0;
};

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

std::string dims_spec(size_t spatial, const char* a, const char* b) {
  std::string s = std::string("[") + a + ", " + b;
  for (size_t i = 0; i < spatial; ++i) s += ", " + std::to_string(i);
  return s + "]";
}

std::string padding_attr(const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  std::string s = "dense<[";
  for (size_t i = 0; i < lo.size(); ++i)
    s += std::string(i ? ", " : "") + "[" + std::to_string(lo[i]) + ", " + std::to_string(hi[i]) + "]";
  return s + "]> : tensor<" + std::to_string(lo.size()) + "x2xi64>";
}

// One stablehlo.convolution. `lhs_spec`, `rhs_spec`, `out_spec` name the
// roles of the dimensions (e.g. "b, f" / "o, i" / "b, f", spatial ones follow).
Value convolution(Graph& g, Value lhs, Value rhs, const Shape& out_shape, const char* lhs_roles[2],
                  const char* rhs_roles[2], const char* out_roles[2], const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& pad_lo, const std::vector<int64_t>& pad_hi,
                  const std::vector<int64_t>& lhs_dilation, const std::vector<int64_t>& rhs_dilation,
                  int64_t feature_groups, int64_t batch_groups) {
  size_t n = strides.size();
  std::string attrs = "{batch_group_count = " + std::to_string(batch_groups) +
                      " : i64, dimension_numbers = #stablehlo.conv<" + dims_spec(n, lhs_roles[0], lhs_roles[1]) + "x" +
                      dims_spec(n, rhs_roles[0], rhs_roles[1]) + "->" + dims_spec(n, out_roles[0], out_roles[1]) +
                      ">, feature_group_count = " + std::to_string(feature_groups) +
                      " : i64, lhs_dilation = " + i64_array(lhs_dilation) + ", padding = " + padding_attr(pad_lo, pad_hi) +
                      ", rhs_dilation = " + i64_array(rhs_dilation) + ", window_strides = " + i64_array(strides) + "}";
  return g.add("stablehlo.convolution", {lhs, rhs}, Type{g.type(lhs).dtype, out_shape}, attrs);
}

const char* kNCHW[2] = {"b", "f"};
const char* kOIHW[2] = {"o", "i"};

// A transposed-conv weight (Cin, Cout/g, k...) as the forward-conv weight
// (Cout, Cin/g, k...) of the equivalent dilated convolution, kernel flipped.
Value transposed_weight(Graph& g, Value w, int64_t groups) {
  Shape ws = g.type(w).shape;
  int64_t cin = ws[0], cout_g = ws[1];
  Shape grouped{groups, cin / groups, cout_g};
  grouped.insert(grouped.end(), ws.begin() + 2, ws.end());
  Value v = reshape(g, w, grouped);
  std::vector<int64_t> perm{0, 2, 1};
  for (size_t i = 3; i < grouped.size(); ++i) perm.push_back(i);
  v = transpose(g, v, perm);
  Shape out{groups * cout_g, cin / groups};
  out.insert(out.end(), ws.begin() + 2, ws.end());
  v = reshape(g, v, out);
  std::vector<int64_t> spatial;
  for (size_t i = 2; i < out.size(); ++i) spatial.push_back(i);
  return reverse(g, v, spatial);
}

// Forward convolution (or transposed convolution) of x with w.
Value conv_forward(Graph& g, Value x, Value w, const ConvParams& p, bool transposed) {
  Shape xs = g.type(x).shape, ws = g.type(w).shape;
  size_t n = p.spatial;
  std::vector<int64_t> ones(n, 1), lo(n), hi(n);
  Shape out{xs[0], transposed ? ws[1] * p.groups : ws[0]};
  if (!transposed) {
    for (size_t i = 0; i < n; ++i) {
      lo[i] = hi[i] = p.padding[i];
      out.push_back((xs[i + 2] + 2 * p.padding[i] - p.dilation[i] * (ws[i + 2] - 1) - 1) / p.stride[i] + 1);
    }
    return convolution(g, x, w, out, kNCHW, kOIHW, kNCHW, p.stride, lo, hi, ones, p.dilation, p.groups, 1);
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t k = p.dilation[i] * (ws[i + 2] - 1);
    lo[i] = k - p.padding[i];
    hi[i] = k - p.padding[i] + p.output_padding[i];
    out.push_back((xs[i + 2] - 1) * p.stride[i] - 2 * p.padding[i] + k + p.output_padding[i] + 1);
  }
  return convolution(g, x, transposed_weight(g, w, p.groups), out, kNCHW, kOIHW, kNCHW, ones, lo, hi, p.stride,
                     p.dilation, p.groups, 1);
}

// d(loss)/d(weight) of the forward convolution x (*) w = y, given dy; shaped like w.
Value conv_weight_grad(Graph& g, Value x, Value dy, const Shape& w_shape, const ConvParams& p) {
  Shape xs = g.type(x).shape, ys = g.type(dy).shape;
  size_t n = p.spatial;
  std::vector<int64_t> ones(n, 1), lo(n), hi(n);
  Shape full{w_shape[0], w_shape[1]};
  for (size_t i = 0; i < n; ++i) {
    lo[i] = hi[i] = p.padding[i];
    // Padding on both sides may give a window a few positions longer than the kernel: slice it.
    full.push_back((xs[i + 2] + 2 * p.padding[i] - p.stride[i] * (ys[i + 2] - 1) - 1) / p.dilation[i] + 1);
  }
  // Batch and channel swap roles: x's channels are the "batch" of this
  // convolution, its batch the contracted "feature"; dy's batch is the kernel
  // input feature and its channels the kernel output feature.
  const char* lhs_roles[2] = {"f", "b"};
  const char* rhs_roles[2] = {"i", "o"};
  const char* out_roles[2] = {"f", "b"};
  Value r = convolution(g, x, dy, full, lhs_roles, rhs_roles, out_roles, p.dilation, lo, hi, ones, p.stride, 1,
                        p.groups);
  for (size_t i = 0; i < n; ++i) {
    if (full[i + 2] != w_shape[i + 2]) r = slice_dim(g, r, i + 2, 0, w_shape[i + 2]);
  }
  return r;
}

c10::ScalarType compute_type(c10::ScalarType t) {
  return (t == c10::kHalf || t == c10::kBFloat16) ? c10::kFloat : t;
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

}  // namespace

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups) {
  ConvParams p = conv_params(input, stride, padding, dilation, output_padding, groups);
  check_conv(input, weight, p, transposed);
  Op op("aten::convolution");
  Graph& g = op.g();
  auto dt = input.scalar_type(), ct = compute_type(dt);
  Value r = conv_forward(g, convert(g, op.in(input), ct), convert(g, op.in(weight), ct), p, transposed);
  if (bias && bias->defined()) {
    Shape rs = g.type(r).shape;
    r = binary(g, "add", r, broadcast_in_dim(g, convert(g, op.in(*bias), ct), rs, {1}));
  }
  at::Tensor out = op.result(convert(g, r, dt));
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
  auto dt = input.scalar_type(), ct = compute_type(dt);
  Value x = convert(g, op.in(input), ct), w = convert(g, op.in(weight), ct), dy = convert(g, op.in(grad_output), ct);
  Shape xs = shape_of(input), ws = shape_of(weight);
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
    grad_input = op.result(convert(g, gi, dt));
  }
  if (output_mask[1]) {
    // A transposed convolution's weight gradient is the forward one with x and dy swapped.
    Value gw = transposed ? conv_weight_grad(g, dy, x, ws, p) : conv_weight_grad(g, x, dy, ws, p);
    grad_weight = op.result(convert(g, gw, dt));
  }
  if (output_mask[2]) {
    std::vector<int64_t> dims{0};
    for (size_t i = 0; i < p.spatial; ++i) dims.push_back(i + 2);
    grad_bias = op.result(convert(g, reduce(g, dy, dims, ReduceKind::Sum), dt));
  }
  op.run();
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace torch_tpu::aten
