// Reductions (sums, means, extremes and their indices, moments, norms, modes,
// segment reductions, any/all) and softmax.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/segment.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

// PyTorch's reductions along given dims hold them in a 64-bit mask.
void check_reduced_rank(const at::Tensor& self) {
  TORCH_CHECK(self.dim() <= 64, "only tensors with up to 64 dims are supported");
}

std::vector<int64_t> reduce_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::vector<int64_t> dims;
  int64_t rank = self.dim();
  if (!dim.has_value() || dim->empty()) {
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  } else {
    check_reduced_rank(self);
    for (int64_t d : *dim) dims.push_back(at::maybe_wrap_dim(d, std::max<int64_t>(rank, 1)));
    if (rank == 0) dims.clear();
  }
  std::sort(dims.begin(), dims.end());
  TORCH_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), "dim appears multiple times in the list of dims");
  return dims;
}

Shape kept_shape(const at::Tensor& self, const std::vector<int64_t>& dims) {
  Shape s(self.sizes().begin(), self.sizes().end());
  for (int64_t d : dims) s[d] = 1;
  return s;
}

at::Tensor reduce_op(const char* name, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     c10::ScalarType out_dtype, ReduceKind kind, bool mean) {
  auto dims = reduce_dims(self, dim);
  Op op(name);
  Graph& g = op.g();
  auto acc = accumulate_type(out_dtype);
  Value x = convert(g, op.in(self), acc);
  Value r = reduce(g, x, dims, kind);
  if (mean) {
    int64_t n = 1;
    for (int64_t d : dims) n *= self.size(d);
    r = binary(g, "divide", r, constant(g, static_cast<double>(n), acc, g.type(r).shape));
  }
  r = convert(g, r, out_dtype);
  if (keepdim) r = reshape(g, r, kept_shape(self, dims));
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

}  // namespace

at::Tensor sum_dim(Dest d, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  // out= without a dtype reduces in the out tensor's dtype.
  if (!dtype && d.form() == Dest::Out) dtype = d.target().scalar_type();
  auto dt = dtype.value_or(c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type());
  return d.deliver(reduce_op("aten::sum", self, dim, keepdim, dt, dt == c10::kBool ? ReduceKind::Or : ReduceKind::Sum, false));
}

at::Tensor mean_dim(Dest d, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  // out= without a dtype reduces in the out tensor's dtype.
  if (!dtype && d.form() == Dest::Out) dtype = d.target().scalar_type();
  auto dt = dtype.value_or(self.scalar_type());
  TORCH_CHECK(c10::isFloatingType(dt) || c10::isComplexType(dt), "mean(): could not infer output dtype. Input dtype must be either a floating "
              "point or complex dtype. Got: ", dt);
  return d.deliver(reduce_op("aten::mean", self, dim, keepdim, dt, ReduceKind::Sum, true));
}

