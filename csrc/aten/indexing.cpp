// Advanced indexing, data-dependent selection, reordering (flip, roll, sort,
// topk), triangular masks and scans.
//
// Advanced indexing lowers to one gather (or scatter) over the flattened
// tensor: every element of the result gets the flat source index it reads.
// Boolean masks and nonzero have data-dependent shapes, so they read the mask
// on the host (a flush in fused mode, counted under the op's name).
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>

#include <functional>

#include "aten/kernels.h"
#include "aten/op.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int64_t d = (int64_t)s.size() - 2; d >= 0; --d) strides[d] = strides[d + 1] * s[d + 1];
  return strides;
}

// Boolean masks become the long index tensors of their true positions (one per
// mask dimension); the list is padded with undefined entries to self.dim().
std::vector<at::Tensor> expand_indices(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  std::vector<at::Tensor> out;
  for (const std::optional<at::Tensor>& opt : indices) {
    at::Tensor idx = opt.has_value() ? *opt : at::Tensor();
    if (idx.defined() && (idx.scalar_type() == c10::kBool || idx.scalar_type() == c10::kByte)) {
      int64_t start = out.size();
      for (int64_t j = 0; j < idx.dim(); ++j) {
        TORCH_CHECK_INDEX(start + j < self.dim() && idx.size(j) == self.size(start + j), "The shape of the mask ",
                          idx.sizes(), " at index ", j, " does not match the shape of the indexed tensor ",
                          self.sizes(), " at index ", start + j);
      }
      at::Tensor nz = at::nonzero(idx);
      for (int64_t j = 0; j < idx.dim(); ++j) out.push_back(nz.select(1, j));
      continue;
    }
    if (idx.defined()) {
      TORCH_CHECK_INDEX(idx.scalar_type() == c10::kLong || idx.scalar_type() == c10::kInt,
                        "tensors used as indices must be long, int, byte or bool tensors");
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
  at::DimVector bshape = at::infer_size_dimvector(defined[0].sizes(), defined[0].sizes());
  for (auto& t : defined) bshape = at::infer_size_dimvector(bshape, t.sizes());
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
      Value i = wrap_index(g, broadcast_to(g, op.in(idx[d]), b), src[d]);
      coord = broadcast_in_dim(g, i, plan.result, bdims);
    } else {
      coord = iota(g, c10::kLong, plan.result, result_dim_of[d]);
    }
    flat = binary(g, "add", flat, binary(g, "multiply", coord, constant(g, strides[d], c10::kLong, plan.result)));
  }
  plan.flat_index = flat;
  return plan;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
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
  auto idx = expand_indices(self, indices);
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Index put requires the source and destination dtypes match, "
              "got ", self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
  Op op("aten::index_put_");
  Graph& g = op.g();
  IndexPlan plan = plan_index(op, self, idx);
  if (numel_of(plan.result) == 0) return self;
  TORCH_CHECK(at::is_expandable_to(values.sizes(), plan.result), "shape mismatch: value tensor of shape ",
              values.sizes(), " cannot be broadcast to indexing result of shape ", at::IntArrayRef(plan.result));
  Value flat_self = reshape(g, op.in(self), {self.numel()});
  Value v = broadcast_to(g, op.in(values), plan.result);
  Value r = scatter_flat(g, flat_self, plan.flat_index, v, accumulate);
  op.write(self, reshape(g, r, shape_of(self)));
  op.run();
  return self;
}

at::Tensor nonzero(const at::Tensor& self) {
  // The result's length depends on the values: read them on the host.
  at::Tensor host = to_cpu(self, "nonzero");
  return at::nonzero(host).to(self.device());
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
// Keeps the elements on or above (upper) / on or below (lower) the diagonal
// `k` of the last two dimensions; the rest become 0.
Value triangle(Graph& g, Value v, int64_t k, bool upper) {
  auto t = g.type(v);
  int64_t r = t.shape.size();
  Value row = iota(g, c10::kLong, t.shape, r - 2);
  Value col = iota(g, c10::kLong, t.shape, r - 1);
  Value diff = binary(g, "subtract", col, row);
  Value keep = compare(g, diff, constant(g, k, c10::kLong, t.shape), upper ? "GE" : "LE", c10::kLong);
  return select(g, keep, v, constant(g, 0, t.dtype, t.shape));
}

at::Tensor triangle_op(const char* name, const at::Tensor& self, int64_t k, bool upper, const at::Tensor* dst) {
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  if (dst && dst != &self) at::native::resize_output(*dst, self.sizes());
  Op op(name);
  Value v = triangle(op.g(), op.in(self), k, upper);
  if (dst) {
    op.write(*dst, v);
    op.run();
    return *dst;
  }
  at::Tensor out = op.result(v);
  op.run();
  return out;
}
}  // namespace

