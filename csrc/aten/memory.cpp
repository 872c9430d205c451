// Allocation, host/device copies, fill, resize and set_: the kernels that
// create and rewire tpu storages.
#include <ATen/EmptyTensor.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/MemoryOverlap.h>

#include "aten/kernels.h"
#include "aten/op.h"
#include "exec/exec.h"
#include "exec/fused.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {
int device_index(std::optional<at::Device> device) {
  int index = device && device->has_index() ? device->index() : current_device();
  TORCH_CHECK(index >= 0 && index < device_count(), "tpu: invalid device index ", index, " (",
              device_count(), " devices)");
  return index;
}

struct DeviceScope {
  explicit DeviceScope(int d) : guard(c10::Device(c10::DeviceType::PrivateUse1, d)) {}
  c10::DeviceGuard guard;
};

constexpr size_t kKeptUploadBytes = 4096;

bool covers_storage(const at::Tensor& t) {
  return t.is_contiguous() && t.storage_offset() == 0 &&
         static_cast<size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
}

// Under torch.use_deterministic_algorithms(True) with fill_uninitialized_memory
// (the default there), new memory reads NaN or the dtype's largest value, as on the CPU.
bool fill_uninitialized_memory() {
  auto& ctx = at::globalContext();
  return ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory();
}
}  // namespace

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  DeviceScope scope(device_index(device));
  auto dt = dtype.value_or(at::get_default_dtype_as_scalartype());
  exec::held_dtype(dt);  // rejects unsupported dtypes with a clear TypeError
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  at::Tensor t = at::detail::empty_generic(size, tpu_allocator(), ks, dt, memory_format);
  if (fill_uninitialized_memory()) at::native::fill_empty_deterministic_(t);
  return t;
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  DeviceScope scope(device_index(device));
  auto dt = dtype.value_or(at::get_default_dtype_as_scalartype());
  exec::held_dtype(dt);
  constexpr c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  at::Tensor t = at::detail::empty_strided_generic(size, stride, tpu_allocator(), ks, dt);
  if (fill_uninitialized_memory()) at::native::fill_empty_deterministic_(t);
  return t;
}

// A tensor of the same contents whose storage shares self's copy-on-write
// (as on CPU and CUDA): no device memory until one of them is written.
at::Tensor lazy_clone(const at::Tensor& self) {
  exec::materialize(storage_data(self), "lazy_clone");  // the shared contents are a buffer, not a pending write
  c10::Storage storage = lazy_clone_storage(self.storage());
  if (!storage) return self.clone();  // a pointer alias shares its record already
  auto* self_impl = self.unsafeGetTensorImpl();
  auto clone = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), self_impl->key_set(), self_impl->dtype());
  clone.unsafeGetTensorImpl()->set_sizes_and_strides(self_impl->sym_sizes(), self_impl->sym_strides(),
                                                     self_impl->sym_storage_offset());
  return clone;
}

// `param.data = t` and Module._apply's in-place conversion ask this of a pair
// of tensors; PyTorch's own answer counts only its built-in backends as dense,
// so tpu tensors answer for themselves: any two dense tensors, as on CUDA.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& t) {
    return t.layout() == at::kStrided && (t.is_cpu() || t.device().type() == c10::DeviceType::PrivateUse1);
  };
  return dense(self) && dense(from);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  bool src_tpu = self.is_privateuseone();
  bool dst_tpu = dst.is_privateuseone();
  if (dst.numel() == 0) return dst;
  // As copy_ into a CPU tensor: an expanded destination would receive several values per element.
  if (dst_tpu) at::assert_no_internal_overlap(dst);
  if (src_tpu && dst_tpu && storage_data(self).device != storage_data(dst).device) {
    // Between devices: through the host (the CPU plugin's devices share it anyway).
    return copy_from(to_cpu(self), dst, non_blocking);
  }
  if (src_tpu && dst_tpu) {
    at::assert_no_partial_overlap(dst, self);
    Op op("aten::copy_");
    op.write(dst, op.in(self));
    op.run();
  } else if (dst_tpu) {
    TORCH_CHECK(self.is_cpu(), "tpu: cannot copy from ", self.device(), " to tpu");
    DeviceScope scope(storage_data(dst).device);
    at::Tensor host = self.resolve_conj().resolve_neg().contiguous();
    if (covers_storage(dst) && !dst.is_conj() && !dst.is_neg() && host.scalar_type() == dst.scalar_type() && host.sizes() == dst.sizes()) {
      StorageData& sd = storage_data_for_write(dst);
      exec::set_contents(sd, exec::upload(host.data_ptr(), host.scalar_type(), host.sizes().vec(), sd.device),
                         host.scalar_type());
      // Small uploads (index tensors, mostly) keep their bytes: indexing checks them on the host.
      if (host.nbytes() <= kKeptUploadBytes) keep_host_copy(sd, host.data_ptr(), host.nbytes());
      return dst;
    }
    // Upload as-is and convert/broadcast/scatter on the device in one program.
    at::Tensor staged = at::empty(host.sizes(), dst.options().dtype(host.scalar_type()));
    if (host.numel() > 0) {
      StorageData& sd = storage_data(staged);
      exec::set_contents(sd, exec::upload(host.data_ptr(), host.scalar_type(), host.sizes().vec(), sd.device),
                         host.scalar_type());
    }
    Op op("aten::copy_");
    op.write(dst, op.in(staged));
    op.run();
  } else {
    TORCH_CHECK(dst.is_cpu(), "tpu: cannot copy from tpu to ", dst.device());
    at::Tensor host = to_cpu(self);
    dst.copy_(host);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  return to_cpu(self, "item").item();
}

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  Op op("aten::fill_");
  op.write(self, op.scalar(value, self.scalar_type()));
  op.run();
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  Op op("aten::fill_");
  op.write(self, op.in(value));
  op.run();
  return self;
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

