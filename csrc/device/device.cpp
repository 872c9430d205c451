// PrivateUse1 plumbing: the allocator and storage handles, hooks, device
// guard, generator, streams and events.
#include "device/device.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/COWDeleter.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/ParallelGuard.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

namespace torch_tpu {

namespace {
thread_local int tls_device = 0;

std::atomic<CountedStorageDied> counted_storage_died{nullptr};

// Device addresses: each storage's data pointer starts a range of its size,
// from 2^56 up (no host memory lies there), handed out in increasing order and
// never reused, so a pointer names at most one storage, ever: once that is
// freed, the pointer names none.
class DeviceAddresses {
 public:
  uintptr_t add(StorageData* sd) {
    std::lock_guard<std::mutex> lock(mutex_);
    uintptr_t address = next_;
    uintptr_t span = (std::max<uintptr_t>(sd->nbytes, 1) + 63) / 64 * 64;
    TORCH_CHECK(span <= kLimit - next_, "tpu: device address space exhausted");
    next_ += span;
    live_.emplace(address, sd);
    return address;
  }
  void remove(uintptr_t address) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(address);
  }
  std::vector<LiveStorage> snapshot() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<LiveStorage> live;
    live.reserve(live_.size());
    for (const auto& [address, sd] : live_)
      live.push_back({sd->device, address, sd->nbytes, sd->buffer != nullptr, sd->allocated_by});
    return live;
  }
  // The live storage whose range holds `p`, and p's offset in it.
  StorageData* find(const void* p, size_t* offset) {
    auto at = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.upper_bound(at);
    if (it == live_.begin()) return nullptr;
    --it;
    *offset = at - it->first;
    return *offset < std::max<size_t>(it->second->nbytes, 1) ? it->second : nullptr;
  }

 private:
  static constexpr uintptr_t kLimit = uintptr_t{1} << 62;
  std::mutex mutex_;
  uintptr_t next_ = uintptr_t{1} << 56;
  std::map<uintptr_t, StorageData*> live_;
};

DeviceAddresses& device_addresses() {
  static auto* addresses = new DeviceAddresses();  // never destroyed: tensors may outlive static destruction
  return *addresses;
}

void delete_storage_data(void* ctx) {
  auto* d = static_cast<StorageData*>(ctx);
  if ((d->pending_in && d->pending_first) || d->fused_result) {
    if (CountedStorageDied hook = counted_storage_died.load(std::memory_order_acquire)) hook(*d);
  }
  device_addresses().remove(d->address);
  delete d;
}

}  // namespace

void set_counted_storage_died(CountedStorageDied hook) { counted_storage_died.store(hook, std::memory_order_release); }

namespace {
std::atomic<EnqueuedWork> enqueued_work_fn{nullptr};

std::vector<runtime::BufferPtr> enqueued_work(const char* reason) {
  EnqueuedWork fn = enqueued_work_fn.load(std::memory_order_acquire);
  TORCH_INTERNAL_ASSERT(fn, "tpu: the execution layer did not register its queue");
  return fn(reason);
}

// What an event recorded: how much of its work is still running, and when
// the last of it finished.
struct EventState {
  c10::EventFlag flag;
  std::mutex mutex;
  std::condition_variable finished;
  size_t running = 0;
  std::chrono::steady_clock::time_point done_at;
};

// The handle PyTorch keeps for an event (its void*); recording again points
// it at a new state, while callbacks of the old one may still run.
struct EventHandle {
  std::shared_ptr<EventState> state;
};

std::shared_ptr<EventState> record_state(c10::EventFlag flag) {
  auto state = std::make_shared<EventState>();
  state->flag = flag;
  auto work = enqueued_work("event");
  state->running = work.size();
  state->done_at = std::chrono::steady_clock::now();
  for (const auto& buffer : work) {
    runtime::Runtime::get().when_ready(*buffer, [state] {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (--state->running == 0) {
        state->done_at = std::chrono::steady_clock::now();
        state->finished.notify_all();
      }
    });
  }
  return state;
}

bool is_done(EventState& state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  return state.running == 0;
}

void wait_done(EventState& state) {
  std::unique_lock<std::mutex> lock(state.mutex);
  state.finished.wait(lock, [&] { return state.running == 0; });
}

// The current stream of each device, per thread (0: the default stream).
thread_local std::unordered_map<c10::DeviceIndex, c10::StreamId> tls_streams;
std::atomic<c10::StreamId> next_stream_id{1};
}  // namespace

void set_enqueued_work(EnqueuedWork fn) { enqueued_work_fn.store(fn, std::memory_order_release); }