namespace {
// Complex numbers have no order to take a max or min by.
void check_ordered(const char* name, const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"", name, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
}

// Reductions without an identity (max, min, xor-hash) over an empty tensor
// need non-empty reduced dims, as the CPU's zero_numel_check_dims.
void check_reduced_dims_not_empty(const char* name, const at::Tensor& self, at::IntArrayRef dim) {
  if (self.numel() != 0) return;
  TORCH_CHECK_INDEX(!dim.empty(), name, "(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                    "the reduction dim with the 'dim' argument.");
  for (int64_t d : dim) {
    int64_t wrapped = at::maybe_wrap_dim(d, std::max<int64_t>(self.dim(), 1));
    TORCH_CHECK_INDEX(self.dim() == 0 || self.size(wrapped) != 0, name, "(): Expected reduction dim ", wrapped,
                      " to have non-zero size.");
  }
}

// amax and amin write their input's dtype: an out= tensor of another dtype is refused, as on CPU.
void check_out_dtype_matches(const Dest& d, const at::Tensor& self) {
  if (d.form() != Dest::Out) return;
  TORCH_CHECK(d.target().scalar_type() == self.scalar_type(), "Expected the dtype for input and out to match, but got ",
              self.scalar_type(), " for input's dtype and ", d.target().scalar_type(), " for out's dtype.");
}
}  // namespace

at::Tensor amax(Dest d, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  check_ordered("amax", self);
  check_reduced_dims_not_empty("amax", self, dim);
  check_out_dtype_matches(d, self);
  return d.deliver(reduce_op("aten::amax", self, dim, keepdim, self.scalar_type(), ReduceKind::Max, false));
}

at::Tensor amin(Dest d, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  check_ordered("amin", self);
  check_reduced_dims_not_empty("amin", self, dim);
  check_out_dtype_matches(d, self);
  return d.deliver(reduce_op("aten::amin", self, dim, keepdim, self.scalar_type(), ReduceKind::Min, false));
}

at::Tensor norm_dim(const at::Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dim, bool keepdim) {
  return aten::linalg_vector_norm(self, p.value_or(2), dim, keepdim, std::nullopt);
}
at::Tensor norm_dim_dtype(const at::Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dim, bool keepdim,
                          at::ScalarType dtype) {
  return aten::linalg_vector_norm(self, p.value_or(2), dim, keepdim, dtype);
}

at::Tensor max_all(const at::Tensor& self) {
  check_ordered("max_all", self);
  TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return reduce_op("aten::max", self, std::nullopt, false, self.scalar_type(), ReduceKind::Max, false);
}

at::Tensor min_all(const at::Tensor& self) {
  check_ordered("min_all", self);
  TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return reduce_op("aten::min", self, std::nullopt, false, self.scalar_type(), ReduceKind::Min, false);
}

namespace {

// The tail of a (values, indices) reduction along `dim`: keepdim's shape (a
// 0-d input stays 0-d), then both results.
std::tuple<at::Tensor, at::Tensor> values_and_indices(Op& op, const at::Tensor& self, int64_t dim, bool keepdim,
                                                      Value values, Value indices) {
  Graph& g = op.g();
  Shape kept = self.dim() == 0 ? Shape{} : kept_shape(self, {dim});
  if (keepdim || self.dim() == 0) {
    values = reshape(g, values, kept);
    indices = reshape(g, indices, kept);
  }
  at::Tensor v = op.result(values);
  at::Tensor i = op.result(indices);
  op.run();
  return {v, i};
}

std::tuple<at::Tensor, at::Tensor> arg_reduce_op(const char* name, const at::Tensor& self, int64_t dim, bool keepdim,
                                                 bool is_max) {
  check_reduced_rank(self);
  TORCH_CHECK(!self.is_complex(), name, "(): does not support complex input");
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  check_reduced_dims_not_empty(name, self, {dim});
  Op op(name);
  Graph& g = op.g();
  Value x = op.in(self);
  if (self.dim() == 0) x = reshape(g, x, {1});
  auto [values, indices] = lower::arg_reduce(g, x, dim, is_max);
  return values_and_indices(op, self, dim, keepdim, values, indices);
}

}  // namespace

// The most frequent value along `dim` (the smallest among equally frequent
// ones) and the index of its last occurrence, from a stable sort and run lengths.
std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(self.dim() == 0 || self.size(dim) > 0, "mode(): Expected reduction dim ", dim, " to have non-zero size.");
  Op op("aten::mode");
  Graph& g = op.g();
  Value x = op.in(self);
  if (self.dim() == 0) x = reshape(g, x, {1});
  Shape s = g.type(x).shape;
  auto [sorted, order] = sort_with_indices(g, x, dim, false);
  int64_t n = s[dim];
  Value position = iota(g, c10::kLong, s, dim);
  Value prev = pad(g, slice_dim(g, sorted, dim, 0, n - 1), 0, [&] {
    std::vector<int64_t> lo(s.size(), 0);
    lo[dim] = 1;
    return lo;
  }(), std::vector<int64_t>(s.size(), 0), std::vector<int64_t>(s.size(), 0));
  Value starts = binary(g, "or", compare(g, position, constant(g, 0, c10::kLong, s), "EQ", c10::kLong),
                        compare(g, sorted, prev, "NE", g.type(sorted).dtype));
  Value run_start = cumulative(g, select(g, starts, position, constant(g, 0, c10::kLong, s)), dim, ReduceKind::Max);
  Value frequency = binary(g, "subtract", position, run_start);
  Value best = lower::arg_reduce(g, frequency, dim, true).second;
  Value chosen = compare(g, position, broadcast_in_dim(g, best, s, [&] {
    std::vector<int64_t> d;
    for (int64_t i = 0; i < (int64_t)s.size(); ++i)
      if (i != dim) d.push_back(i);
    return d;
  }()), "EQ", c10::kLong);
  auto pick = [&](Value v) {
    auto dt = g.type(v).dtype;
    return reduce(g, select(g, chosen, v, constant(g, 0, dt, s)), {dim}, dt == c10::kBool ? ReduceKind::Or : ReduceKind::Sum);
  };
  return values_and_indices(op, self, dim, keepdim, pick(sorted), pick(order));
}
std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& values,
                                              at::Tensor& indices) {
  return write_values_indices("mode", self, aten::mode(self, dim, keepdim), values, indices);
}

