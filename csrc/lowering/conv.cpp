// Convolution, pooling and resampling as graphs: convolution forward and its
#include "lowering/conv.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

namespace {

std::string dims_spec(size_t spatial, const char* a, const char* b) {
  std::string s = std::string("[") + a + ", " + b;
  for (size_t i = 0; i < spatial; ++i) s += ", " + std::to_string(i);
  return s + "]";
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

}  // namespace

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

std::vector<int64_t> full(const PoolParams& p, const std::vector<int64_t>& spatial, int64_t lead_value) {
  std::vector<int64_t> v(p.lead, lead_value);
  v.insert(v.end(), spatial.begin(), spatial.end());
  return v;
}

Value plane_positions(Graph& g, const Shape& shape, size_t lead) {
  Value flat = constant(g, 0, c10::kLong, shape);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > lead;) {
    Value coord = binary(g, "multiply", iota(g, c10::kLong, shape, d), constant(g, stride, c10::kLong, shape));
    flat = binary(g, "add", flat, coord);
    stride *= shape[d];
  }
  return flat;
}

namespace {

// Elements each average-pooling window divides by, per output position of one
// spatial dimension (the divisor is the product over dimensions).
Value window_counts(Graph& g, int64_t in, int64_t k, int64_t s, int64_t pad, int64_t out, bool count_include_pad) {
  Shape sh{out};
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, sh); };
  Value start = binary(g, "subtract", binary(g, "multiply", iota(g, c10::kLong, sh, 0), c(s)), c(pad));
  Value end = binary(g, "minimum", binary(g, "add", start, c(k)), c(in + pad));
  if (!count_include_pad) {
    start = binary(g, "maximum", start, c(0));
    end = binary(g, "minimum", end, c(in));
  }
  return binary(g, "subtract", end, start);
}

}  // namespace

Value avg_divisor(Graph& g, const PoolParams& p, const Shape& in_shape, const Shape& out_shape, bool count_include_pad,
                  std::optional<int64_t> divisor_override, c10::ScalarType dt) {
  if (divisor_override) return constant(g, *divisor_override, dt, out_shape);
  Value divisor = constant(g, 1, dt, out_shape);
  for (size_t i = 0; i < p.spatial; ++i) {
    Value counts = window_counts(g, in_shape[p.lead + i], p.kernel[i], p.stride[i], p.padding[i], p.out[i],
                                 count_include_pad);
    divisor = binary(g, "multiply", divisor, broadcast_in_dim(g, convert(g, counts, dt), out_shape, {int64_t(p.lead + i)}));
  }
  return divisor;
}

Value adaptive_matrix(Graph& g, int64_t in, int64_t out, c10::ScalarType dt) {
  Shape sh{out, in};
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, sh); };
  Value o = iota(g, c10::kLong, sh, 0), i = iota(g, c10::kLong, sh, 1);
  Value start = binary(g, "divide", binary(g, "multiply", o, c(in)), c(out));
  Value end = binary(g, "divide", binary(g, "add", binary(g, "multiply", binary(g, "add", o, c(1)), c(in)), c(out - 1)),
                     c(out));
  Value inside = binary(g, "and", compare(g, i, start, "GE", c10::kLong), compare(g, i, end, "LT", c10::kLong));
  Value weight = binary(g, "divide", constant(g, 1, dt, sh), convert(g, binary(g, "subtract", end, start), dt));
  return select(g, inside, weight, constant(g, 0, dt, sh));
}

Value adaptive_apply(Graph& g, Value v, size_t lead, const std::vector<Value>& mats, bool transposed) {
  for (Value m : mats) v = dot_general(g, v, m, {}, {}, {(int64_t)lead}, {transposed ? 0 : 1}, g.type(v).dtype);
  return v;
}

Value unnormalize(Graph& g, Value coord, int64_t size, bool align_corners) {
  auto c = [&](double v) { return constant_like(g, coord, v); };
  if (align_corners) return binary(g, "multiply", binary(g, "add", coord, c(1)), c((size - 1) / 2.0));
  return binary(g, "divide", binary(g, "subtract", binary(g, "multiply", binary(g, "add", coord, c(1)), c(size)), c(1)),
                c(2));
}

