// Advanced indexing, data-dependent selection, reordering (flip, roll, sort,
// topk), triangular masks and scans; cat, gather / scatter, index_select,
// embedding backward and masked_fill.
//
// Advanced indexing lowers to one gather (or scatter) over the flattened
// tensor: every element of the result gets the flat source index it reads.
// Boolean masks and nonzero have data-dependent shapes, so they read the mask
// on the host (a flush in fused mode, counted under the op's name).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/indexing.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int64_t d = (int64_t)s.size() - 2; d >= 0; --d) strides[d] = strides[d + 1] * s[d + 1];
  return strides;
}

// A CPU index tensor into a tpu tensor, as CUDA takes it: its values are on
// the host, so they are range-checked here, with CPU's error.
void check_host_index(const at::Tensor& idx, int64_t dim, int64_t size) {
  if (idx.numel() == 0) return;
  int64_t low = idx.min().item<int64_t>(), high = idx.max().item<int64_t>();
  TORCH_CHECK_INDEX(low >= -size && high < size, "index ", high >= size ? high : low,
                    " is out of bounds for dimension ", dim, " with size ", size);
}

void warn_if_byte_mask(const at::Tensor& idx) {
  if (idx.scalar_type() == c10::kByte)
    TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
}

// The one boolean mask among `indices` (after leading full slices), shaped to
// broadcast against self as masked_fill_ takes it; nullopt when the indices
// are anything else.
std::optional<at::Tensor> single_mask(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  int64_t leading = 0;
  at::Tensor mask;
  for (const std::optional<at::Tensor>& opt : indices) {
    bool defined = opt.has_value() && opt->defined();
    if (!defined) {
      if (mask.defined()) return std::nullopt;  // a full slice after the mask
      ++leading;
      continue;
    }
    if (mask.defined() || (opt->scalar_type() != c10::kBool && opt->scalar_type() != c10::kByte)) return std::nullopt;
    mask = *opt;
  }
  if (!mask.defined() || leading + mask.dim() > self.dim()) return std::nullopt;
  for (int64_t j = 0; j < mask.dim(); ++j)
    TORCH_CHECK_INDEX(mask.size(j) == self.size(leading + j), "The shape of the mask ", mask.sizes(), " at index ", j,
                      " does not match the shape of the indexed tensor ", self.sizes(), " at index ", leading + j);
  warn_if_byte_mask(mask);
  std::vector<int64_t> shape(mask.sizes().begin(), mask.sizes().end());
  shape.resize(self.dim() - leading, 1);
  return mask.to(self.device(), c10::kBool).reshape(shape);
}

// Boolean masks become the long index tensors of their true positions (one per
// mask dimension); the list is padded with undefined entries to self.dim().
std::vector<at::Tensor> expand_indices(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  std::vector<at::Tensor> out;
  for (const std::optional<at::Tensor>& opt : indices) {
    at::Tensor idx = opt.has_value() ? *opt : at::Tensor();
    if (idx.defined() && (idx.scalar_type() == c10::kBool || idx.scalar_type() == c10::kByte)) {
      warn_if_byte_mask(idx);
      int64_t start = out.size();
      for (int64_t j = 0; j < idx.dim(); ++j) {
        TORCH_CHECK_INDEX(start + j < self.dim() && idx.size(j) == self.size(start + j), "The shape of the mask ",
                          idx.sizes(), " at index ", j, " does not match the shape of the indexed tensor ",
                          self.sizes(), " at index ", start + j);
      }
      at::Tensor nz = at::nonzero(idx).to(self.device());
      for (int64_t j = 0; j < idx.dim(); ++j) out.push_back(nz.select(1, j));
      continue;
    }
    if (idx.defined()) {
      TORCH_CHECK_INDEX(idx.scalar_type() == c10::kLong || idx.scalar_type() == c10::kInt,
                        "tensors used as indices must be long, int, byte or bool tensors");
      if (idx.device().is_cpu()) {
        int64_t dim = static_cast<int64_t>(out.size());
        if (dim < self.dim()) check_host_index(idx, dim, self.size(dim));
        idx = idx.to(self.device());
      }
      check_tpu(idx, "index");
    }
    out.push_back(idx);
  }
  TORCH_CHECK_INDEX((int64_t)out.size() <= self.dim(), "too many indices for tensor of dimension ", self.dim(),
                    " (got ", out.size(), ")");
  out.resize(self.dim());
  return out;
}

// The flat source index of every element of an advanced-indexing result, and
// the result's shape, with PyTorch's placement rule: adjacent indexed
// dimensions are replaced in place by the broadcast index shape, otherwise it
// goes first.
struct IndexPlan {
  Shape result;
  Value flat_index = -1;
};

IndexPlan plan_index(Op& op, const at::Tensor& self, const std::vector<at::Tensor>& idx) {
  Graph& g = op.g();
  Shape src = shape_of(self);
  std::vector<int64_t> indexed;
  std::vector<at::Tensor> defined;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d].defined()) indexed.push_back(d), defined.push_back(idx[d]);
  }
  TORCH_CHECK(!indexed.empty(), "tpu: index needs at least one index tensor");
  at::DimVector bshape(defined[0].sizes().begin(), defined[0].sizes().end());
  try {
    for (auto& t : defined) bshape = at::infer_size_dimvector(bshape, t.sizes());
  } catch (const c10::Error&) {
    std::ostringstream shapes;
    for (size_t k = 0; k < defined.size(); ++k) shapes << (k ? ", " : "") << defined[k].sizes();
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      shapes.str());
  }
  Shape b(bshape.begin(), bshape.end());
  bool adjacent = indexed.back() - indexed.front() + 1 == (int64_t)indexed.size();
  IndexPlan plan;
  int64_t bpos = 0;  // where the broadcast index dimensions start in the result
  std::vector<int64_t> result_dim_of(src.size(), -1);
  if (adjacent) {
    for (int64_t d = 0; d < indexed.front(); ++d) result_dim_of[d] = plan.result.size(), plan.result.push_back(src[d]);
    bpos = plan.result.size();
    plan.result.insert(plan.result.end(), b.begin(), b.end());
    for (size_t d = indexed.back() + 1; d < src.size(); ++d)
      result_dim_of[d] = plan.result.size(), plan.result.push_back(src[d]);
  } else {
    plan.result = b;
    for (size_t d = 0; d < src.size(); ++d) {
      if (!idx[d].defined()) result_dim_of[d] = plan.result.size(), plan.result.push_back(src[d]);
    }
  }
  std::vector<int64_t> bdims;
  for (size_t i = 0; i < b.size(); ++i) bdims.push_back(bpos + i);
  auto strides = contiguous_strides(src);
  Value flat = constant(g, 0, c10::kLong, plan.result);
  for (size_t d = 0; d < src.size(); ++d) {
    Value coord;
    if (idx[d].defined()) {
      Value i = wrap_index(op, idx[d], broadcast_to(g, op.in(idx[d]), b), src[d]);
      coord = broadcast_in_dim(g, i, plan.result, bdims);
    } else {
      coord = iota(g, c10::kLong, plan.result, result_dim_of[d]);
    }
    flat = binary(g, "add", flat, binary(g, "multiply", coord, constant(g, strides[d], c10::kLong, plan.result)));
  }
  plan.flat_index = flat;
  return plan;
}

}  // namespace

