// Fused eager mode ("DeferAndFuse"): the one shared Recording every op
// records into, the split rules that cut it into programs (graph size, held
// bytes, the loop-period rule), flushes, and the mode switch and
// synchronization that must run deferred work first.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"
#include "exec/exec.h"
#include "exec/recording.h"
#include "runtime/pjrt.h"

namespace torch_tpu::exec {

// Changes the eager mode; work deferred under fused mode runs first.
void set_mode(Mode m);

// The outputs of every program enqueued so far that are still referenced,
// after running pending fused work (a flush for `reason`): what a stream or
// an event waits for (device/device.h).
std::vector<runtime::BufferPtr> enqueued_work(const char* reason);

// Runs pending fused work, then waits until every program enqueued so far
// has finished (on every device: the CPU plugin gives no cheaper per-device
// wait); raises the first device error among them.
void synchronize(int device);

using FusedLock = std::unique_lock<std::recursive_mutex>;

// An op's scope in the shared recording: rolls back what the op recorded
// unless done() is called, and applies the split rules after the outermost op.
class FusedOpScope {
 public:
  explicit FusedOpScope(const char* name);
  ~FusedOpScope();
  Recording& recording();
  // Called with the device of the op's first tensor: a shared program bound
  // to another device is flushed first.
  void bind_device(int device);
  // The op recorded completely.
  void done();
  // The shared program is run before the next op: what this op wrote is
  // computed before anything reads it.
  void flush_after(const char* reason) { flush_after_ = reason; }

 private:
  FusedLock lock_;
  const char* name_;
  Recording::Mark mark_;
  bool done_ = false;
  const char* flush_after_ = nullptr;
};

// Runs whatever the shared recording holds; `reason` is counted in
// metrics()["flushes"]. A no-op when nothing is pending.
// `user_boundary`: the flush marks a point the program chose (a host read, a
// synchronize), which the loop-period split rule takes as the loop's own rhythm;
// a mode switch is not one.
void flush(const char* reason, bool user_boundary = true);
// Flushes if the storage's contents are pending in the shared recording.
void materialize(const StorageData& sd, const char* reason);
// Before the host reads a tensor: runs all pending fused work, and marks the
// read as a boundary of the loop's iterations (see flush's user_boundary).
void host_read(const char* reason);
// The dtype of the storage's current contents, pending or not.
c10::ScalarType contents_dtype(const StorageData& sd);
// Replaces a storage's contents with `buffer`, dropping a pending write.
void set_contents(StorageData& sd, runtime::BufferPtr buffer, c10::ScalarType dtype);

// compile mode (exec/capture.cpp): runs what is pending, then hands out the
// empty shared recording with the split rules off, so one graph records whole.
Recording& begin_capture();
// Ends the capture; returns why a flush cut it (the reason of the flush), or
// "" when the recording holds the whole graph.
std::string end_capture();

// The StableHLO text of the program the last flush ran ("" before any).
std::string last_flushed_program();
// The largest graph (in nodes) fused mode records before it splits; returns
// the previous bound. Also TORCH_TPU_FUSED_MAX_NODES.
int64_t set_fused_max_nodes(int64_t n);
// The most bytes a pending fused program may hold beyond what op-by-op
// execution would (intermediate results still referenced, inputs no longer
// referenced); returns the previous bound. Also TORCH_TPU_FUSED_MAX_HELD_BYTES.
int64_t set_fused_max_held_bytes(int64_t n);

}  // namespace torch_tpu::exec