namespace {

at::Tensor arg_only(const char* name, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, bool is_max) {
  if (dim.has_value()) return std::get<1>(arg_reduce_op(name, self, *dim, keepdim, is_max));
  TORCH_CHECK(self.numel() > 0, name, "(): Expected reduction dim to be specified for input.numel() == 0.");
  at::Tensor flat = self.reshape({-1});
  at::Tensor r = std::get<1>(arg_reduce_op(name, flat, 0, false, is_max));
  if (keepdim) r = r.reshape(std::vector<int64_t>(self.dim(), 1));
  return r;
}

at::Tensor moments(const char* name, const at::Tensor& self, at::OptionalIntArrayRef dim,
                   const std::optional<at::Scalar>& correction, bool keepdim, bool take_sqrt) {
  auto dims = reduce_dims(self, dim);
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()) || self.is_complex(), name,
              ": only floating point and complex dtypes are supported, got ", self.scalar_type());
  int64_t n = 1;
  for (int64_t d : dims) n *= self.size(d);
  double corr = correction.has_value() ? correction->toDouble() : 1.0;
  if (self.numel() > 0 && n - corr <= 0) {
    TORCH_WARN(name, "(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
               "(input numel divided by output numel).");
  }
  Op op(name);
  Graph& g = op.g();
  auto acc = accumulate_type(self.scalar_type());
  Value x = convert(g, op.in(self), acc);
  Shape s = g.type(x).shape;
  Shape kept = kept_shape(self, dims);
  Value mean = binary(g, "divide", reshape(g, reduce(g, x, dims, ReduceKind::Sum), kept),
                      constant(g, static_cast<double>(n), acc, kept));
  Value dev = binary(g, "subtract", x, broadcast_to(g, mean, s));
  // |dev|^2, real also for complex values.
  Value re = real_part(g, dev), im = imag_part(g, dev);
  Value squares = self.is_complex() ? binary(g, "add", binary(g, "multiply", re, re), binary(g, "multiply", im, im))
                                    : binary(g, "multiply", dev, dev);
  Value ss = reduce(g, squares, dims, ReduceKind::Sum);
  // Like PyTorch: a non-positive divisor gives inf/nan rather than an error.
  Value r = binary(g, "divide", ss, constant_like(g, ss, std::max(0.0, static_cast<double>(n) - corr)));
  if (take_sqrt) r = unary(g, "sqrt", r);
  if (keepdim) r = reshape(g, r, kept);
  at::Tensor out = op.result(convert(g, r, c10::toRealValueType(self.scalar_type())));
  op.run();
  return out;
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return arg_reduce_op("max", self, dim, keepdim, true);
}
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return arg_reduce_op("min", self, dim, keepdim, false);
}
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_only("argmax", self, dim, keepdim, true);
}
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_only("argmin", self, dim, keepdim, false);
}
at::Tensor var_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim) {
  return moments("var", self, dim, correction, keepdim, false);
}
at::Tensor std_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim) {
  return moments("std", self, dim, correction, keepdim, true);
}

