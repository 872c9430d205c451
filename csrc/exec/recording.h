// A program under construction: what debug, strict and fused mode record.
//
// A Recording is a program under construction: its graph, what its parameters
// are bound to, and which storages receive its results. debug and strict mode
// record one ATen op into a Recording of its own and execute it at once; fused
// mode records every op into the one shared Recording and executes it at a
// flush, so a whole training step can become one XLA program.
//
// Invariants:
//  - Parameters are deduplicated by buffer: a buffer read twice is one parameter.
//  - Host values (Python scalars, 0-d CPU tensors, RNG states) go into one pool
//    parameter per dtype that the graph slices: one upload per dtype per
//    program, and new values never change the program.
//  - Writes are appended, never changed in place; a storage points at its
//    latest write (StorageData::pending_write), so rolling back the part of a
//    failed op is truncation.
//  - A program's outputs are the latest writes of the storages still alive
//    when it runs: an intermediate whose tensors died is never materialized.
//  - The shared recording is guarded by one recursive mutex that each op holds
//    while it records: autograd's worker thread and the caller's take turns,
//    and an op may call another op while recording (both land in the graph).
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <c10/core/Storage.h>

#include "device/device.h"
#include "exec/cache.h"
#include "ir/graph.h"
#include "runtime/pjrt.h"

namespace torch_tpu::exec {

class Recording {
 public:
  Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  uint64_t id() const { return id_.load(std::memory_order_relaxed); }
  // Storages whose first contents are pending here and that are still alive:
  // the intermediate results a run now would have to output.
  int64_t live_pending() const { return live_pending_.load(std::memory_order_relaxed); }
  // Their bytes.
  int64_t live_pending_bytes() const { return live_pending_bytes_.load(std::memory_order_relaxed); }
  void pending_storage_died(size_t nbytes) { count_live_pending(-1, nbytes); }
  // Bytes of the buffers the program reads, and of those that nothing else
  // holds any more (their tensors died or were overwritten): a run frees
  // them only at its end.
  int64_t input_bytes() const { return input_bytes_; }
  int64_t dead_input_bytes() const;
  ir::Graph& graph() { return graph_; }
  const ir::Graph& graph() const { return graph_; }
  // The device of the program, -1 before its first tensor.
  int device() const { return device_; }
  // Binds the program to `device`; a second device is PyTorch's mixed-device error.
  void use_device(int device);
  // Whether running the program could change anything.
  bool has_writes() const { return !writes_.empty(); }
  size_t num_ops() const { return ops_.size(); }
  size_t num_writes() const { return writes_.size(); }
  const std::vector<const char*>& ops() const { return ops_; }
  // "aten::a, aten::b, aten::c, ... (N ops)": its first distinct ops ("" before any).
  std::string ops_label() const;
  // Counts an ATen op recorded into this program (for messages and metrics).
  void add_op(const char* name) { ops_.push_back(name); }

  // The latest contents of `storage`, flat, in the dtype they were written in;
  // -1 when the storage has never been written (it reads as zeros).
  ir::Value read(const c10::Storage& storage);
  // The dtype read() returns for `sd` (the buffer's, or the pending write's).
  c10::ScalarType contents_dtype(const StorageData& sd) const;
  bool holds(const StorageData& sd) const { return sd.pending_in == id(); }
  // Makes `flat` (covering the whole storage) its latest contents.
  void write(const c10::Storage& storage, ir::Value flat);
  // Marks the storages whose first contents the writes from `first_write` on
  // hold as results (StorageData::fused_result); returns how many it marked.
  int64_t mark_results(size_t first_write);
  // Drops the storage's pending write: its contents are being replaced.
  void forget(StorageData& sd);
  // Copies `count` host values of `dtype` into the program's pool for that
  // dtype; returns the pool parameter and where in it they start.
  std::pair<ir::Value, int64_t> host_value(const void* data, c10::ScalarType dtype, int64_t count);
  // The (seed, counter) input of one random op: draws from `generator` (the
  // draw is remembered, so a captured program draws anew each run).
  // Returns what host_value() returns.
  std::pair<ir::Value, int64_t> rng_state(at::Generator generator);