namespace {
std::atomic<ResizeStorageBytes> resize_storage_bytes_fn{nullptr};
}  // namespace

void set_resize_storage_bytes(ResizeStorageBytes fn) { resize_storage_bytes_fn.store(fn, std::memory_order_release); }

namespace {
std::atomic<GatherAllocationContext> gather_allocation_context{nullptr};
}  // namespace

void set_allocation_context(GatherAllocationContext gather) { gather_allocation_context.store(gather); }

std::vector<LiveStorage> live_storages() { return device_addresses().snapshot(); }

namespace {
// Device memory is PJRT buffers, counted by the runtime as they are created and
// destroyed; this allocator hands out the storage records those buffers live in.
struct TpuAllocator final : public c10::DeviceAllocator {
  c10::DataPtr allocate(size_t nbytes) override {
    auto* d = new StorageData();
    d->device = current_device();
    d->nbytes = nbytes;
    if (auto gather = gather_allocation_context.load(std::memory_order_relaxed)) d->allocated_by = gather();
    d->address = device_addresses().add(d);
    return {reinterpret_cast<void*>(d->address), d, &delete_storage_data,
            c10::Device(c10::DeviceType::PrivateUse1, d->device)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    TORCH_CHECK(false, "tpu: raw copy of device storage is not supported; use Tensor.copy_");
  }
  bool initialized() override { return runtime::Runtime::initialized(); }
  void emptyCache(c10::MempoolId_t) override {}
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    using namespace c10::CachingDeviceAllocator;
    DeviceStats stats;
    auto s = runtime::Runtime::get().memory_stats(device);
    auto& a = stats.allocated_bytes[static_cast<size_t>(StatType::AGGREGATE)];
    a.current = s.bytes_in_use;
    a.peak = s.peak_bytes_in_use;
    a.allocated = s.num_allocs;
    stats.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)] = a;
    stats.active_bytes[static_cast<size_t>(StatType::AGGREGATE)] = a;
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex) override {}
  void resetPeakStats(c10::DeviceIndex device) override { runtime::Runtime::get().reset_peak(device); }
};

TpuAllocator allocator;

struct TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old(kType, tls_device);
    setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kType, tls_device); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "tpu: expected a tpu device, got ", d);
    if (d.index() >= 0) {
      TORCH_CHECK(d.index() < device_count(), "tpu: invalid device index ", (int)d.index(),
                  " (", device_count(), " devices)");
      tls_device = d.index();
    }
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) tls_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const override {
    auto it = tls_streams.find(d.index());
    return c10::Stream(c10::Stream::UNSAFE, d, it == tls_streams.end() ? 0 : it->second);
  }
  c10::Stream getDefaultStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getNewStream(c10::Device d, int priority) const override {
    return c10::Stream(c10::Stream::UNSAFE, d, next_stream_id++);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override { return getNewStream(d, 0); }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream old = getStream(s.device());
    tls_streams[s.device_index()] = s.id();
    return old;
  }
  // Every stream is the device's one queue.
  bool queryStream(const c10::Stream&) const override {
    for (const auto& buffer : enqueued_work("stream_query"))
      if (!runtime::Runtime::get().is_ready(*buffer)) return false;
    return true;
  }
  void synchronizeStream(const c10::Stream&) const override {
    for (const auto& buffer : enqueued_work("stream_synchronize")) runtime::Runtime::get().await_ready(*buffer);
  }
  void synchronizeDevice(const c10::DeviceIndex) const override { synchronizeStream(getDefaultStream(getDevice())); }

  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag flag) const override {
    auto* handle = static_cast<EventHandle*>(*event);
    if (!handle) *event = handle = new EventHandle();
    handle->state = record_state(flag);
  }
  // Work enqueued after this on any stream already follows the event's work
  // in the device's one queue.
  void block(void* event, const c10::Stream&) const override {}
  bool queryEvent(void* event) const override {
    return !event || is_done(*static_cast<EventHandle*>(event)->state);
  }
  void synchronizeEvent(void* event) const override {
    if (event) wait_done(*static_cast<EventHandle*>(event)->state);
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<EventHandle*>(event);
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end, "Both events must be recorded before calculating elapsed time.");
    auto& a = *static_cast<EventHandle*>(start)->state;
    auto& b = *static_cast<EventHandle*>(end)->state;
    TORCH_CHECK(a.flag == c10::EventFlag::BACKEND_DEFAULT && b.flag == c10::EventFlag::BACKEND_DEFAULT,
                "Both events must be created with argument 'enable_timing=True'.");
    TORCH_CHECK(is_done(a) && is_done(b), "Both events must be completed before calculating elapsed time.");
    return std::chrono::duration<double, std::milli>(b.done_at - a.done_at).count();
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(device_count());
    } catch (...) {
      return 0;
    }
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

