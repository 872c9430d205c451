// PrivateUse1 plumbing for the tpu device: storage contents, the allocator,
// the device guard with its streams and events, hooks and the random generator.
//
// Streams and events: a device has one queue, the programs enqueued on it, so
// every stream of a device is that queue (streams are distinct objects, and
// the current one is per thread, as on CUDA), and an event marks all work
// enqueued when it was recorded (pending fused work is enqueued first). An
// event is complete when that work has finished; its completion time is when
// the last of it finished, which elapsed_time() reads.
//
// Invariants:
//  - Every tpu storage's DataPtr context is a StorageData. Its data pointer is
//    the start of an address range of its own (StorageData::address, never
//    dereferenced), so view offsets (data_ptr arithmetic) behave as on CUDA and
//    a pointer names at most one storage: a storage made around a tpu pointer
//    (torch.from_dlpack of an exported tpu tensor) aliases the storage it
//    points to (see storage_data).
//  - StorageData::buffer is a PJRT buffer of `dtype` covering the whole
//    storage, in the shape of the value that made it (runtime::Buffer::dims),
//    or null for allocated-but-never-written storage (reads as zeros). An
//    in-place write replaces the buffer and bumps `version`.
//  - While a recorded but not yet executed program (exec::Recording) holds the
//    storage's latest contents, `pending_in` names that recording and
//    `pending_write` its write; `buffer` is stale until the program runs.
//  - A copy-on-write storage (Tensor._lazy_clone) shares another's record
//    through c10's COW context and finds it by its address, as a pointer
//    alias does; before its first write (storage_data_for_write, or any
//    mutable_data_ptr()) it gets a record of its own holding the same buffer,
//    or takes the shared record back when no other storage shares it.
//  - `host_copy`, when set, is the contents at `host_copy->version` as host
//    bytes; it describes the storage only while that equals `version` and no
//    write is pending.
#pragma once

#include <array>
#include <memory>

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>

#include "runtime/pjrt.h"

namespace torch_tpu {

// A storage's contents at one version, on the host.
struct HostCopy {
  uint64_t version;
  std::vector<char> bytes;
};

struct StorageData {
  int device = 0;
  size_t nbytes = 0;
  uintptr_t address = 0;  // the storage's data pointer
  runtime::BufferPtr buffer;
  c10::ScalarType dtype = c10::kByte;
  uint64_t version = 0;
  uint64_t pending_in = 0;  // id of the recording; 0: none
  int pending_write = -1;
  bool pending_first = false;  // the pending write is the storage's first contents
  bool fused_result = false;   // fused mode counts it among the live results of its ops
  // Kept by the ATen layer where host reads of the contents recur (see
  // aten::kept_host_copy); read and replaced with std::atomic_load/store.
  std::shared_ptr<const HostCopy> host_copy;
  uint64_t piece_read_version = ~uint64_t{0};  // the version last read a piece at a time
  // Where it was allocated, while memory history is recorded (below).
  std::shared_ptr<c10::GatheredContext> allocated_by;
};

// Memory history (torch.tpu.memory._record_memory_history): while set, each
// new storage keeps what `gather` returns (the Python stack: the extension
// layer sets it) as its StorageData::allocated_by; nullptr stops recording.
using GatherAllocationContext = std::shared_ptr<c10::GatheredContext> (*)();
void set_allocation_context(GatherAllocationContext gather);

// The storages alive now (their records are copied under a lock).
struct LiveStorage {
  int device;
  uintptr_t address;
  size_t nbytes;
  bool on_device;  // holds a device buffer (fused mode may not have made it yet)
  std::shared_ptr<c10::GatheredContext> allocated_by;
};
std::vector<LiveStorage> live_storages();

// The record holding a storage's contents: its own, or for a storage made
// around a tpu pointer, that of the storage whose start it points to (a
// RuntimeError if it points to none, or to part of one). find_storage_data
// gives null where storage_data raises.
StorageData& storage_data(const c10::Storage& storage);
inline StorageData& storage_data(const at::Tensor& t) { return storage_data(t.storage()); }
StorageData* find_storage_data(const c10::Storage& storage);
// The record to write a storage's new contents into: a copy-on-write storage
// stops sharing first. Every write of contents goes through it.
StorageData& storage_data_for_write(const c10::Storage& storage);
inline StorageData& storage_data_for_write(const at::Tensor& t) { return storage_data_for_write(t.storage()); }
// A storage sharing `storage`'s record copy-on-write (both become COW
// storages, as c10::impl::cow::lazy_clone_storage makes them on CPU); null
// for a pointer alias. Pending writes to it must have been run.
c10::Storage lazy_clone_storage(const c10::Storage& storage);
// Whether the storage is made around the pointer of another tpu storage.
bool is_pointer_alias(const c10::Storage& storage);

// Called (on any thread) when a storage dies while a recording still holds the
// pending write of its first contents, or that fused mode counts as a result
// (StorageData::fused_result); the execution layer counts such live results
// and their bytes.
using CountedStorageDied = void (*)(const StorageData& storage);
void set_counted_storage_died(CountedStorageDied hook);

// The outputs of every program enqueued so far, after pending fused work has
// been enqueued too (a flush for `reason`): what streams and events wait for.
// Set by the execution layer, which sits above this one.
using EnqueuedWork = std::vector<runtime::BufferPtr> (*)(const char* reason);
void set_enqueued_work(EnqueuedWork fn);

// Storage.resize_(nbytes): set by the ATen layer (aten/memory.cpp), which
// can run the pending work that holds the contents.
using ResizeStorageBytes = void (*)(const c10::Storage& storage, size_t nbytes);
void set_resize_storage_bytes(ResizeStorageBytes fn);

c10::Allocator* tpu_allocator();
int current_device();
int device_count();

// The default generator of a device: a seed and a counter. Each random op
// takes (seed, counter) as its runtime input and advances the counter, so the
// same seed gives the same numbers in every mode.
struct TpuGeneratorImpl : public c10::GeneratorImpl {
  explicit TpuGeneratorImpl(c10::DeviceIndex device);
  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }
  // The (key, counter) state of a ThreeFry stream for one random op, and
  // advances the offset. Each op gets its own key, mixed from (seed, offset):
  // a stream's counter advances once per two 32-bit draws, so streams told
  // apart by the counter alone (offset, offset + 1) would overlap.
  std::array<uint64_t, 2> next_stream();

 private:
  TpuGeneratorImpl* clone_impl() const override;
  uint64_t seed_ = 67280421310721ULL;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(int device);

}  // namespace torch_tpu