Value reflect(Graph& g, Value coord, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return constant_like(g, coord, 0);
  auto c = [&](double v) { return constant_like(g, coord, v); };
  double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  Value in = unary(g, "abs", binary(g, "subtract", coord, c(low)));
  Value extra = binary(g, "remainder", in, c(span));
  Value flips = unary(g, "floor", binary(g, "divide", in, c(span)));
  Value even = compare(g, binary(g, "remainder", flips, c(2)), c(0), "EQ", g.type(coord).dtype);
  return select(g, even, binary(g, "add", extra, c(low)), binary(g, "add", binary(g, "subtract", c(span), extra), c(low)));
}

namespace {

Value clip(Graph& g, Value coord, int64_t size) {
  return binary(g, "minimum", binary(g, "maximum", coord, constant_like(g, coord, 0)),
                constant_like(g, coord, static_cast<double>(size - 1)));
}

}  // namespace

Value pad_coordinate(Graph& g, Value coord, int64_t size, GridPadding padding, bool align_corners) {
  if (padding == GridPadding::Border) return clip(g, coord, size);
  if (padding == GridPadding::Reflection) {
    Value r = align_corners ? reflect(g, coord, 0, 2 * (size - 1)) : reflect(g, coord, -1, 2 * size - 1);
    return clip(g, r, size);
  }
  return coord;
}

Value sample_taps(Graph& g, Value input, const std::vector<Tap>& taps) {
  const Shape in = g.type(input).shape;
  const Shape o = g.type(taps[0].weight).shape;  // [N, *O]
  const size_t spatial = in.size() - 2;
  Shape out{in[0], in[1]};
  out.insert(out.end(), o.begin() + 1, o.end());
  std::vector<int64_t> map{0};
  for (size_t i = 0; i < spatial; ++i) map.push_back(static_cast<int64_t>(i) + 2);
  const c10::ScalarType dt = g.type(input).dtype;
  Value flat_input = reshape(g, input, {numel_of(in)});
  Value total = constant(g, 0, dt, out);
  for (const Tap& t : taps) {
    Value valid = constant(g, true, c10::kBool, o);
    Value plane = constant(g, 0, c10::kLong, o);
    for (size_t i = 0; i < spatial; ++i) {
      Value ci = convert(g, t.coords[i], c10::kLong);
      int64_t size = in[2 + i];
      valid = binary(g, "and", valid,
                     binary(g, "and", compare(g, t.coords[i], constant_like(g, t.coords[i], 0), "GE", dt),
                            compare(g, t.coords[i], constant_like(g, t.coords[i], static_cast<double>(size - 1)), "LE", dt)));
      ci = binary(g, "minimum", binary(g, "maximum", ci, constant(g, 0, c10::kLong, o)), constant(g, size - 1, c10::kLong, o));
      plane = binary(g, "add", binary(g, "multiply", plane, constant(g, size, c10::kLong, o)), ci);
    }
    int64_t plane_size = 1;
    for (size_t i = 0; i < spatial; ++i) plane_size *= in[2 + i];
    Value image = binary(g, "add", binary(g, "multiply", iota(g, c10::kLong, out, 0), constant(g, in[1], c10::kLong, out)),
                         iota(g, c10::kLong, out, 1));
    Value flat = binary(g, "add", binary(g, "multiply", image, constant(g, plane_size, c10::kLong, out)),
                        broadcast_in_dim(g, plane, out, map));
    Value values = gather_flat(g, flat_input, flat);
    Value w = select(g, valid, t.weight, constant(g, 0, dt, o));
    total = binary(g, "add", total, binary(g, "multiply", values, broadcast_in_dim(g, w, out, map)));
  }
  return total;
}

std::array<Value, 4> cubic_weights(Graph& g, Value t) {
  const double A = -0.75;
  auto c = [&](double v) { return constant_like(g, t, v); };
  auto mul = [&](Value a, Value b) { return binary(g, "multiply", a, b); };
  auto add = [&](Value a, Value b) { return binary(g, "add", a, b); };
  auto sub = [&](Value a, Value b) { return binary(g, "subtract", a, b); };
  auto outer = [&](Value x) {  // ((A x - 5A) x + 8A) x - 4A, for 1 < x < 2
    return sub(mul(add(mul(sub(mul(c(A), x), c(5 * A)), x), c(8 * A)), x), c(4 * A));
  };
  auto inner = [&](Value x) {  // ((A + 2) x - (A + 3)) x x + 1, for x <= 1
    return add(mul(mul(sub(mul(c(A + 2), x), c(A + 3)), x), x), c(1));
  };
  Value one_minus = sub(c(1), t);
  return {outer(add(t, c(1))), inner(t), inner(one_minus), outer(sub(c(2), t))};
}

