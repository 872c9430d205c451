// The XLA transport: collectives among ranks that are threads of this
// process, each rank on its own device of the one PJRT client. A collective
// runs as one replicated program (exec::run_replicated) over the ranks'
// devices, its StableHLO collective spanning them: the data moves device to
// device inside XLA, never through the host. This is the path for several
// devices driven from one process (one rank per thread, as PyTorch's threaded
// process groups do); ranks in separate processes use host staging (backend.h).
//
// Invariants:
//  - The ranks' n-th collectives meet in one round: the last rank to arrive
//    compares the calls, launches the program for all of them, and each rank
//    collects its own result. Calls that differ raise on every rank; a rank
//    that does not arrive within the timeout makes the others raise, naming
//    the ranks that never called.
//  - The program is the same for every rank (its operand type is part of the
//    call each rank describes), compiled once per (program, devices) pair.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "lowering/builder.h"
#include "runtime/pjrt.h"

namespace torch_tpu::distributed {

class InProcessGroup {
 public:
  // The group called `key` of `size` ranks, shared by the ranks' backends
  // (each calls join with the same key).
  static std::shared_ptr<InProcessGroup> join(const std::string& key, int size);

  explicit InProcessGroup(int size) : size_(size) {}
  int size() const { return size_; }

  // Adds the collective to a program over one parameter (every rank's
  // operand, of one type); returns its result.
  using Build = std::function<lower::Value(lower::Graph&, lower::Value operand, int64_t ranks)>;

  // Rank `rank`'s part of the group's collective number `seq`, the
  // collective `op`: `call` describes it (what is compared across ranks: the
  // op, its arguments and the operand's dtype and shape), `input` is its
  // operand. Returns the rank's result as a new tpu tensor on input's device
  // once every rank has called.
  at::Tensor run(int rank, uint64_t seq, const std::string& op, const std::string& call, const at::Tensor& input,
                 const Build& build, std::chrono::milliseconds timeout);

 private:
  struct Round {
    explicit Round(int size) : calls(size), inputs(size), devices(size, -1) {}
    std::vector<std::string> calls;  // by rank; empty until the rank arrives
    std::vector<runtime::BufferPtr> inputs;
    std::vector<int> devices;
    std::vector<int64_t> shape;
    c10::ScalarType dtype = c10::kFloat;
    int arrived = 0, left = 0;
    bool launching = false;  // every rank arrived; the last one is launching the program
    bool done = false;
    std::exception_ptr error;
    std::vector<runtime::BufferPtr> outputs;  // by rank
  };
  // Run by the last rank to arrive, without the lock held.
  void launch(Round& round, const std::string& op, const Build& build);

  int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Round> rounds_;
};

// Writes a collective's result into dst, as dst.copy_(result) does; when
// both are whole storages of the same size and dtype and the result is
// computed, dst's storage takes the result's buffer instead of a copy.
void write_result(const at::Tensor& dst, const at::Tensor& result);

}  // namespace torch_tpu::distributed