at::Tensor linalg_vector_norm(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype) {
  auto out_dt = c10::toRealValueType(dtype.value_or(self.scalar_type()));
  TORCH_CHECK(c10::isFloatingType(out_dt), "linalg.vector_norm: Expected a floating point tensor as input. Got ",
              out_dt);
  TORCH_CHECK(!ord.isComplex(), "linalg.vector_norm: Expected a non-complex scalar as the order of norm.");
  auto dims = reduce_dims(self, dim);
  double p = ord.toDouble();
  Op op("aten::linalg_vector_norm");
  Graph& g = op.g();
  auto acc = accumulate_type(out_dt);
  Value in = op.in(self);
  Value a = convert(g, magnitude(g, self.is_complex() ? convert(g, in, c10::toComplexType(acc)) : in), acc);
  Value r;
  if (std::isinf(p)) {
    TORCH_CHECK(self.numel() > 0 || p > 0, "linalg.vector_norm cannot compute the -inf norm on an empty tensor");
    r = reduce(g, a, dims, p > 0 ? ReduceKind::Max : ReduceKind::Min);
  } else if (p == 0) {
    Value nz = convert(g, compare(g, a, constant(g, 0, acc, g.type(a).shape), "NE", acc), acc);
    r = reduce(g, nz, dims, ReduceKind::Sum);
  } else if (p == 1) {
    r = reduce(g, a, dims, ReduceKind::Sum);
  } else if (p == 2) {
    r = unary(g, "sqrt", reduce(g, binary(g, "multiply", a, a), dims, ReduceKind::Sum));
  } else {
    Value pv = broadcast_to(g, op.scalar(p, acc), g.type(a).shape);
    Value s = reduce(g, binary(g, "power", a, pv), dims, ReduceKind::Sum);
    r = binary(g, "power", s, broadcast_to(g, op.scalar(1.0 / p, acc), g.type(s).shape));
  }
  if (keepdim) r = reshape(g, r, kept_shape(self, dims));
  at::Tensor out = op.result(convert(g, r, out_dt));
  op.run();
  return out;
}

// The xor of the elements' bits: floating values as float64, integers as uint64.
at::Tensor hash_tensor(Dest d, const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  TORCH_CHECK(mode == 0, "hash_tensor only supports mode=0 (xor_sum), but got mode=", mode);
  check_reduced_dims_not_empty("hash_tensor", self, dim);
  auto dims = reduce_dims(self, dim);
  Op op("aten::hash_tensor");
  Graph& g = op.g();
  Value x = op.in(self);
  Value bits = is_float(self.scalar_type()) ? bitcast(g, convert(g, x, c10::kDouble), c10::kUInt64)
                                            : convert(g, x, c10::kUInt64);
  Value r = reduce(g, bits, dims, ReduceKind::Xor);
  if (keepdim) r = reshape(g, r, kept_shape(self, dims));
  at::Tensor out = op.result(r);
  op.run();
  return d.deliver(out);
}

// Rescales each slice along `dim` whose p-norm exceeds maxnorm to norm maxnorm.
at::Tensor renorm(Dest d, const at::Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> others;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim) others.push_back(d);
  auto acc = accumulate_type(self.scalar_type());
  at::Tensor norm = torch_tpu::aten::linalg_vector_norm(self, p, others, /*keepdim=*/true, acc);
  check_not_complex("renorm", self);
  Op op("aten::renorm");
  Graph& g = op.g();
  Value n = op.in(norm);
  Value limit = broadcast_to(g, op.scalar(maxnorm, acc), g.type(n).shape);
  // PyTorch's factor: maxnorm / (norm + 1e-7) where the norm exceeds maxnorm.
  Value factor = select(g, compare(g, n, limit, "GT", acc),
                        binary(g, "divide", limit, binary(g, "add", n, constant_like(g, n, 1e-7))), constant_like(g, n, 1));
  Value r = binary(g, "multiply", convert(g, op.in(self), acc), broadcast_to(g, factor, shape_of(self)));
  at::Tensor out = op.result(convert(g, r, self.scalar_type()));
  op.run();
  return d.deliver(out);
}