namespace {

// PyTorch's area_pixel_compute_scale: input pixels per output pixel.
double interp_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? double(in - 1) / double(out - 1) : 0.0;
  return scale.has_value() && *scale > 0 ? 1.0 / *scale : double(in) / double(out);
}

// Source index of every output position (int64, [out]) for nearest modes.
Value nearest_source(Graph& g, int64_t in, int64_t out, bool exact, std::optional<double> scale) {
  Shape sh{out};
  double sc = interp_scale(in, out, false, scale);
  Value o = iota(g, c10::kFloat, sh, 0);
  if (exact) o = binary(g, "add", o, constant(g, 0.5, c10::kFloat, sh));
  Value src = convert(g, unary(g, "floor", binary(g, "multiply", o, constant(g, sc, c10::kFloat, sh))), c10::kLong);
  return binary(g, "minimum", src, constant(g, in - 1, c10::kLong, sh));
}

}  // namespace

Value interp_matrix(Graph& g, int64_t in, int64_t out, Interp mode, bool align_corners, std::optional<double> scale,
                    c10::ScalarType dt, std::optional<c10::ScalarType> weights_in) {
  Shape vec{out}, sh{out, in};
  double sc = interp_scale(in, out, align_corners, scale);
  auto f = [&](double v) { return constant(g, v, dt, vec); };
  Value o = iota(g, dt, vec, 0);
  Value src = align_corners ? binary(g, "multiply", o, f(sc))
                            : binary(g, "subtract", binary(g, "multiply", binary(g, "add", o, f(0.5)), f(sc)), f(0.5));
  if (mode == Interp::Linear && !align_corners) src = binary(g, "maximum", src, f(0));
  Value base = unary(g, "floor", src);
  Value t = binary(g, "subtract", src, base);
  Value i0 = convert(g, base, c10::kLong);
  Value col = iota(g, c10::kLong, sh, 1);
  Value m = constant(g, 0, dt, sh);
  auto add_tap = [&](int64_t offset, Value weight) {
    if (weights_in) weight = convert(g, convert(g, weight, *weights_in), dt);
    Value idx = binary(g, "add", i0, constant(g, offset, c10::kLong, vec));
    idx = binary(g, "minimum", binary(g, "maximum", idx, constant(g, 0, c10::kLong, vec)), constant(g, in - 1, c10::kLong, vec));
    Value hit = compare(g, col, broadcast_in_dim(g, idx, sh, {0}), "EQ", c10::kLong);
    m = binary(g, "add", m, select(g, hit, broadcast_in_dim(g, weight, sh, {0}), constant(g, 0, dt, sh)));
  };
  if (mode == Interp::Linear) {
    add_tap(0, binary(g, "subtract", f(1), t));
    add_tap(1, t);
    return m;
  }
  // Keys' cubic convolution with A = -0.75, as PyTorch's upsample_bicubic2d.
  const double A = -0.75;
  auto near = [&](Value x) {  // |x| <= 1: ((A + 2) x - (A + 3)) x^2 + 1
    Value x2 = binary(g, "multiply", x, x);
    return binary(g, "add", binary(g, "multiply", binary(g, "subtract", binary(g, "multiply", f(A + 2), x), f(A + 3)), x2), f(1));
  };
  auto far = [&](Value x) {  // 1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A
    Value r = binary(g, "subtract", binary(g, "multiply", f(A), x), f(5 * A));
    r = binary(g, "add", binary(g, "multiply", r, x), f(8 * A));
    return binary(g, "subtract", binary(g, "multiply", r, x), f(4 * A));
  };
  add_tap(-1, far(binary(g, "add", t, f(1))));
  add_tap(0, near(t));
  add_tap(1, near(binary(g, "subtract", f(1), t)));
  add_tap(2, far(binary(g, "subtract", f(2), t)));
  return m;
}