at::Tensor index_tensor(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  auto idx = expand_indices(self, indices);
  Op op("aten::index");
  Graph& g = op.g();
  IndexPlan plan = plan_index(op, self, idx);
  if (numel_of(plan.result) == 0) {
    at::Tensor out = at::empty(plan.result, self.options());
    return out;
  }
  TORCH_CHECK_INDEX(self.numel() > 0, "index is out of bounds for dimension with size 0");
  Value flat_self = reshape(g, op.in(self), {self.numel()});
  at::Tensor out = op.result(reshape(g, gather_flat(g, flat_self, plan.flat_index), plan.result));
  op.run();
  return out;
}

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool /*unsafe*/) {
  // As the CPU: the values' shape is checked before their dtype.
  auto check_dtype = [&] {
    TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Index put requires the source and destination dtypes "
                "match, got ", self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
  };
  // One mask and one value (x[x < 0] = 0) is a masked fill: its program does
  // not depend on how many elements the mask selects.
  if (!accumulate && values.numel() == 1) {
    if (auto mask = single_mask(self, indices)) {
      check_dtype();
      return self.masked_fill_(*mask, values.reshape({}));
    }
  }
  auto idx = expand_indices(self, indices);
  Op op("aten::index_put_");
  Graph& g = op.g();
  IndexPlan plan = plan_index(op, self, idx);
  TORCH_CHECK(at::is_expandable_to(values.sizes(), plan.result), "shape mismatch: value tensor of shape ",
              values.sizes(), " cannot be broadcast to indexing result of shape ", at::IntArrayRef(plan.result));
  check_dtype();
  if (numel_of(plan.result) == 0) return self;
  Value flat_self = reshape(g, op.in(self), {self.numel()});
  Value v = broadcast_to(g, op.in(values), plan.result);
  Value r = scatter_flat(g, flat_self, plan.flat_index, v, accumulate);
  op.write(self, reshape(g, r, shape_of(self)));
  op.run();
  return self;
}

at::Tensor nonzero(Dest d, const at::Tensor& self) {
  TORCH_CHECK(d.form() != Dest::Out || d.target().scalar_type() == c10::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type ", d.target().scalar_type());
  // The result's length depends on the values: read them on the host.
  at::Tensor host = to_cpu(self, "nonzero");
  return d.deliver(at::nonzero(host).to(self.device()));
}


at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_select: expected BoolTensor for mask");
  auto shape = at::infer_size_dimvector(self.sizes(), mask.sizes());
  at::Tensor positions = at::nonzero(to_cpu(mask, "masked_select").expand(shape).reshape({-1})).reshape({-1});
  at::Tensor flat_positions = positions.to(self.device());
  Op op("aten::masked_select");
  Graph& g = op.g();
  if (positions.numel() == 0) return at::empty({0}, self.options());
  Value flat = reshape(g, broadcast_to(g, op.in(self), Shape(shape.begin(), shape.end())), {numel_of(Shape(shape.begin(), shape.end()))});
  at::Tensor out = op.result(gather_flat(g, flat, op.in(flat_positions)));
  op.run();
  return out;
}

at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  std::vector<int64_t> ds;
  for (int64_t d : dims) ds.push_back(at::maybe_wrap_dim(d, self.dim()));
  if (self.dim() == 0) ds.clear();  // dim 0 of a scalar names the scalar itself
  std::sort(ds.begin(), ds.end());
  TORCH_CHECK(std::adjacent_find(ds.begin(), ds.end()) == ds.end(), "dims has duplicates, original flip dims size=",
              dims.size(), ", but unique flip dims size=", std::unique(ds.begin(), ds.end()) - ds.begin());
  Op op("aten::flip");
  at::Tensor out = op.result(reverse(op.g(), op.in(self), ds));
  op.run();
  return out;
}