// Pinned host memory (tensor.pin_memory(), DataLoader(pin_memory=True), DDP's
// copies of its used-parameter map): ordinary host memory here, since the
// plugins copy from any host memory, but remembered as pinned so that
// is_pinned() answers as on CUDA.
struct PinnedAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = nbytes ? std::aligned_alloc(64, (nbytes + 63) / 64 * 64) : nullptr;
    if (data) {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().emplace(data, nbytes);
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  // Whether `p` points into a block this allocator handed out.
  static bool holds(const void* p) {
    std::lock_guard<std::mutex> lock(mutex());
    auto it = blocks().upper_bound(p);
    if (it == blocks().begin()) return false;
    --it;
    return static_cast<const char*>(p) < static_cast<const char*>(it->first) + it->second;
  }

 private:
  static void release(void* data) {
    {
      std::lock_guard<std::mutex> lock(mutex());
      blocks().erase(data);
    }
    std::free(data);
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<const void*, size_t>& blocks() {
    static auto* b = new std::map<const void*, size_t>();  // never destroyed: tensors may outlive static destruction
    return *b;
  }
};

PinnedAllocator pinned_allocator;

struct TpuHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override {
    try {
      return device_count() > 0;
    } catch (...) {
      return false;
    }
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device < 0 ? current_device() : device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    return at::make_generator<TpuGeneratorImpl>(device < 0 ? current_device() : device);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    size_t offset = 0;
    StorageData* sd = device_addresses().find(data, &offset);
    TORCH_CHECK(sd, "tpu: ", data, " points into no tpu storage");
    return at::Device(c10::DeviceType::PrivateUse1, sd->device);
  }
  bool isPinnedPtr(const void* data) const override { return PinnedAllocator::holds(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    ResizeStorageBytes fn = resize_storage_bytes_fn.load(std::memory_order_acquire);
    TORCH_INTERNAL_ASSERT(fn, "tpu: the ATen layer did not register storage resizing");
    fn(storage, newsize);
  }
};

struct RegisterHooks {
  RegisterHooks() {
    static TpuHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &allocator);
  }
} register_hooks;

}  // namespace

bool is_pointer_alias(const c10::Storage& storage) {
  return storage.data_ptr().get_deleter() != &delete_storage_data;
}

namespace {
// For a storage made around a pointer: the storage it aliases, whose start it
// must point to with its size (a tensor exported whole); else an error message.
StorageData* aliased_storage(const c10::Storage& storage, std::string* error) {
  size_t offset = 0;
  StorageData* sd = device_addresses().find(storage.data(), &offset);
  if (!sd) {
    *error = "tpu: this tensor's storage was not allocated by torch_tpu and points into no live tpu storage (it wraps "
             "foreign memory, e.g. from DLPack or from_blob, or a tpu storage that has been freed or resized)";
    return nullptr;
  }
  if (offset != 0 || storage.nbytes() != sd->nbytes) {
    *error = "tpu: this tensor's storage is made around a pointer to bytes " + std::to_string(offset) + " to " +
             std::to_string(offset + storage.nbytes()) + " of a tpu storage of " + std::to_string(sd->nbytes) +
             " bytes; only whole storages can be aliased through a pointer (export the whole tensor with DLPack, or "
             "copy the view first)";
    return nullptr;
  }
  return sd;
}
}  // namespace

StorageData* find_storage_data(const c10::Storage& storage) {
  if (!is_pointer_alias(storage)) return static_cast<StorageData*>(storage.data_ptr().get_context());
  std::string error;
  return aliased_storage(storage, &error);
}

StorageData& storage_data(const c10::Storage& storage) {
  if (!is_pointer_alias(storage)) return *static_cast<StorageData*>(storage.data_ptr().get_context());
  std::string error;
  StorageData* sd = aliased_storage(storage, &error);
  TORCH_CHECK(sd, error);
  return *sd;
}