at::Tensor triu(const at::Tensor& self, int64_t k) { return triangle_op("aten::triu", self, k, true, nullptr); }
at::Tensor& triu_(at::Tensor& self, int64_t k) {
  triangle_op("aten::triu_", self, k, true, &self);
  return self;
}
at::Tensor& triu_out(const at::Tensor& self, int64_t k, at::Tensor& out) {
  triangle_op("aten::triu.out", self, k, true, &out);
  return out;
}
at::Tensor tril(const at::Tensor& self, int64_t k) { return triangle_op("aten::tril", self, k, false, nullptr); }
at::Tensor& tril_(at::Tensor& self, int64_t k) {
  triangle_op("aten::tril_", self, k, false, &self);
  return self;
}
at::Tensor& tril_out(const at::Tensor& self, int64_t k, at::Tensor& out) {
  triangle_op("aten::tril.out", self, k, false, &out);
  return out;
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

namespace {
at::Tensor scan(const char* name, const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,
                ReduceKind kind) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  auto dt = dtype.value_or(c10::isIntegralType(self.scalar_type(), true) ? c10::kLong : self.scalar_type());
  Op op(name);
  Graph& g = op.g();
  Value v = convert(g, op.in(self), dt);
  if (self.dim() == 0) v = reshape(g, v, {1});
  // Half types accumulate in float32, as on the CPU.
  auto acc = (dt == c10::kHalf || dt == c10::kBFloat16) ? c10::kFloat : dt;
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
                         const at::Tensor& source, IndexCombine how, const at::Scalar& alpha, const at::Tensor* dst) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK_INDEX(index.dim() <= 1, name, "(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, name,
              "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), name, "(): self (", self.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  int64_t n = index.numel();
  TORCH_CHECK(source.dim() == 0 ? n == 1 : source.size(dim) == n, name,
              "(): Number of indices should be equal to source.size(dim)");
  if (dst && dst != &self) at::native::resize_output(*dst, self.sizes());
  Op op(name);
  Graph& g = op.g();
  Shape target = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape src_shape = target;
  src_shape[dim] = n;
  Value result = reshape(g, op.in(self), {self.numel()});
  if (n > 0 && self.numel() > 0) {
    Value along = broadcast_in_dim(g, wrap_index(g, reshape(g, op.in(index), {n}), target[dim]), src_shape, {dim});
    Value updates = reshape(g, op.in(source), src_shape);
    if (how == IndexCombine::Add && !alpha.equal(1))
      updates = binary(g, "multiply", updates, broadcast_to(g, op.scalar(alpha, self.scalar_type()), src_shape));
    result = scatter_flat(g, result, flat_index_with(g, target, src_shape, dim, along), updates, how == IndexCombine::Add);
  }
  Value v = reshape(g, result, shape_of(self));
  if (dst) {
    op.write(*dst, v);
    op.run();
    return *dst;
  }
  at::Tensor out = op.result(v);
  op.run();
  return out;
}
}  // namespace

at::Tensor index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                     const at::Scalar& alpha) {
  return index_combine("aten::index_add", self, dim, index, source, IndexCombine::Add, alpha, nullptr);
}
at::Tensor& index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       const at::Scalar& alpha) {
  index_combine("aten::index_add_", self, dim, index, source, IndexCombine::Add, alpha, &self);
  return self;
}
at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          const at::Scalar& alpha, at::Tensor& out) {
  index_combine("aten::index_add.out", self, dim, index, source, IndexCombine::Add, alpha, &out);
  return out;
}
at::Tensor index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return index_combine("aten::index_copy", self, dim, index, source, IndexCombine::Copy, 1, nullptr);
}
at::Tensor& index_copy_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  index_combine("aten::index_copy_", self, dim, index, source, IndexCombine::Copy, 1, &self);
  return self;
}
at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           at::Tensor& out) {
  index_combine("aten::index_copy.out", self, dim, index, source, IndexCombine::Copy, 1, &out);
  return out;
}