  // A random state in a host pool: (seed, counter) at `start`.
  struct RandomDraw {
    size_t pool;
    int64_t start;
    at::Generator generator;
  };
  struct HostPool {
    c10::ScalarType dtype;
    ir::Value param;
    size_t param_index;
    std::vector<char> bytes;
  };
  // For compile mode (exec/capture.h): what the program's parameters are bound to.
  const std::vector<runtime::BufferPtr>& param_buffers() const { return params_; }
  const std::vector<HostPool>& host_pools() const { return pools_; }
  const std::vector<RandomDraw>& random_draws() const { return random_draws_; }
  // What a program outputs for `sd`'s pending contents (holds(sd) must be
  // true): the flat contents shaped as the buffer they replace, or as they
  // were computed.
  ir::Value output_value(const StorageData& sd);
  // Drops everything recorded; storages keep their previous contents.
  void abandon() { reset(); }

  struct Mark {
    ir::Graph::Mark graph;
    size_t params = 0, writes = 0, ops = 0, random_draws = 0;
    int device = -1;
    std::vector<size_t> pool_bytes;
  };
  Mark mark() const;
  // Forgets everything recorded since `m` (a failed op's partial work).
  void rollback(const Mark& m);

  // Compiles (cached) and runs the program, installs its results in the
  // storages still alive, and starts over empty. Returns the graph it ran.
  // When the program fails, the results that do not depend on the failure
  // are still installed, the others keep their storages' previous contents,
  // and the error (of its original type) names the ops whose results failed.
  // `tiering`: how the program's first compile picks its tier of code.
  std::shared_ptr<ir::Graph> execute(Tiering tiering = Tiering::BySize);
  // Runs only what was recorded before `m` (the op after it binds another
  // device) and unbinds the device; the rest stays recorded.
  std::shared_ptr<ir::Graph> execute_before(const Mark& m);

 private:
  void reset();
  std::shared_ptr<ir::Graph> run_live_writes(size_t end);
  // sign: +1 for a storage whose first contents became pending, -1 for one
  // that stopped being (died, forgotten, rolled back).
  void count_live_pending(int sign, size_t nbytes) {
    live_pending_.fetch_add(sign, std::memory_order_relaxed);
    live_pending_bytes_.fetch_add(sign * static_cast<int64_t>(nbytes), std::memory_order_relaxed);
  }

  std::shared_ptr<ir::Graph> ran_;  // the program run_outputs() last ran
  Tiering tiering_ = Tiering::BySize;  // of the program being run
  bool keep_graph_ = false;         // set while execute_before() runs

  std::atomic<uint64_t> id_;  // read by storage deleters on any thread
  std::atomic<int64_t> live_pending_{0}, live_pending_bytes_{0};
  ir::Graph graph_;
  int device_ = -1;
  std::vector<const char*> ops_;
  // Per graph parameter, in Graph::params() order: a device buffer, or null
  // for a host pool (uploaded at execute()).
  std::vector<runtime::BufferPtr> params_;
  std::unordered_map<const runtime::Buffer*, ir::Value> buffer_params_;
  int64_t input_bytes_ = 0;  // of the buffers in params_
  std::vector<HostPool> pools_;
  std::vector<RandomDraw> random_draws_;
  struct Write {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    c10::Storage kept_alias;  // a pointer alias's storage, held until the program runs
    StorageData* data;
    ir::Value value;
    int previous;  // the storage's earlier write in this recording, or -1
    const char* op;  // the ATen op that wrote it, for error messages
  };
  // Runs the program for the given writes' storages and installs the results.
  // On failure, retries halves so that results not depending on the failure
  // still land; returns the first error and names the ops whose results failed.
  // With `donate`, buffers nothing else holds (overwritten or dead inputs) are given to the run.
  std::exception_ptr run_outputs(const std::vector<size_t>& writes, const std::vector<runtime::Buffer*>& args,
                                 bool donate, std::vector<const char*>& failed_ops);
  void donate_buffers(ir::Graph& program, const std::vector<runtime::Buffer*>& args,
                      const std::vector<size_t>& writes);
  std::vector<Write> writes_;
};

}  // namespace torch_tpu::exec