at::Tensor roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  TORCH_CHECK(dims.empty() ? shifts.size() == 1 : shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  Op op("aten::roll");
  Graph& g = op.g();
  Value v = op.in(self);
  Shape shape = shape_of(self);
  std::vector<int64_t> ds(dims.begin(), dims.end());
  if (ds.empty()) {
    v = reshape(g, v, {self.numel()});
    ds = {0};
  }
  for (size_t i = 0; i < ds.size(); ++i) {
    int64_t d = at::maybe_wrap_dim(ds[i], std::max<int64_t>(g.type(v).shape.size(), 1));
    int64_t n = g.type(v).shape[d];
    if (n == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    v = concat(g, {slice_dim(g, v, d, n - s, n), slice_dim(g, v, d, 0, n - s)}, d);
  }
  at::Tensor out = op.result(reshape(g, v, shape));
  op.run();
  return out;
}

namespace {

at::Tensor triangle_op(const char* name, const at::Tensor& self, int64_t k, bool upper, Dest d) {
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  d.resize_out(self.sizes());
  Op op(name);
  return d.deliver(op, triangle(op.g(), op.in(self), k, upper));
}
}  // namespace

at::Tensor triu(Dest d, const at::Tensor& self, int64_t k) {
  return triangle_op(d.form_name("aten::triu", "aten::triu_", "aten::triu.out"), self, k, true, d);
}
at::Tensor tril(Dest d, const at::Tensor& self, int64_t k) {
  return triangle_op(d.form_name("aten::tril", "aten::tril_", "aten::tril.out"), self, k, false, d);
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> /*stable*/, int64_t dim,
                                               bool descending) {
  // Always stable: a stable order is also a valid unstable one.
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  Op op("aten::sort");
  Graph& g = op.g();
  Value v = op.in(self);
  if (self.dim() == 0) v = reshape(g, v, {1});
  auto [values, indices] = sort_with_indices(g, v, dim, descending);
  at::Tensor out_values = op.result(reshape(g, values, shape_of(self)));
  at::Tensor out_indices = op.result(reshape(g, indices, shape_of(self)));
  op.run();
  return {out_values, out_indices};
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, c10::SymInt k_sym, int64_t dim, bool largest,
                                        bool /*sorted*/) {
  int64_t k = k_sym.guard_int(__FILE__, __LINE__);
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK(k >= 0 && k <= n, "selected index k out of range");
  Op op("aten::topk");
  Graph& g = op.g();
  Value v = op.in(self);
  if (self.dim() == 0) v = reshape(g, v, {1});
  auto [values, indices] = sort_with_indices(g, v, dim, largest);
  Shape out_shape = shape_of(self);
  if (self.dim() > 0) out_shape[dim] = k;
  at::Tensor out_values = op.result(reshape(g, slice_dim(g, values, dim, 0, k), out_shape));
  at::Tensor out_indices = op.result(reshape(g, slice_dim(g, indices, dim, 0, k), out_shape));
  op.run();
  return {out_values, out_indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, c10::SymInt k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices) {
  return write_values_indices("topk", self, topk(self, std::move(k), dim, largest, sorted), values, indices);
}

std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                                     bool descending, at::Tensor& values, at::Tensor& indices) {
  return write_values_indices("sort", self, sort_stable(self, stable, dim, descending), values, indices);
}

namespace {

at::Tensor scan(const char* name, const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                ReduceKind kind) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  auto dt = dtype.value_or(c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type());
  Op op(name);
  Graph& g = op.g();
  Value v = convert(g, op.in(self), dt);
  if (self.dim() == 0) v = reshape(g, v, {1});
  auto acc = accumulate_type(dt);
  Value r = self.numel() == 0 ? v : convert(g, cumulative(g, convert(g, v, acc), dim, kind), dt);
  at::Tensor out = op.result(reshape(g, r, shape_of(self)));
  op.run();
  return out;
}
}  // namespace

at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan("aten::cumsum", self, dim, dtype, ReduceKind::Sum);
}
at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  return scan("aten::cumprod", self, dim, dtype, ReduceKind::Prod);
}

// --------------------------------------------------------------------------
// index_add / index_copy / index_fill / take / put_ / masked_scatter_ /
// scatter_reduce: scatters into the flattened tensor.

namespace {

enum class IndexCombine { Add, Copy };

// index_add (source * alpha added) and index_copy (source written) along `dim`.
at::Tensor index_combine(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& source, IndexCombine how, const at::Scalar& alpha, Dest d) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK_INDEX(index.dim() <= 1, name, "(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, name,
              "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), name, "(): self (", self.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  int64_t n = index.numel();
  TORCH_CHECK(source.dim() == 0 ? n == 1 : source.size(dim) == n, name,
              "(): Number of indices should be equal to source.size(dim)");
  if (!d.is_new()) {
    at::assert_no_internal_overlap(d.target());
    at::assert_no_overlap(d.target(), index);
    at::assert_no_overlap(d.target(), source);
  }
  d.resize_out(self.sizes());
  Op op(name);
  Graph& g = op.g();
  Shape target = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape src_shape = target;
  src_shape[dim] = n;
  Value result = reshape(g, op.in(self), {self.numel()});
  if (n > 0 && self.numel() > 0) {
    Value along = broadcast_in_dim(g, wrap_index(op, index, reshape(g, op.in(index), {n}), target[dim]), src_shape, {dim});
    Value updates = reshape(g, op.in(source), src_shape);
    if (how == IndexCombine::Add && !alpha.equal(1))
      updates = binary(g, "multiply", updates, broadcast_to(g, op.scalar(alpha, self.scalar_type()), src_shape));
    result = scatter_flat(g, result, flat_index_with(g, target, src_shape, dim, along), updates, how == IndexCombine::Add);
  }
  return d.deliver(op, reshape(g, result, shape_of(self)));
}
}  // namespace

at::Tensor index_add(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                     const at::Scalar& alpha) {
  return index_combine(d.form_name("aten::index_add", "aten::index_add_", "aten::index_add.out"), self, dim, index, source, IndexCombine::Add, alpha, d);
}
at::Tensor index_copy(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return index_combine(d.form_name("aten::index_copy", "aten::index_copy_", "aten::index_copy.out"), self, dim, index, source, IndexCombine::Copy, 1, d);
}

namespace {

at::Tensor& index_fill_with(at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const std::function<Value(Op&)>& value) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  TORCH_CHECK_INDEX(index.scalar_type() == c10::kLong, "index_fill_(): Expected dtype int64 for index.");
  if (index.device().is_cpu() && self.device().type() == c10::DeviceType::PrivateUse1 && index.numel() > 0) {
    check_host_index(index, dim, self.dim() == 0 ? 1 : self.size(dim));
    return index_fill_with(self, dim, index.to(self.device()), value);
  }
  int64_t n = index.numel();
  if (n == 0 || self.numel() == 0) return self;
  Op op("aten::index_fill_");
  Graph& g = op.g();
  Shape target = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape fill_shape = target;
  fill_shape[dim] = n;
  Value along = broadcast_in_dim(g, wrap_index(op, index, reshape(g, op.in(index), {n}), target[dim]), fill_shape, {dim});
  Value updates = broadcast_to(g, convert(g, value(op), self.scalar_type()), fill_shape);
  Value r = scatter_flat(g, reshape(g, op.in(self), {self.numel()}), flat_index_with(g, target, fill_shape, dim, along),
                         updates, false);
  op.write(self, reshape(g, r, shape_of(self)));
  op.run();
  return self;
}
}  // namespace

