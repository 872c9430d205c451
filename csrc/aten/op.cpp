#include "aten/op.h"

#include "exec/exec.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

bool contiguous(const at::IntArrayRef sizes, const at::IntArrayRef strides) {
  int64_t expected = 1;
  for (int64_t i = (int64_t)sizes.size() - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

Shape to_shape(at::IntArrayRef a) { return Shape(a.begin(), a.end()); }

// int64 flat element indices of a strided view: offset + sum_d i_d * stride_d.
Value flat_indices(Graph& g, int64_t offset, at::IntArrayRef sizes, at::IntArrayRef strides) {
  Shape s = to_shape(sizes);
  Value idx = constant(g, offset, c10::kLong, s);
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

DenseLayout dense_layout(at::IntArrayRef sizes, at::IntArrayRef strides) {
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

// Reads a strided view out of a flat storage value.
Value read_view(Graph& g, Value base, int64_t offset, at::IntArrayRef sizes, at::IntArrayRef strides) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  int64_t len = g.type(base).shape[0];
  c10::ScalarType dt = g.type(base).dtype;
  if (numel == 0) return constant(g, 0, dt, to_shape(sizes));
  if (contiguous(sizes, strides)) {
    Value flat = (offset == 0 && numel == len) ? base : slice_dim(g, base, 0, offset, offset + numel);
    return reshape(g, flat, to_shape(sizes));
  }
  // Permuted and/or broadcast views of a dense block: slice, reshape, transpose.
  DenseLayout layout = dense_layout(sizes, strides);
  const std::vector<int64_t>& dims = layout.dims;
  int64_t expected = layout.span;
  if (layout.dense && offset + expected <= len) {
    Shape sorted;
    for (int64_t d : dims) sorted.push_back(sizes[d]);
    Value v = reshape(g, slice_dim(g, base, 0, offset, offset + expected), sorted);
    // Transpose into increasing original-dimension order.
    std::vector<int64_t> order(dims.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
    v = transpose(g, v, order);
    std::vector<int64_t> kept = dims;
    std::sort(kept.begin(), kept.end());
    return broadcast_in_dim(g, v, to_shape(sizes), kept);
  }
  return gather_flat(g, base, flat_indices(g, offset, sizes, strides));
}

Value write_view(Graph& g, Value base, Value v, int64_t offset, at::IntArrayRef sizes, at::IntArrayRef strides) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  int64_t len = g.type(base).shape[0];
  if (numel == 0) return base;
  if (contiguous(sizes, strides)) {
    Value flat = reshape(g, v, {numel});
    if (offset == 0 && numel == len) return flat;
    return dynamic_update_slice(g, base, flat, {offset});
  }
  // A permuted dense view of the whole storage (e.g. a channels-last or
  // transposed result): transpose into physical order, no scatter needed.
  DenseLayout layout = dense_layout(sizes, strides);
  if (layout.dense && offset == 0 && layout.span == numel && numel == len) {
    Shape squeezed;
    std::vector<int64_t> kept = layout.dims;
    std::sort(kept.begin(), kept.end());
    for (int64_t d : kept) squeezed.push_back(sizes[d]);
    std::vector<int64_t> perm;
    for (int64_t d : layout.dims) perm.push_back(std::find(kept.begin(), kept.end(), d) - kept.begin());
    return reshape(g, transpose(g, reshape(g, v, squeezed), perm), {numel});
  }
  return scatter_flat(g, base, flat_indices(g, offset, sizes, strides), v, false);
}

}  // namespace

void check_tpu(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              "tpu:", current_device(), " and ", t.device(), "! (when checking argument ", what, ")");
}

void Op::use_device(int d) {
  if (device_ < 0) device_ = d;
  TORCH_CHECK(device_ == d, "Expected all tensors to be on the same device, but found at least two devices, tpu:",
              device_, " and tpu:", d, "!");
}

Value Op::storage_value(const at::Tensor& t) {
  StorageData& sd = storage_data(t);
  use_device(sd.device);
  for (auto it = writes_.rbegin(); it != writes_.rend(); ++it)
    if (it->first == &sd) return bitcast(graph_, it->second, t.scalar_type());
  auto found = storage_params_.find(&sd);
  Value base;
  if (found != storage_params_.end()) {
    base = found->second;
  } else if (!sd.buffer) {
    int64_t len = static_cast<int64_t>(sd.nbytes / t.element_size());
    return constant(graph_, 0, t.scalar_type(), {len});
  } else {
    int64_t len = static_cast<int64_t>(sd.nbytes / c10::elementSize(sd.dtype));
    base = graph_.param(ir::Type{sd.dtype, {len}});
    args_.push_back({sd.buffer, {}});
    storage_params_[&sd] = base;
    keep_alive_.push_back(t.storage());
  }
  return bitcast(graph_, base, t.scalar_type());
}

Value Op::in(const at::Tensor& t) {
  TORCH_CHECK(t.defined(), "tpu: undefined tensor argument");
  if (t.device().is_cpu()) {
    TORCH_CHECK(t.dim() == 0, "Expected all tensors to be on the same device, but found at least two devices, tpu:",
                device(), " and cpu!");
    return scalar(t.item(), t.scalar_type());
  }
  check_tpu(t, "input");
  Value base = storage_value(t);
  return read_view(graph_, base, t.storage_offset(), t.sizes(), t.strides());
}

Value Op::scalar(const c10::Scalar& s, c10::ScalarType dtype) {
  args_.push_back({nullptr, at::scalar_tensor(s, at::TensorOptions().dtype(dtype))});
  return graph_.param(ir::Type{dtype, {}});
}

Value Op::rng_state(std::optional<at::Generator> gen, const at::Tensor& like) {
  check_tpu(like, "self");
  use_device(like.device().index());
  at::Generator g = gen.has_value() && gen->defined() ? *gen : default_generator(device());
  std::lock_guard<std::mutex> lock(g.mutex());
  auto [seed, counter] = g.get<TpuGeneratorImpl>()->next();
  auto state = at::empty({2}, at::TensorOptions().dtype(c10::kUInt64));
  state.data_ptr<uint64_t>()[0] = seed;
  state.data_ptr<uint64_t>()[1] = counter;
  args_.push_back({nullptr, state});
  return graph_.param(ir::Type{c10::kUInt64, {2}});
}

at::Tensor Op::result(Value v) {
  const ir::Type& t = graph_.type(v);
  auto out = at::empty(t.shape, at::TensorOptions().dtype(t.dtype).device(c10::DeviceType::PrivateUse1, device()));
  if (out.numel() > 0) writes_.emplace_back(&storage_data(out), reshape(graph_, v, {out.numel()}));
  keep_alive_.push_back(out.storage());
  return out;
}

void Op::write(const at::Tensor& dst, Value v) {
  check_tpu(dst, "out");
  if (dst.numel() == 0) return;
  v = broadcast_to(graph_, convert(graph_, v, dst.scalar_type()), to_shape(dst.sizes()));
  Value base = storage_value(dst);
  Value updated = write_view(graph_, base, v, dst.storage_offset(), dst.sizes(), dst.strides());
  writes_.emplace_back(&storage_data(dst), updated);
  keep_alive_.push_back(dst.storage());
}

void Op::run() {
  // Only the last write to each storage becomes an output.
  std::vector<std::pair<StorageData*, Value>> outs;
  for (auto it = writes_.rbegin(); it != writes_.rend(); ++it) {
    bool seen = false;
    for (auto& o : outs) seen |= o.first == it->first;
    if (!seen) outs.push_back(*it);
  }
  if (outs.empty()) return;
  for (auto& o : outs) graph_.output(o.second);
  std::vector<PJRT_Buffer*> args;
  args.reserve(args_.size());
  auto& rt = runtime::Runtime::get();
  for (auto& a : args_) {
    if (!a.buffer) {
      std::vector<int64_t> dims(a.host.sizes().begin(), a.host.sizes().end());
      a.buffer = rt.to_device(a.host.data_ptr(), a.host.scalar_type(), dims, device());
      exec::metrics().bytes_to_device += a.host.nbytes();
    }
    args.push_back(a.buffer->get());
  }
  auto buffers = exec::run(graph_, args, device());
  for (size_t i = 0; i < outs.size(); ++i) {
    StorageData* sd = outs[i].first;
    sd->buffer = buffers[i];
    sd->dtype = graph_.type(outs[i].second).dtype;
    sd->version++;
  }
  writes_.clear();
}

at::Tensor to_cpu(const at::Tensor& t) {
  auto out = at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type()));
  if (t.numel() == 0) return out;
  StorageData& sd = storage_data(t);
  runtime::BufferPtr buffer = sd.buffer;
  bool whole = t.is_contiguous() && t.storage_offset() == 0 &&
               static_cast<size_t>(t.numel()) * t.element_size() == sd.nbytes;
  if (!buffer) {
    out.zero_();
    return out;
  }
  if (!(whole && sd.dtype == t.scalar_type())) {
    Op op("copy to host");
    Value v = op.in(t);
    at::Tensor tmp = op.result(v);
    op.run();
    buffer = storage_data(tmp).buffer;
  }
  runtime::Runtime::get().to_host(*buffer, out.data_ptr(), out.nbytes());
  exec::metrics().bytes_to_host += out.nbytes();
  return out;
}

}  // namespace torch_tpu::aten