namespace {
at::Tensor& index_fill_with(at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const std::function<Value(Op&)>& value) {
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  int64_t n = index.numel();
  if (n == 0 || self.numel() == 0) return self;
  Op op("aten::index_fill_");
  Graph& g = op.g();
  Shape target = self.dim() == 0 ? Shape{1} : shape_of(self);
  Shape fill_shape = target;
  fill_shape[dim] = n;
  Value along = broadcast_in_dim(g, wrap_index(g, reshape(g, op.in(index), {n}), target[dim]), fill_shape, {dim});
  Value updates = broadcast_to(g, convert(g, value(op), self.scalar_type()), fill_shape);
  Value r = scatter_flat(g, reshape(g, op.in(self), {self.numel()}), flat_index_with(g, target, fill_shape, dim, along),
                         updates, false);
  op.write(self, reshape(g, r, shape_of(self)));
  op.run();
  return self;
}
}  // namespace

at::Tensor& index_fill_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  return index_fill_with(self, dim, index, [&](Op& op) { return op.scalar(value, self.scalar_type()); });
}
at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
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
  Value idx = wrap_index(g, op.in(index), self.numel());
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
  if (index.numel() == 0) return self;
  Op op("aten::put_");
  Graph& g = op.g();
  Value flat = reshape(g, op.in(self), {self.numel()});
  Value idx = reshape(g, wrap_index(g, op.in(index), self.numel()), {index.numel()});
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
                               const at::Tensor* dst) {
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
  if (dst && dst != &self) at::native::resize_output(*dst, self.sizes());
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
    Value along = wrap_index(g, reshape(g, op.in(index), s), target[dim]);
    Value flat_idx = flat_index_with(g, target, s, dim, along);
    Value start_values = base;
    if (!include_self) {
      // Positions that receive an update start from the reduction's identity.
      c10::Scalar identity = reduce_identity(dt, kind);
      start_values = scatter_flat(g, base, flat_idx, constant(g, identity, dt, s), false);
    }
    result = scatter_flat(g, start_values, flat_idx, updates, kind);
    if (mean) {
      auto ct = c10::isFloatingType(dt) ? dt : c10::kLong;
      Value counts = constant(g, include_self ? 1 : 0, ct, {self.numel()});
      counts = scatter_flat(g, counts, flat_idx, constant(g, 1, ct, s), true);
      counts = binary(g, "maximum", counts, constant(g, 1, ct, {self.numel()}));
      Value sum = convert(g, result, ct);
      Value q = binary(g, "divide", sum, counts);
      if (!c10::isFloatingType(dt)) {
        // Integer mean rounds toward negative infinity, as on the CPU.
        Value r = binary(g, "remainder", sum, counts);
        Value zero = constant(g, 0, ct, {self.numel()});
        Value fix = binary(g, "and", compare(g, r, zero, "NE", ct), compare(g, sum, zero, "LT", ct));
        q = select(g, fix, binary(g, "subtract", q, constant(g, 1, ct, {self.numel()})), q);
      }
      result = convert(g, q, dt);
    }
  }
  Value v = reshape(g, result, shape_of(self));
  if (dst) {
    op.write(*dst, v);
    op.run();
    return *dst;
  }
  at::Tensor out = op.result(v);
  op.run();
  return out;
}
}  // namespace

at::Tensor scatter_reduce_two(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                              c10::string_view reduce, bool include_self) {
  return scatter_reduce_impl("aten::scatter_reduce", self, dim, index, src, reduce, include_self, nullptr);
}
at::Tensor& scatter_reduce_two_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                c10::string_view reduce, bool include_self) {
  scatter_reduce_impl("aten::scatter_reduce_", self, dim, index, src, reduce, include_self, &self);
  return self;
}
at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                                   c10::string_view reduce, bool include_self, at::Tensor& out) {
  scatter_reduce_impl("aten::scatter_reduce.out", self, dim, index, src, reduce, include_self, &out);
  return out;
}

}  // namespace torch_tpu::aten