at::Tensor& index_fill_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  TORCH_CHECK(self.is_complex() || !value.isComplex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  return index_fill_with(self, dim, index, [&](Op& op) { return op.scalar(value, self.scalar_type()); });
}
at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  TORCH_CHECK(self.is_complex() || !value.is_complex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  return index_fill_with(self, dim, index, [&](Op& op) { return op.in(value); });
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK(index.scalar_type() == c10::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  Op op("aten::take");
  Graph& g = op.g();
  if (index.numel() == 0) {
    at::Tensor out = op.result(constant(g, 0, self.scalar_type(), shape_of(index)));
    op.run();
    return out;
  }
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  Value flat = reshape(g, op.in(self), {self.numel()});
  Value idx = wrap_index(op, index, op.in(index), self.numel());
  at::Tensor out = op.result(gather_flat(g, flat, idx));
  op.run();
  return out;
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index.scalar_type() == c10::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to have the same dtype");
  TORCH_CHECK(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of "
              "elements, but got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  if (index.numel() == 0) return self;
  Op op("aten::put_");
  Graph& g = op.g();
  Value flat = reshape(g, op.in(self), {self.numel()});
  Value idx = reshape(g, wrap_index(op, index, op.in(index), self.numel()), {index.numel()});
  Value r = scatter_flat(g, flat, idx, reshape(g, op.in(source), {source.numel()}), accumulate);
  op.write(self, reshape(g, r, shape_of(self)));
  op.run();
  return self;
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "masked_scatter_: expected self and source to have same "
              "dtypes but got ", self.scalar_type(), " and ", source.scalar_type());
  // Which positions take the next source element depends on the mask's values.
  at::Tensor positions =
      at::nonzero(to_cpu(mask, "masked_scatter_").expand(self.sizes()).reshape({-1})).reshape({-1});
  int64_t n = positions.numel();
  if (n == 0) return self;
  TORCH_CHECK(source.numel() >= n, "masked_scatter_: expected source to have at least ", n, " elements, got ",
              source.numel());
  at::Tensor device_positions = positions.to(self.device());
  Op op("aten::masked_scatter_");
  Graph& g = op.g();
  Value updates = slice_dim(g, reshape(g, op.in(source), {source.numel()}), 0, 0, n);
  Value r = scatter_flat(g, reshape(g, op.in(self), {self.numel()}), op.in(device_positions), updates, false);
  op.write(self, reshape(g, r, shape_of(self)));
  op.run();
  return self;
}

namespace {

// scatter_reduce: every src element combines into self at (index along dim).
at::Tensor scatter_reduce_impl(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                               const at::Tensor& src, c10::string_view reduce, bool include_self,
                               Dest d) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(index.scalar_type() == c10::kLong, name, "(): Expected dtype int64 for index");
  TORCH_CHECK(self.scalar_type() == src.scalar_type(), name, "(): Expected self.dtype to be equal to src.dtype");
  ReduceKind kind;
  bool mean = reduce == "mean";
  if (reduce == "sum" || mean) kind = ReduceKind::Sum;
  else if (reduce == "prod") kind = ReduceKind::Prod;
  else if (reduce == "amax") kind = ReduceKind::Max;
  else if (reduce == "amin") kind = ReduceKind::Min;
  else TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  d.resize_out(self.sizes());
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type();
  Shape target = self.dim() == 0 ? Shape{1} : shape_of(self);
  Value base = reshape(g, op.in(self), {self.numel()});
  Value result = base;
  if (index.numel() > 0) {
    Shape s = index.dim() == 0 ? Shape{1} : shape_of(index);
    Shape src_shape = src.dim() == 0 ? Shape{1} : shape_of(src);
    std::vector<int64_t> start(s.size(), 0), one(s.size(), 1);
    Value updates = slice(g, reshape(g, op.in(src), src_shape), start, s, one);
    Value along = wrap_index(op, index, reshape(g, op.in(index), s), target[dim]);
    Value flat_idx = flat_index_with(g, target, s, dim, along);
    Value start_values = base;
    if (!include_self) {
      // Positions that receive an update start from the reduction's identity.
      c10::Scalar identity = reduce_identity(dt, kind);
      start_values = scatter_flat(g, base, flat_idx, constant(g, identity, dt, s), false);
    }
    result = scatter_flat(g, start_values, flat_idx, updates, kind);
    if (mean) {
      // Counts in the result's real type (int64 for integers); a complex sum divides by them as complex.
      bool complex = c10::isComplexType(dt);
      auto ct = c10::isFloatingType(dt) ? dt : complex ? c10::toRealValueType(dt) : c10::kLong;
      Value counts = constant(g, include_self ? 1 : 0, ct, {self.numel()});
      counts = scatter_flat(g, counts, flat_idx, constant(g, 1, ct, s), true);
      counts = binary(g, "maximum", counts, constant(g, 1, ct, {self.numel()}));
      Value sum = complex ? result : convert(g, result, ct);
      Value q = binary(g, "divide", sum, complex ? convert(g, counts, dt) : counts);
      if (!c10::isFloatingType(dt) && !complex) {
        // Integer mean rounds toward negative infinity, as on the CPU.
        Value r = binary(g, "remainder", sum, counts);
        Value zero = constant(g, 0, ct, {self.numel()});
        Value fix = binary(g, "and", compare(g, r, zero, "NE", ct), compare(g, sum, zero, "LT", ct));
        q = select(g, fix, binary(g, "subtract", q, constant(g, 1, ct, {self.numel()})), q);
      }
      result = convert(g, q, dt);
    }
  }
  return d.deliver(op, reshape(g, result, shape_of(self)));
}
}  // namespace

at::Tensor scatter_reduce_two(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                              c10::string_view reduce, bool include_self) {
  return scatter_reduce_impl(d.form_name("aten::scatter_reduce", "aten::scatter_reduce_", "aten::scatter_reduce.out"), self, dim, index, src, reduce, include_self, d);
}

// --------------------------------------------------------------------------
// Order statistics (kthvalue, median, nanmedian), running max/min and
// logcumsumexp, trace, bucketize/searchsorted, isin.