Value antialias_matrix(Graph& g, int64_t in, int64_t out, Interp mode, bool align_corners, std::optional<double> scale,
                       c10::ScalarType dt) {
  const double sc = interp_scale(in, out, align_corners, scale);
  const double half_taps = mode == Interp::Linear ? 1.0 : 2.0;
  const double support = sc >= 1.0 ? half_taps * sc : half_taps, inverse = sc >= 1.0 ? 1.0 / sc : 1.0;
  Shape vec{out}, sh{out, in};
  auto f = [&](double v, const Shape& s) { return constant(g, v, dt, s); };
  Value center = binary(g, "multiply", binary(g, "add", iota(g, dt, vec, 0), f(0.5, vec)), f(sc, vec));
  // The window [first, end) of input positions, truncated toward zero as the CPU's casts.
  Value first = binary(g, "maximum", convert(g, binary(g, "add", center, f(0.5 - support, vec)), c10::kLong),
                       constant(g, 0, c10::kLong, vec));
  Value end = binary(g, "minimum", convert(g, binary(g, "add", center, f(0.5 + support, vec)), c10::kLong),
                     constant(g, in, c10::kLong, vec));
  Value col = iota(g, c10::kLong, sh, 1);
  Value inside = binary(g, "and", compare(g, col, broadcast_in_dim(g, first, sh, {0}), "GE", c10::kLong),
                        compare(g, col, broadcast_in_dim(g, end, sh, {0}), "LT", c10::kLong));
  Value x = binary(g, "multiply",
                   binary(g, "add", binary(g, "subtract", convert(g, col, dt), broadcast_in_dim(g, center, sh, {0})),
                          f(0.5, sh)),
                   f(inverse, sh));
  x = unary(g, "abs", x);
  Value w;
  if (mode == Interp::Linear) {
    w = binary(g, "maximum", binary(g, "subtract", f(1, sh), x), f(0, sh));
  } else {
    const double A = -0.5;
    Value x2 = binary(g, "multiply", x, x);
    Value near = binary(g, "add", binary(g, "multiply", binary(g, "subtract", binary(g, "multiply", f(A + 2, sh), x),
                                                                  f(A + 3, sh)), x2), f(1, sh));
    Value far = binary(g, "multiply", binary(g, "subtract", binary(g, "multiply", binary(g, "add", binary(g, "multiply",
                                                  binary(g, "subtract", x, f(5, sh)), x), f(8, sh)), x), f(4, sh)), f(A, sh));
    w = select(g, compare(g, x, f(1, sh), "LT", dt), near,
               select(g, compare(g, x, f(2, sh), "LT", dt), far, f(0, sh)));
  }
  w = select(g, inside, w, f(0, sh));
  Value total = broadcast_in_dim(g, reduce(g, w, {1}, ReduceKind::Sum), sh, {0});
  return select(g, compare(g, total, f(0, sh), "NE", dt), binary(g, "divide", w, total), w);
}

Value source_flat_index(Graph& g, const Shape& in, const Shape& out, size_t lead, const std::vector<Value>& sources) {
  Value flat = constant(g, 0, c10::kLong, out);
  int64_t stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    Value coord = d < lead ? iota(g, c10::kLong, out, d) : broadcast_in_dim(g, sources[d - lead], out, {(int64_t)d});
    flat = binary(g, "add", flat, binary(g, "multiply", coord, constant(g, stride, c10::kLong, out)));
    stride *= in[d];
  }
  return flat;
}

Value nearest_flat_index(Graph& g, const Shape& in, const Shape& out, size_t lead, bool exact,
                         const std::vector<std::optional<double>>& scales) {
  std::vector<Value> sources;
  for (size_t d = lead; d < out.size(); ++d) sources.push_back(nearest_source(g, in[d], out[d], exact, scales[d - lead]));
  return source_flat_index(g, in, out, lead, sources);
}

Value edge_source(Graph& g, int64_t n, int64_t lo, int64_t out, bool reflect) {
  Shape sh{out};
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, sh); };
  Value j = binary(g, "subtract", iota(g, c10::kLong, sh, 0), c(lo));
  if (!reflect) return binary(g, "minimum", binary(g, "maximum", j, c(0)), c(n - 1));
  // (n-1) - |(n-1) - |j||
  return binary(g, "subtract", c(n - 1), unary(g, "abs", binary(g, "subtract", c(n - 1), unary(g, "abs", j))));
}

Value edge_flat_index(Graph& g, const Shape& in, c10::IntArrayRef padding, bool reflect, size_t spatial, Shape& out) {
  size_t lead = in.size() - spatial;
  out = in;
  std::vector<Value> sources(spatial);
  for (size_t i = 0; i < spatial; ++i) {  // padding lists (lo, hi) pairs from the last dimension backwards
    size_t d = in.size() - 1 - i;
    out[d] = in[d] + padding[2 * i] + padding[2 * i + 1];
  }
  for (size_t i = 0; i < spatial; ++i) {
    size_t d = in.size() - 1 - i;
    sources[d - lead] = edge_source(g, in[d], padding[2 * i], out[d], reflect);
  }
  return source_flat_index(g, in, out, lead, sources);
}

}  // namespace torch_tpu::lower