// --------------------------------------------------------------------------
// segment_reduce: data [pre..., L, post...] reduced over consecutive segments
// of the axis, given lengths [pre..., S] or offsets [pre..., S + 1]
// (lowering/segment.h).

namespace {

SegmentKind segment_kind(c10::string_view reduce) {
  if (reduce == "sum") return SegmentKind::Sum;
  if (reduce == "mean") return SegmentKind::Mean;
  if (reduce == "max" || reduce == "amax") return SegmentKind::Max;  // PyTorch's names for the same reduction
  if (reduce == "min" || reduce == "amin") return SegmentKind::Min;
  if (reduce == "prod") return SegmentKind::Prod;
  TORCH_CHECK(false, "segment_reduce: reduction '", reduce,
              "' is not supported; expected sum, mean, max, amax, min, amin or prod");
}

// The layout of `data`'s segments, after the CPU's argument checks; `out` gets
// data's shape with the axis replaced by the segment count.
SegmentLayout segment_layout(Op& op, const at::Tensor& data, const std::optional<at::Tensor>& lengths,
                             const std::optional<at::Tensor>& offsets, int64_t axis, Shape* out) {
  const bool by_lengths = lengths.has_value() && lengths->defined();
  const bool by_offsets = offsets.has_value() && offsets->defined();
  TORCH_CHECK(by_lengths != by_offsets, "segment_reduce: exactly one of lengths or offsets must be given");
  axis = at::maybe_wrap_dim(axis, data.dim());
  int64_t pre = 1, post = 1;
  for (int64_t d = 0; d < axis; ++d) pre *= data.size(d);
  for (int64_t d = axis + 1; d < data.dim(); ++d) post *= data.size(d);
  const at::Tensor& bounds = by_lengths ? *lengths : *offsets;
  TORCH_CHECK(bounds.dim() == axis + 1, "segment_reduce: ", by_lengths ? "lengths" : "offsets", " must have ", axis + 1,
              " dimensions (the data's before the axis, then the segments)");
  Graph& g = op.g();
  Value b = reshape(g, convert(g, op.in(bounds), c10::kLong), {pre, bounds.size(-1)});
  SegmentLayout l = lower::segment_layout(g, b, by_lengths, pre, data.size(axis), post);
  *out = shape_of(data);
  (*out)[axis] = l.segments;
  return l;
}

std::optional<Value> initial_value(Op& op, const std::optional<at::Scalar>& initial, c10::ScalarType dtype) {
  if (!initial) return std::nullopt;
  return op.scalar(*initial, dtype);
}

}  // namespace

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  TORCH_CHECK(!indices.has_value(), "segment_reduce: indices are not supported yet");
  SegmentKind kind = segment_kind(reduce);
  if (!unsafe && lengths.has_value() && lengths->defined() && lengths->numel() > 0) {
    // The CPU's and CUDA's checks, which read the lengths back (a synchronization).
    TORCH_CHECK(lengths->min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(at::all(lengths->sum({-1}) == data.size(at::maybe_wrap_dim(axis, data.dim()))).item<bool>(),
                "segment_reduce(): Expected all rows of lengths along axis ",
                "to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  Op op("aten::segment_reduce");
  Graph& g = op.g();
  Shape out_shape;
  SegmentLayout l = segment_layout(op, data, lengths, offsets, axis, &out_shape);
  auto dt = data.scalar_type(), acc = accumulate_type(dt);
  Value x = reshape(g, convert(g, op.in(data), acc), {l.pre, l.length, l.post});
  Value r = lower::segment_reduce(g, l, x, kind, initial_value(op, initial, acc));
  at::Tensor out = op.result(convert(g, reshape(g, r, out_shape), dt));
  op.run();
  return out;
}

at::Tensor _segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                    c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                    const std::optional<at::Tensor>& offsets, int64_t axis,
                                    const std::optional<at::Scalar>& initial) {
  SegmentKind kind = segment_kind(reduce);
  Op op("aten::_segment_reduce_backward");
  Graph& g = op.g();
  Shape out_shape;
  SegmentLayout l = segment_layout(op, data, lengths, offsets, axis, &out_shape);
  auto dt = data.scalar_type(), acc = accumulate_type(dt);
  const int64_t n = l.pre * l.segments * l.post;
  Value x = reshape(g, convert(g, op.in(data), acc), {l.pre, l.length, l.post});
  Value gr = reshape(g, convert(g, op.in(grad), acc), {n});
  Value value = reshape(g, convert(g, op.in(output), acc), {n});
  Value r = lower::segment_reduce_backward(g, l, x, gr, value, kind, initial_value(op, initial, acc));
  at::Tensor out = op.result(convert(g, reshape(g, r, shape_of(data)), dt));
  op.run();
  return out;
}

namespace {

at::Tensor bool_reduce(const char* name, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, bool any) {
  auto dims = reduce_dims(self, dim);
  Op op(name);
  Graph& g = op.g();
  Value r = reduce(g, convert(g, op.in(self), c10::kBool), dims, any ? ReduceKind::Or : ReduceKind::And);
  if (keepdim) r = reshape(g, r, kept_shape(self, dims));
  // PyTorch keeps uint8 for uint8 inputs, bool otherwise.
  at::Tensor out = op.result(convert(g, r, self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool));
  op.run();
  return out;
}
}  // namespace

at::Tensor any_all(const at::Tensor& self) { return bool_reduce("aten::any", self, std::nullopt, false, true); }
at::Tensor all_all(const at::Tensor& self) { return bool_reduce("aten::all", self, std::nullopt, false, false); }
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return bool_reduce("aten::any", self, at::IntArrayRef{dim}, keepdim, true);
}
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return bool_reduce("aten::all", self, at::IntArrayRef{dim}, keepdim, false);
}