namespace {

// Values and indices at per-row position `pos` (int64, kept shape) of the
// ascending sort of self along dim (NaN last).
std::tuple<at::Tensor, at::Tensor> order_statistic(const char* name, const at::Tensor& self, int64_t dim, bool keepdim,
                                                   const std::function<Value(Op&, Value sorted, const Shape& kept)>& pos,
                                                   bool nan_propagates) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK(self.numel() > 0, name, "(): Expected reduction dim ", dim, " to have non-zero size.");
  Op op(name);
  Graph& g = op.g();
  Shape shape = self.dim() == 0 ? Shape{1} : shape_of(self);
  Value v = reshape(g, op.in(self), shape);
  auto [sorted, order] = sort_with_indices(g, v, dim, false);
  Shape kept = shape;
  kept[dim] = 1;
  Value p = pos(op, sorted, kept);
  if (nan_propagates && is_float(self.scalar_type())) {
    // Any NaN makes the answer NaN, at the first NaN of the sorted row.
    Value nans = reduce(g, convert(g, compare(g, v, v, "NE", self.scalar_type()), c10::kLong), {dim}, ReduceKind::Sum);
    nans = reshape(g, nans, kept);
    Value first_nan = binary(g, "subtract", constant(g, shape[dim], c10::kLong, kept), nans);
    p = select(g, compare(g, nans, constant(g, 0, c10::kLong, kept), "GT", c10::kLong), first_nan, p);
  }
  Value flat = flat_index_with(g, shape, kept, dim, p);
  Value values = gather_flat(g, reshape(g, sorted, {numel_of(shape)}), flat);
  Value indices = gather_flat(g, reshape(g, order, {numel_of(shape)}), flat);
  Shape out = kept;
  if (!keepdim) out.erase(out.begin() + dim);
  if (self.dim() == 0) out = {};
  at::Tensor out_values = op.result(reshape(g, values, out));
  at::Tensor out_indices = op.result(reshape(g, indices, out));
  op.run();
  return {out_values, out_indices};
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> kthvalue(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  int64_t n = self.dim() == 0 ? 1 : self.size(at::maybe_wrap_dim(dim, self.dim()));
  TORCH_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", dim);
  return order_statistic("aten::kthvalue", self, dim, keepdim,
                         [&](Op& op, Value, const Shape& kept) { return constant(op.g(), k - 1, c10::kLong, kept); },
                         false);
}

std::tuple<at::Tensor, at::Tensor> median_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  int64_t n = self.dim() == 0 ? 1 : self.size(at::maybe_wrap_dim(dim, self.dim()));
  return order_statistic("aten::median", self, dim, keepdim,
                         [&](Op& op, Value, const Shape& kept) { return constant(op.g(), (n - 1) / 2, c10::kLong, kept); },
                         true);
}
namespace {
// The median of no values is NaN, as on CPU.
at::Tensor nan_scalar_like(const at::Tensor& self) {
  return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
}
}  // namespace

at::Tensor median(const at::Tensor& self) {
  if (self.numel() == 0) return nan_scalar_like(self);
  return std::get<0>(median_dim(self.reshape({-1}), 0, false));
}

std::tuple<at::Tensor, at::Tensor> nanmedian_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  int64_t d = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  return order_statistic("aten::nanmedian", self, dim, keepdim,
                         [&](Op& op, Value sorted, const Shape& kept) {
                           Graph& g = op.g();
                           // The median of the non-NaN prefix of the sorted row.
                           Value valid = compare(g, sorted, sorted, "EQ", g.type(sorted).dtype);
                           Value m = reshape(g, reduce(g, convert(g, valid, c10::kLong), {d}, ReduceKind::Sum), kept);
                           Value one = constant(g, 1, c10::kLong, kept);
                           Value p = binary(g, "divide", binary(g, "subtract", m, one), constant(g, 2, c10::kLong, kept));
                           return binary(g, "maximum", p, constant(g, 0, c10::kLong, kept));
                         },
                         false);
}
at::Tensor nanmedian(const at::Tensor& self) {
  if (self.numel() == 0) return nan_scalar_like(self);
  return std::get<0>(nanmedian_dim(self.reshape({-1}), 0, false));
}

namespace {

void cumulative_arg_into(const char* name, const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim,
                         bool is_max) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  if (self.numel() == 0) return;
  Op op(name);
  Graph& g = op.g();
  Shape shape = self.dim() == 0 ? Shape{1} : shape_of(self);
  auto [v, i] = cumulative_arg(g, reshape(g, op.in(self), shape), dim, is_max);
  op.write(values, reshape(g, v, shape_of(self)));
  op.write(indices, reshape(g, i, shape_of(self)));
  op.run();
}
}  // namespace

void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  cumulative_arg_into("aten::cummax", self, values, indices, dim, true);
}
void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  cumulative_arg_into("aten::cummin", self, values, indices, dim, false);
}

at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  check_not_complex("logcumsumexp", self);
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "logcumsumexp(): expected a floating point input, got ",
              self.scalar_type());
  Op op("aten::logcumsumexp");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  auto acc = accumulate_type(dt);
  Shape shape = self.dim() == 0 ? Shape{1} : shape_of(self);
  Value v = convert(g, reshape(g, op.in(self), shape), acc);
  Value r = self.numel() == 0 ? v : cumulative_logsumexp(g, v, dim);
  at::Tensor out = op.result(reshape(g, convert(g, r, dt), shape_of(self)));
  op.run();
  return out;
}