// Gives the storage a new record of `nbytes` that keeps the first bytes of its
// contents (pending ones run first); the rest reads as zeros. Behind
// Tensor.resize_ and Storage.resize_ (FSDP2 frees an unsharded parameter's
// memory with resize_(0) and takes it back with resize_(full size)).
void resize_storage_bytes(const c10::Storage& storage, size_t nbytes) {
  StorageData& old = storage_data_for_write(storage);
  size_t kept = std::min(storage.nbytes(), nbytes);
  c10::DataPtr fresh = tpu_allocator()->allocate(nbytes);
  auto* fresh_data = static_cast<StorageData*>(fresh.get_context());
  fresh_data->device = old.device;
  if (kept > 0) {
    auto bytes_on = [&](c10::Device device) { return at::TensorOptions().dtype(at::kByte).device(device); };
    at::Tensor old_bytes = at::empty({0}, bytes_on(storage.device()))
                               .set_(storage, 0, {static_cast<int64_t>(storage.nbytes())}, {1});
    at::Tensor host = at::zeros({static_cast<int64_t>(nbytes)}, bytes_on(at::kCPU));
    host.narrow(0, 0, kept).copy_(to_cpu(old_bytes).narrow(0, 0, kept));
    exec::set_contents(*fresh_data,
                       exec::upload(host.data_ptr(), at::kByte, {host.numel()}, old.device),
                       at::kByte);
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(nbytes);
}

namespace {
struct RegisterStorageResize {
  RegisterStorageResize() { set_resize_storage_bytes(&resize_storage_bytes); }
} register_storage_resize;
}  // namespace

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  int64_t numel = c10::multiply_integers(size);
  size_t needed = static_cast<size_t>(numel + self.storage_offset()) * self.element_size();
  const size_t old_nbytes = self.storage().nbytes();
  if (needed > old_nbytes) resize_storage_bytes(self.storage(), needed);
  auto fmt = memory_format.value_or(at::MemoryFormat::Contiguous);
  impl->set_sizes_contiguous(size);
  if (fmt != at::MemoryFormat::Contiguous) impl->empty_tensor_restride(fmt);
  if (needed > old_nbytes && fill_uninitialized_memory())
    at::native::fill_resize_deterministic_(self, static_cast<int64_t>(old_nbytes));
  return self;
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source, int64_t storage_offset, at::IntArrayRef size,
                        at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "Attempted to set the storage of a tpu tensor to a storage on ", source.device());
  auto* impl = self.unsafeGetTensorImpl();
  if (!self.storage().is_alias_of(source)) impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset);
  if (stride.empty()) {
    impl->set_sizes_contiguous(size);
  } else {
    impl->set_sizes_and_strides(size, stride);
  }
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, at::Storage source) {
  int64_t n = static_cast<int64_t>(source.nbytes() / self.element_size());
  return set_storage(self, std::move(source), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(), source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), true);
  return set_storage(self, std::move(empty), 0, {0}, {});
}

}  // namespace torch_tpu::aten