namespace {

// Numerically stable (log-)softmax along `dim`, computed in float32 for half types.
at::Tensor softmax_impl(const char* name, const at::Tensor& self, int64_t dim, bool half_to_float, bool log) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  auto out_dt = half_to_float ? c10::kFloat : self.scalar_type();
  Op op(name);
  Graph& g = op.g();
  if (self.dim() == 0) {
    at::Tensor out = op.result(constant(g, log ? 0 : 1, out_dt));
    op.run();
    return out;
  }
  auto acc = accumulate_type(self.scalar_type());
  Value x = convert(g, op.in(self), acc);
  Shape s = g.type(x).shape;
  Shape kept = kept_shape(self, {dim});
  Value m = broadcast_to(g, reshape(g, reduce(g, x, {dim}, ReduceKind::Max), kept), s);
  // A row of -inf would give nan through (x - max); PyTorch gives nan there too.
  Value shifted = binary(g, "subtract", x, m);
  Value e = unary(g, "exponential", shifted);
  Value sum = broadcast_to(g, reshape(g, reduce(g, e, {dim}, ReduceKind::Sum), kept), s);
  Value r = log ? binary(g, "subtract", shifted, unary(g, "log", sum)) : binary(g, "divide", e, sum);
  at::Tensor out = op.result(convert(g, r, out_dt));
  op.run();
  return out;
}