at::Tensor trace(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  auto dt = c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type();
  int64_t n = std::min(self.size(0), self.size(1));
  Op op("aten::trace");
  Graph& g = op.g();
  Value r = constant(g, 0, dt);
  if (n > 0) {
    Value diag_index = binary(g, "multiply", iota(g, c10::kLong, {n}, 0), constant(g, self.size(1) + 1, c10::kLong, {n}));
    Value diag = gather_flat(g, reshape(g, convert(g, op.in(self), dt), {self.numel()}), diag_index);
    r = reduce(g, diag, {0}, ReduceKind::Sum);
  }
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

namespace {

// For each value, its insertion point in its (sorted) row of boundaries.
at::Tensor insertion_points(const char* name, const at::Tensor& sorted, const at::Tensor& values, bool out_int32,
                            bool right) {
  TORCH_CHECK(sorted.dim() == 1 || sorted.sizes().slice(0, sorted.dim() - 1) == values.sizes().slice(0, values.dim() - 1),
              name, "(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and "
              "input value tensor must match, but we got boundaries tensor ", sorted.sizes(), " and input value tensor ",
              values.sizes());
  auto ct = at::promote_types(sorted.scalar_type(), values.scalar_type());
  Op op(name);
  Graph& g = op.g();
  Value r = binary_search(g, convert(g, op.in(sorted), ct), convert(g, op.in(values), ct), right);
  if (out_int32) r = convert(g, r, c10::kInt);
  at::Tensor out = op.result(r);
  op.run();
  return out;
}
}  // namespace

at::Tensor searchsorted(const at::Tensor& sorted, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  if (side) {
    TORCH_CHECK(*side == "left" || *side == "right", "torch.searchsorted(): side can only be 'left' or 'right' but "
                "got ", *side);
    TORCH_CHECK(!right || *side == "right", "torch.searchsorted(): side and right can't be set to opposites, got side "
                "of left while right was True");
    right = *side == "right";
  }
  at::Tensor seq = sorter.has_value() && sorter->defined() ? sorted.gather(-1, *sorter) : sorted;
  return insertion_points("searchsorted", seq, self, out_int32, right);
}

at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return insertion_points("bucketize", boundaries, self, out_int32, right);
}

at::Tensor isin(const at::Tensor& elements, const at::Tensor& test_elements, bool /*assume_unique*/, bool invert) {
  auto ct = at::promote_types(elements.scalar_type(), test_elements.scalar_type());
  Op op("aten::isin");
  Graph& g = op.g();
  Shape es = shape_of(elements);
  int64_t t = test_elements.numel();
  Value r;
  if (t == 0) {
    r = constant(g, invert, c10::kBool, es);
  } else {
    Shape pairs = es;
    pairs.push_back(t);
    std::vector<int64_t> edims(es.size());
    for (size_t d = 0; d < es.size(); ++d) edims[d] = d;
    Value e = broadcast_in_dim(g, convert(g, op.in(elements), ct), pairs, edims);
    Value te = broadcast_in_dim(g, convert(g, reshape(g, op.in(test_elements), {t}), ct), pairs, {(int64_t)es.size()});
    r = reduce(g, compare(g, e, te, "EQ", ct), {(int64_t)es.size()}, ReduceKind::Or);
    if (invert) r = unary(g, "not", r);
  }
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

// --------------------------------------------------------------------------
// nonzero_static (fixed size: on the device), unique (host), histc,
// index_reduce, cross, channel_shuffle.

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  int64_t rank = self.dim(), n = self.numel();
  Op op("aten::nonzero_static");
  Graph& g = op.g();
  Shape out_shape{size, rank};
  Value r = constant(g, fill_value, c10::kLong, out_shape);
  if (n > 0 && size > 0 && rank > 0) {
    // Each nonzero element's rank among the nonzeros is its row; rows past `size` are dropped.
    Value mask = convert(g, reshape(g, op.in(self), {n}), c10::kBool);
    Value row = binary(g, "subtract", cumulative(g, convert(g, mask, c10::kLong), 0, ReduceKind::Sum),
                       constant(g, 1, c10::kLong, {n}));
    Value keep = binary(g, "and", mask, compare(g, row, constant(g, size, c10::kLong, {n}), "LT", c10::kLong));
    // Dropped elements go to an extra row that is sliced away.
    Value target = select(g, keep, row, constant(g, size, c10::kLong, {n}));
    Shape coords_shape{n, rank};
    Value flat = broadcast_in_dim(g, iota(g, c10::kLong, {n}, 0), coords_shape, {0});
    std::vector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * self.size(d + 1);
    Value coords = constant(g, 0, c10::kLong, coords_shape);
    for (int64_t d = 0; d < rank; ++d) {
      Value c = binary(g, "remainder", binary(g, "divide", flat, constant(g, strides[d], c10::kLong, coords_shape)),
                       constant(g, self.size(d), c10::kLong, coords_shape));
      Value is_d = compare(g, iota(g, c10::kLong, coords_shape, 1), constant(g, d, c10::kLong, coords_shape), "EQ",
                           c10::kLong);
      coords = select(g, is_d, c, coords);
    }
    Value dest = binary(g, "add", binary(g, "multiply", broadcast_in_dim(g, target, coords_shape, {0}),
                                         constant(g, rank, c10::kLong, coords_shape)),
                        iota(g, c10::kLong, coords_shape, 1));
    Value buffer = constant(g, fill_value, c10::kLong, {(size + 1) * rank});
    buffer = scatter_flat(g, buffer, dest, coords, false);
    r = reshape(g, slice_dim(g, buffer, 0, 0, size * rank), out_shape);
  }
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

namespace {

// Ops whose output shape depends on the values: computed on the host copy.
std::vector<at::Tensor> to_device(std::vector<at::Tensor> ts, const at::Device& device) {
  for (auto& t : ts) t = t.to(device);
  return ts;
}
}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts) {
  auto [u, inv, counts] = at::_unique2(to_cpu(self, "unique"), sorted, return_inverse, return_counts);
  auto r = to_device({u, inv, counts}, self.device());
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [u, inv] = at::_unique(to_cpu(self, "unique"), sorted, return_inverse);
  auto r = to_device({u, inv}, self.device());
  return {r[0], r[1]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts, std::optional<int64_t> dim) {
  auto [u, inv, counts] = at::unique_consecutive(to_cpu(self, "unique"), return_inverse, return_counts, dim);
  auto r = to_device({u, inv, counts}, self.device());
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim(const at::Tensor& self, int64_t dim, bool sorted,
                                                          bool return_inverse, bool return_counts) {
  auto [u, inv, counts] = at::unique_dim(to_cpu(self, "unique"), dim, sorted, return_inverse, return_counts);
  auto r = to_device({u, inv, counts}, self.device());
  return {r[0], r[1], r[2]};
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  TORCH_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins, " for bins");
  // Integer inputs count as on CUDA (the CPU kernel takes floating point only).
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()) || c10::isIntegralType(self.scalar_type(), false),
              "\"histc\" not implemented for '", self.scalar_type(), "'");
  double lo = min.toDouble(), hi = max.toDouble();
  TORCH_CHECK(lo <= hi, "torch.histc(): max must be larger than min");
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc(): range of [", lo, ", ", hi, "] is not finite");
  auto dt = self.scalar_type();
  Op op("aten::histc");
  Graph& g = op.g();
  int64_t n = self.numel();
  Value r = constant(g, 0, dt, {bins});
  if (n > 0) {
    Value x = convert(g, reshape(g, op.in(self), {n}), c10::kDouble);
    Value vlo = constant(g, lo, c10::kDouble), vhi = constant(g, hi, c10::kDouble);
    if (lo == hi) {  // the data's own range (widened by one when it is a single value)
      vlo = reduce(g, x, {0}, ReduceKind::Min);
      vhi = reduce(g, x, {0}, ReduceKind::Max);
      Value same = compare(g, vlo, vhi, "EQ", c10::kDouble);
      vlo = select(g, same, binary(g, "subtract", vlo, constant(g, 1, c10::kDouble)), vlo);
      vhi = select(g, same, binary(g, "add", vhi, constant(g, 1, c10::kDouble)), vhi);
    }
    Value blo = broadcast_to(g, vlo, {n}), bhi = broadcast_to(g, vhi, {n});
    Value inside = binary(g, "and", compare(g, x, blo, "GE", c10::kDouble), compare(g, x, bhi, "LE", c10::kDouble));
    Value pos = binary(g, "divide", binary(g, "multiply", binary(g, "subtract", x, blo), constant(g, bins, c10::kDouble, {n})),
                       binary(g, "subtract", bhi, blo));
    Value bin = binary(g, "minimum", convert(g, unary(g, "floor", pos), c10::kLong), constant(g, bins - 1, c10::kLong, {n}));
    // Elements outside the range land in an extra bin that is sliced away.
    bin = select(g, inside, bin, constant(g, bins, c10::kLong, {n}));
    Value counts = scatter_flat(g, constant(g, 0, dt, {bins + 1}), bin, constant(g, 1, dt, {n}), true);
    r = slice_dim(g, counts, 0, 0, bins);
  }
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