namespace {
using c10::impl::cow::COWDeleterContext;

COWDeleterContext* cow_context(const c10::DataPtr& data_ptr) {
  return data_ptr.cast_context<COWDeleterContext>(&c10::impl::cow::cow_deleter);
}

// A copy-on-write storage's materializer (StorageImpl::maybe_materialize,
// before its first mutable access). Buffers are immutable, so the copy is a
// record holding the same buffer; the last sharer takes the shared record back.
void materialize_copy_on_write(c10::StorageImpl* storage) {
  TORCH_CHECK(!c10::ParallelGuard::is_enabled(),
              "Materializing a storage in the loop function of at::parallel_for is forbidden");
  c10::DataPtr& data_ptr = storage->_mutable_data_ptr_no_checks();
  COWDeleterContext* ctx = cow_context(data_ptr);
  TORCH_INTERNAL_ASSERT(ctx);
  auto result = ctx->decrement_refcount();
  c10::DataPtr own;
  if (auto* last = std::get_if<COWDeleterContext::LastReference>(&result)) {
    auto deleter = last->get_deleter();
    own = c10::DataPtr(data_ptr.get(), last->release(), deleter, data_ptr.device());
  } else {
    // The shared lock in `result` keeps the shared record alive while we read it.
    size_t offset = 0;
    StorageData* shared = device_addresses().find(data_ptr.get(), &offset);
    TORCH_INTERNAL_ASSERT(shared && offset == 0);
    int device = shared->device;
    runtime::BufferPtr buffer = shared->buffer;
    c10::ScalarType dtype = shared->dtype;
    result = {};  // unlocked before allocating
    own = allocator.allocate(storage->nbytes());
    auto* record = static_cast<StorageData*>(own.get_context());
    record->device = device;
    record->buffer = std::move(buffer);
    record->dtype = dtype;
  }
  data_ptr.release_context();  // its reference was given up above
  storage->set_data_ptr_noswap(std::move(own));
}
}  // namespace

StorageData& storage_data_for_write(const c10::Storage& storage) {
  storage.unsafeGetStorageImpl()->mutable_data_ptr();  // runs the copy-on-write materializer, if any
  return storage_data(storage);
}

c10::Storage lazy_clone_storage(const c10::Storage& storage) {
  c10::StorageImpl& impl = *storage.unsafeGetStorageImpl();
  c10::DataPtr& data_ptr = impl._mutable_data_ptr_no_checks();
  void* address = data_ptr.get();
  c10::Device device = data_ptr.device();
  COWDeleterContext* ctx = cow_context(data_ptr);
  if (!ctx) {
    if (data_ptr.get_deleter() != &delete_storage_data) return {};
    ctx = new COWDeleterContext(data_ptr.move_context());
    impl.set_data_ptr_noswap(c10::DataPtr(address, ctx, &c10::impl::cow::cow_deleter, device));
    impl.set_materializer(&materialize_copy_on_write);
  }
  ctx->increment_refcount();
  auto clone = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), impl.nbytes(),
      c10::DataPtr(address, ctx, &c10::impl::cow::cow_deleter, device), impl.allocator(), impl.resizable());
  clone->set_materializer(&materialize_copy_on_write);
  return c10::Storage(std::move(clone));
}

c10::Allocator* tpu_allocator() { return &allocator; }
int current_device() { return tls_device; }
int device_count() { return runtime::Runtime::get().device_count(); }

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}
void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
void TpuGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t TpuGeneratorImpl::get_offset() const { return offset_; }
uint64_t TpuGeneratorImpl::current_seed() const { return seed_; }
uint64_t TpuGeneratorImpl::seed() {
  uint64_t s = c10::detail::getNonDeterministicRandom();
  set_current_seed(s);
  return s;
}
// State layout: [seed (8 bytes), offset (8 bytes)] as a uint8 CPU tensor.
void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.numel() == 16,
              "tpu: RNG state must be a uint8 tensor of 16 bytes");
  const auto* p = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed_, p, 8);
  std::memcpy(&offset_, p + 8, 8);
}
c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  auto t = at::empty({16}, at::kByte);
  auto* p = t.data_ptr<uint8_t>();
  std::memcpy(p, &seed_, 8);
  std::memcpy(p + 8, &offset_, 8);
  return t.getIntrusivePtr();
}
namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
}  // namespace

std::array<uint64_t, 2> TpuGeneratorImpl::next_stream() {
  return {splitmix64(seed_ ^ splitmix64(offset_++)), 0};
}
TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* g = new TpuGeneratorImpl(device_.index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

const at::Generator& default_generator(int device) {
  static std::vector<at::Generator> gens = [] {
    std::vector<at::Generator> v;
    for (int i = 0; i < device_count(); ++i) v.push_back(at::make_generator<TpuGeneratorImpl>(i));
    return v;
  }();
  TORCH_CHECK(device >= 0 && device < (int)gens.size(), "tpu: invalid device index ", device);
  return gens[device];
}

}  // namespace torch_tpu