at::Tensor softmax_backward_impl(const char* name, const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                 at::ScalarType input_dtype, bool log) {
  Op op(name);
  Graph& g = op.g();
  if (output.dim() == 0) {
    at::Tensor out = op.result(constant(g, 0, input_dtype));
    op.run();
    return out;
  }
  dim = at::maybe_wrap_dim(dim, output.dim());
  auto acc = accumulate_type(grad.scalar_type());
  Value gv = convert(g, op.in(grad), acc);
  Value y = convert(g, op.in(output), acc);
  Shape s = g.type(gv).shape;
  Shape kept = kept_shape(output, {dim});
  Value r;
  if (log) {
    // grad - exp(y) * sum(grad)
    Value sum = broadcast_to(g, reshape(g, reduce(g, gv, {dim}, ReduceKind::Sum), kept), s);
    r = binary(g, "subtract", gv, binary(g, "multiply", unary(g, "exponential", y), sum));
  } else {
    // y * (grad - sum(grad * y))
    Value gy = binary(g, "multiply", gv, y);
    Value sum = broadcast_to(g, reshape(g, reduce(g, gy, {dim}, ReduceKind::Sum), kept), s);
    r = binary(g, "multiply", y, binary(g, "subtract", gv, sum));
  }
  at::Tensor out = op.result(convert(g, r, input_dtype));
  op.run();
  return out;
}
}  // namespace

at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl("aten::_log_softmax", self, dim, half_to_float, true);
}
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                at::ScalarType input_dtype) {
  return softmax_backward_impl("aten::_log_softmax_backward_data", grad, output, dim, input_dtype, true);
}
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl("aten::_softmax", self, dim, half_to_float, false);
}
at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  return softmax_backward_impl("aten::_softmax_backward_data", grad, output, dim, input_dtype, false);
}

// --------------------------------------------------------------------------
// More reductions.



at::Tensor prod_dim(Dest d, const at::Tensor& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  // out= without a dtype reduces in the out tensor's dtype.
  if (!dtype && d.form() == Dest::Out) dtype = d.target().scalar_type();
  auto dt = dtype.value_or(c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type());
  return d.deliver(reduce_op("aten::prod", self, std::vector<int64_t>{dim}, keepdim, dt,
                   dt == c10::kBool ? ReduceKind::And : ReduceKind::Prod, false));
}
at::Tensor prod(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  auto dt = dtype.value_or(c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type());
  return reduce_op("aten::prod", self, std::nullopt, false, dt, dt == c10::kBool ? ReduceKind::And : ReduceKind::Prod,
                   false);
}

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  if (!c10::isFloatingType(self.scalar_type())) return aten::sum_dim(Dest(), self, dim, keepdim, dtype);
  return aten::sum_dim(Dest(), at::where(at::isnan(self), at::zeros({}, self.options()), self), dim, keepdim, dtype);
}

std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<at::Scalar>& correction, bool keepdim) {
  return {moments("var_mean", self, dim, correction, keepdim, false), aten::mean_dim(Dest(), self, dim, keepdim, std::nullopt)};
}
std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<at::Scalar>& correction, bool keepdim) {
  return {moments("std_mean", self, dim, correction, keepdim, true), aten::mean_dim(Dest(), self, dim, keepdim, std::nullopt)};
}

std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  check_ordered("aminmax", self);
  if (dim.has_value()) return {aten::amin(Dest(), self, *dim, keepdim), aten::amax(Dest(), self, *dim, keepdim)};
  TORCH_CHECK(self.numel() > 0, "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
              "identity.");
  at::Tensor lo = aten::amin(Dest(), self, {}, false), hi = aten::amax(Dest(), self, {}, false);
  if (keepdim) {
    std::vector<int64_t> ones(self.dim(), 1);
    return {lo.reshape(ones), hi.reshape(ones)};
  }
  return {lo, hi};
}

at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dim) {
  return aten::sum_dim(Dest(), at::ne(self, 0), dim, false, c10::kLong);
}

bool equal(const at::Tensor& self, const at::Tensor& other) {
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "Expected object of scalar type ", self.scalar_type(),
              " but got scalar type ", other.scalar_type(), " for argument 'other'");
  return aten::all_all(at::eq(self, other)).item<bool>();
}

}  // namespace torch_tpu::aten