namespace {

at::Tensor index_reduce_impl(const char* name, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce, bool include_self,
                             Dest d) {
  TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin", name,
              "(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  TORCH_CHECK_INDEX(index.dim() <= 1, name, "(): Index is supposed to be a vector");
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  // index_reduce along dim is scatter_reduce with the index repeated across source's other dimensions.
  std::vector<int64_t> view(std::max<int64_t>(source.dim(), 1), 1);
  view[dim] = index.numel();
  at::Tensor expanded = index.to(c10::kLong).reshape(view).expand(source.dim() == 0 ? at::IntArrayRef{1} : source.sizes());
  at::Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  return scatter_reduce_impl(name, self, dim, expanded, src, reduce, include_self, d);
}
}  // namespace

at::Tensor index_reduce(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                        c10::string_view reduce, bool include_self) {
  return index_reduce_impl(d.form_name("aten::index_reduce", "aten::index_reduce_", "aten::index_reduce.out"), self, dim, index, source, reduce, include_self, d);
}

at::Tensor linalg_cross(Dest d, const at::Tensor& self, const at::Tensor& other, int64_t dim) {
  TORCH_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  auto shape = at::infer_size_dimvector(self.sizes(), other.sizes());
  dim = at::maybe_wrap_dim(dim, (int64_t)shape.size());
  TORCH_CHECK(self.size(dim) == 3 && other.size(dim) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(dim), " and ", other.size(dim));
  auto rt = at::result_type(self, other);
  TORCH_CHECK_NOT_IMPLEMENTED(rt != c10::kBool, "\"cross\" not implemented for 'Bool'");
  Op op("aten::linalg_cross");
  Graph& g = op.g();
  Shape s(shape.begin(), shape.end());
  Value a = broadcast_to(g, convert(g, op.in(self), rt), s), b = broadcast_to(g, convert(g, op.in(other), rt), s);
  auto part = [&](Value v, int64_t i) { return slice_dim(g, v, dim, i, i + 1); };
  auto term = [&](int64_t i, int64_t j) {
    return binary(g, "subtract", binary(g, "multiply", part(a, i), part(b, j)), binary(g, "multiply", part(a, j), part(b, i)));
  };
  at::Tensor out = op.result(concat(g, {term(1, 2), term(2, 0), term(0, 1)}, dim));
  op.run();
  return d.deliver(out);
}

at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input to have at least 3 dimensions, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0 && self.size(1) % groups == 0, "Number of channels must be divisible by groups. Got ",
              self.size(1), " channels and ", groups, " groups.");
  std::vector<int64_t> grouped{self.size(0), groups, self.size(1) / groups};
  grouped.insert(grouped.end(), self.sizes().begin() + 2, self.sizes().end());
  return self.reshape(grouped).transpose(1, 2).reshape(self.sizes()).contiguous();
}

// The gradient of Tensor.unfold: every window element adds into the input
// position it was read from.
at::Tensor unfold_backward(const at::Tensor& grad_in, c10::SymIntArrayRef input_sizes, int64_t dim, int64_t size,
                           int64_t step) {
  TORCH_CHECK_VALUE(step > 0, "step is ", step, " but must be > 0");
  TORCH_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  Shape in;
  for (auto& v : input_sizes) in.push_back(v.expect_int());
  int64_t rank = static_cast<int64_t>(in.size());
  Shape shape = shape_of(grad_in);
  TORCH_CHECK((int64_t)shape.size() == std::max<int64_t>(rank, 1) + (rank == 0 ? 0 : 1) || rank == 0,
              "unfold_backward: grad_in has the wrong number of dimensions");
  Op op("aten::unfold_backward");
  Graph& g = op.g();
  auto acc = accumulate_type(grad_in.scalar_type());
  Value grad = convert(g, op.in(grad_in), acc);
  if (rank == 0) {
    at::Tensor out = op.result(convert(g, reshape(g, grad, {}), grad_in.scalar_type()));
    op.run();
    return out;
  }
  dim = at::maybe_wrap_dim(dim, rank);
  auto k = [&](int64_t v) { return constant(g, v, c10::kLong, shape); };
  Value flat = k(0);
  for (int64_t d = 0; d < rank; ++d) {
    Value coord = iota(g, c10::kLong, shape, d);
    if (d == dim) coord = binary(g, "add", binary(g, "multiply", coord, k(step)), iota(g, c10::kLong, shape, rank));
    flat = binary(g, "add", binary(g, "multiply", flat, k(in[d])), coord);
  }
  Value sums = scatter_flat(g, constant(g, 0, acc, {numel_of(in)}), flat, grad, true);
  at::Tensor out = op.result(convert(g, reshape(g, sums, in), grad_in.scalar_type()));
  op.run();
  return out;
}

