// Reading and writing a strided view of a flat storage as graphs: the start
#include "lowering/view.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

namespace {

bool contiguous(const c10::IntArrayRef sizes, const c10::IntArrayRef strides) {
  int64_t expected = 1;
  for (int64_t i = (int64_t)sizes.size() - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

}  // namespace

Shape to_shape(c10::IntArrayRef a) { return Shape(a.begin(), a.end()); }

namespace {

// ((offset / div) % mod) * mul as a 0-d int64 value (mod 0: no remainder).
Value offset_term(Graph& g, const ViewStart& at, int64_t div, int64_t mod, int64_t mul) {
  if (at.runtime < 0) {
    int64_t v = at.offset / div;
    return constant(g, (mod ? v % mod : v) * mul, c10::kLong);
  }
  Value v = at.runtime;
  if (div != 1) v = binary(g, "divide", v, constant(g, div, c10::kLong));
  if (mod) v = binary(g, "remainder", v, constant(g, mod, c10::kLong));
  if (mul != 1) v = binary(g, "multiply", v, constant(g, mul, c10::kLong));
  return v;
}

// [offset, offset + count) of a flat storage value.
Value window(Graph& g, Value base, const ViewStart& at, int64_t count) {
  if (at.runtime < 0) return slice_dim(g, base, 0, at.offset, at.offset + count);
  return dynamic_slice(g, base, {at.runtime}, {count});
}

// int64 flat element indices of a strided view: offset + sum_d i_d * stride_d.
Value flat_indices(Graph& g, const ViewStart& at, c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  Shape s = to_shape(sizes);
  Value idx = at.runtime < 0 ? constant(g, at.offset, c10::kLong, s) : broadcast_in_dim(g, at.runtime, s, {});
  for (size_t d = 0; d < s.size(); ++d) {
    if (strides[d] == 0 || s[d] == 1) continue;
    Value term = binary(g, "multiply", iota(g, c10::kLong, s, d), constant(g, strides[d], c10::kLong, s));
    idx = binary(g, "add", idx, term);
  }
  return idx;
}

// A view whose non-broadcast, non-unit dims tile a dense block in some order:
// `dims` lists those dims from outermost (largest stride) to innermost, and
// `span` is the block's element count.
struct DenseLayout {
  bool dense = false;
  std::vector<int64_t> dims;
  int64_t span = 1;
};

DenseLayout dense_layout(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  DenseLayout l;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 && strides[d] != 0) l.dims.push_back(d);
  std::stable_sort(l.dims.begin(), l.dims.end(), [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  l.dense = true;
  for (auto it = l.dims.rbegin(); it != l.dims.rend(); ++it) {
    l.dense &= strides[*it] == l.span;
    l.span *= sizes[*it];
  }
  return l;
}

// A view whose dims, outermost (largest stride) first, each stride a whole
// number of the next one's strides without overlapping it (a head split out of
// a fused qkv projection, a column, every other row): a box in the region of
// the storage it spans, reshaped to those strides. The box covers `sizes` of
// the layout's dims in that order, plus a trailing unit dim when the
// innermost stride is not 1. Each stride divides the outermost one, so the
// box's start along a dim is (offset / stride) % extent.
struct StridedBox {
  bool ok = false;
  int64_t region_start = 0, region_len = 0;  // in the flat storage
  Shape region_shape, box_shape;
  std::vector<int64_t> start_div, start_mod;  // start = (offset / div) % mod (mod 0: start 0)
};

StridedBox strided_box(int64_t offset, int64_t len, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       const std::vector<int64_t>& dims) {
  StridedBox b;
  if (dims.empty()) return b;
  int64_t outer = strides[dims[0]];
  b.region_start = offset / outer * outer;
  b.region_len = sizes[dims[0]] * outer;
  if (b.region_start + b.region_len > len) return b;
  b.region_shape = {sizes[dims[0]]};
  b.box_shape = {sizes[dims[0]]};
  b.start_div = {1};
  b.start_mod = {0};
  for (size_t j = 1; j < dims.size(); ++j) {
    int64_t stride = strides[dims[j]], prev = strides[dims[j - 1]];
    if (prev % stride != 0) return b;
    int64_t extent = prev / stride;
    if (offset / stride % extent + sizes[dims[j]] > extent) return b;
    b.region_shape.push_back(extent);
    b.box_shape.push_back(sizes[dims[j]]);
    b.start_div.push_back(stride);
    b.start_mod.push_back(extent);
  }
  int64_t inner = strides[dims.back()];
  if (inner > 1) {
    b.region_shape.push_back(inner);
    b.box_shape.push_back(1);
    b.start_div.push_back(1);
    b.start_mod.push_back(inner);
  }
  b.ok = true;
  return b;
}

// The region of a flat storage value that `box` lies in, shaped to its strides.
Value box_region(Graph& g, Value base, int64_t len, const StridedBox& box, const ViewStart& at) {
  Value region = base;
  if (box.region_len != len) {
    int64_t outer = box.region_len / box.region_shape[0];
    ViewStart region_at{box.region_start, at.runtime < 0 ? -1 : offset_term(g, at, outer, 0, outer)};
    region = window(g, base, region_at, box.region_len);
  }
  return reshape(g, region, box.region_shape);
}

// The box's start indices in its region.
std::vector<Value> box_start(Graph& g, const StridedBox& box, const ViewStart& at) {
  std::vector<Value> start;
  for (size_t i = 0; i < box.start_div.size(); ++i)
    start.push_back(box.start_mod[i] ? offset_term(g, at, box.start_div[i], box.start_mod[i], 1)
                                     : constant(g, 0, c10::kLong));
  return start;
}

}  // namespace

Value read_view(Graph& g, Value base, const ViewStart& at, c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  int64_t len = g.type(base).shape[0];
  c10::ScalarType dt = g.type(base).dtype;
  if (numel == 0) return constant(g, 0, dt, to_shape(sizes));
  if (contiguous(sizes, strides)) {
    Value flat = (at.offset == 0 && numel == len) ? base : window(g, base, at, numel);
    return reshape(g, flat, to_shape(sizes));
  }
  // Permuted, strided and/or broadcast views: the view's elements in layout
  // order (a slice of the storage, reshaped; or a box in one), then
  // transposed into the view's dim order and broadcast.
  DenseLayout layout = dense_layout(sizes, strides);
  const std::vector<int64_t>& dims = layout.dims;
  Shape sorted;
  for (int64_t d : dims) sorted.push_back(sizes[d]);
  Value v;
  if (layout.dense && at.offset + layout.span <= len) {
    v = reshape(g, window(g, base, at, layout.span), sorted);
  } else if (StridedBox box = strided_box(at.offset, len, sizes, strides, dims); box.ok) {
    Value region = box_region(g, base, len, box, at), block;
    if (at.runtime < 0) {
      std::vector<int64_t> start, limit, unit(box.box_shape.size(), 1);
      for (size_t i = 0; i < box.box_shape.size(); ++i) {
        int64_t s = box.start_mod[i] ? at.offset / box.start_div[i] % box.start_mod[i] : 0;
        start.push_back(s);
        limit.push_back(s + box.box_shape[i]);
      }
      block = slice(g, region, start, limit, unit);
    } else {
      block = dynamic_slice(g, region, box_start(g, box, at), box.box_shape);
    }
    v = reshape(g, block, sorted);
  } else {
    return gather_flat(g, base, flat_indices(g, at, sizes, strides));
  }
  // Transpose into increasing original-dimension order.
  std::vector<int64_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
  v = transpose(g, v, order);
  std::vector<int64_t> kept = dims;
  std::sort(kept.begin(), kept.end());
  return broadcast_in_dim(g, v, to_shape(sizes), kept);
}

Value write_view(Graph& g, Value base, Value v, const ViewStart& at, c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  int64_t len = g.type(base).shape[0];
  if (numel == 0) return base;
  auto start = [&](const ViewStart& where) {
    return where.runtime < 0 ? constant(g, where.offset, c10::kLong) : where.runtime;
  };
  if (contiguous(sizes, strides)) {
    Value flat = reshape(g, v, {numel});
    if (at.offset == 0 && numel == len) return flat;
    return dynamic_update_slice(g, base, flat, std::vector<Value>{start(at)});
  }
  // A view without repeated elements whose layout is a dense block or a
  // strided box (see read_view): v in layout order, written as a block (a
  // channels-last or transposed result, a head of a fused projection).
  DenseLayout layout = dense_layout(sizes, strides);
  StridedBox box;
  if (layout.span == numel && (layout.dense ? at.offset + numel <= len
                                            : (box = strided_box(at.offset, len, sizes, strides, layout.dims)).ok)) {
    Shape squeezed;
    std::vector<int64_t> kept = layout.dims;
    std::sort(kept.begin(), kept.end());
    for (int64_t d : kept) squeezed.push_back(sizes[d]);
    std::vector<int64_t> perm;
    for (int64_t d : layout.dims) perm.push_back(std::find(kept.begin(), kept.end(), d) - kept.begin());
    Value ordered = transpose(g, reshape(g, v, squeezed), perm);
    if (layout.dense) {
      Value flat = reshape(g, ordered, {numel});
      return numel == len ? flat : dynamic_update_slice(g, base, flat, std::vector<Value>{start(at)});
    }
    Value updated = dynamic_update_slice(g, box_region(g, base, len, box, at), reshape(g, ordered, box.box_shape),
                                         box_start(g, box, at));
    Value flat = reshape(g, updated, {box.region_len});
    if (box.region_len == len) return flat;
    int64_t outer = box.region_len / box.region_shape[0];
    ViewStart region_at{box.region_start, at.runtime < 0 ? -1 : offset_term(g, at, outer, 0, outer)};
    return dynamic_update_slice(g, base, flat, std::vector<Value>{start(region_at)});
  }
  return scatter_flat(g, base, flat_indices(g, at, sizes, strides), v, false);
}

}  // namespace torch_tpu::lower