// A sparse COO tensor's dense form: its values summed into zeros at its
// indices (uncoalesced duplicates add up, as on the CPU).
at::Tensor sparse_to_dense(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                           std::optional<bool> masked_grad) {
  auto values = self._values();
  if (dtype) values = values.to(*dtype);
  auto dense = at::zeros(self.sizes(), values.options().layout(at::kStrided));
  if (self._nnz() == 0) return dense;
  // No sparse dims (a 0-d tensor's sparse form): every value is the whole tensor.
  if (self.sparse_dim() == 0) return dense.add_(values.sum(0).to(values.scalar_type()));
  auto indices = self._indices();
  c10::List<std::optional<at::Tensor>> per_dim;
  for (int64_t d = 0; d < self.sparse_dim(); ++d) per_dim.push_back(indices[d]);
  dense.index_put_(per_dim, values, /*accumulate=*/true);
  return dense;
}

// --------------------------------------------------------------------------
// cat, gather / scatter, index_select, embedding backward, masked_fill.

at::Tensor cat(Dest d, const at::ITensorListRef& tensors, int64_t dim) {
  if (d.form() == Dest::Out) {
    at::assert_no_internal_overlap(d.target());
    for (const at::Tensor& t : tensors) at::assert_no_overlap(d.target(), t);
  }
  std::vector<at::Tensor> parts;
  at::Tensor first;
  for (const at::Tensor& t : tensors) {
    if (!first.defined()) first = t;
    // Legacy rule: 1-D empty tensors are skipped whatever the other shapes.
    if (t.dim() == 1 && t.numel() == 0) continue;
    parts.push_back(t);
  }
  TORCH_CHECK(first.defined(), "torch.cat(): expected a non-empty list of Tensors");
  // The skipped empty tensors still take part in type promotion.
  auto dt = at::native::result_type(tensors);
  TORCH_CHECK(d.form() != Dest::Out || at::canCast(dt, d.target().scalar_type()),
              "torch.cat(): input types can't be cast to the desired output type ", d.target().scalar_type());
  if (parts.empty()) return d.deliver(at::empty({0}, first.options().dtype(dt)));
  dim = at::maybe_wrap_dim(dim, parts[0].dim());
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
  // As PyTorch: inputs that all suggest one memory format (channels_last) give it to the result.
  auto format = parts[0].suggest_memory_format();
  for (auto& t : parts)
    if (t.suggest_memory_format() != format) format = at::MemoryFormat::Contiguous;
  at::Tensor out = op.result(r, format);
  op.run();
  return d.deliver(out);
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  // As on the CPU, the index dtype only matters when there are indices.
  if (index.numel() == 0) return at::empty(index.sizes(), self.options());
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
              "gather(): Expected dtype int32/int64 for index");
  // A 0-d tensor counts as 1-d here, as on the CPU.
  TORCH_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
              "Index tensor must have the same number of dimensions as input tensor");
  Op op("aten::gather");
  Graph& g = op.g();
  Shape src = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape s = index.dim() == 0 ? Shape{1} : shape_of(index);
  if (index.numel() == 0) {
    at::Tensor out = op.result(constant(g, 0, self.scalar_type(), shape_of(index)));
    return out;
  }
  Value along = wrap_index(op, index, reshape(g, op.in(index), s), src[dim]);
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
  // As on the CPU, the index dtype only matters when there are indices.
  TORCH_CHECK(index.numel() == 0 || index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, name,
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
  Value along = wrap_index(op, index, reshape(g, op.in(index), s), dst[dim]);
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

at::Tensor scatter_add(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return d.deliver(scatter_impl("aten::scatter_add", self, dim, index, src, 0, ReduceKind::Sum));
}

at::Tensor scatter_src(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return d.deliver(scatter_impl("aten::scatter", self, dim, index, src, 0, std::nullopt));
}

at::Tensor scatter_value(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  return d.deliver(scatter_impl("aten::scatter", self, dim, index, at::Tensor(), value, std::nullopt));
}
at::Tensor scatter_reduce(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                          c10::string_view reduce) {
  return d.deliver(scatter_impl("aten::scatter", self, dim, index, src, 0, scatter_reduce_kind(reduce)));
}
at::Tensor scatter_value_reduce(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Scalar& value, c10::string_view reduce) {
  return d.deliver(scatter_impl("aten::scatter", self, dim, index, at::Tensor(), value, scatter_reduce_kind(reduce)));
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
  Value idx = wrap_index(op, index, reshape(g, op.in(index), {index.numel()}), src[dim]);
  Value r = gather_along(g, reshape(g, op.in(self), src), dim, idx);
  if (self.dim() == 0) r = reshape(g, r, {});
  at::Tensor out = op.result(r);
  op.run();
  return out;
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
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
  if (scale_grad_by_freq) {
    // Each row's gradient is divided by how often its index occurs.
    Value flat = reshape(g, idx, {n});
    Value counts = scatter_flat(g, constant(g, 0, acc, {num_weights}), flat, constant(g, 1, acc, {n}), true);
    go = binary(g, "divide", go, broadcast_to(g, reshape(g, gather_flat(g, counts, flat), {n, 1}), nd));
  }
  Value r = scatter_add_along(g, constant(g, 0.0, acc, {num_weights, d}), 0, reshape(g, idx, {n}), go);
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

}  // namespace torch_tpu::aten
