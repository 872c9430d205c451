// The c10d backend "tpu": collectives on tpu tensors, over two transports.
//
// XLA collectives (in_process.h): when every rank of the group is a thread of
// this process with a device of its own, the collectives that XLA has
// (all-reduce, reduce, broadcast, all-gather, reduce-scatter, even
// all-to-all) run as replicated programs across the ranks' devices.
//
// Host staging, for everything else and for ranks in separate processes (the
// XLA CPU plugin runs no collectives across processes): the tensors are
// copied to the host, the collective runs on those copies through a host
// backend (gloo) over the same store, and the results are copied back into
// the tpu tensors.
//
// Invariants:
//  - A collective sees every op issued before it: reading a tpu tensor (to
//    the host or into a program) runs the pending work that produces it.
//  - A collective is complete when its call returns: the outputs hold their
//    results and the Work it returns is already completed (wait() returns at
//    once, get_future() is already done), so async_op=True is valid but does
//    not overlap communication with computation. Sends and receives stay in
//    flight until waited for (a received tensor is written then), as they
//    must for two ranks that both send first.
//  - Every argument check is PyTorch's, with CUDA's wording where there is one.
//    The ranks compare what they called before each collective (host staging:
//    one small host all-gather; XLA: the round every rank joins): a call that
//    differs across ranks raises on all of them instead of returning wrong
//    data; a rank that died or never calls makes the others raise within the
//    group's timeout, naming the collective.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/in_process.h"

namespace torch_tpu::distributed {

class TpuBackend : public c10d::Backend {
 public:
  // `host` is a backend for CPU tensors over the same ranks (gloo).
  // `in_process_group` names the group when every rank is a thread of this
  // process (the same name on every rank; empty otherwise): its collectives
  // then run as XLA collectives where they can.
  TpuBackend(int rank, int size, c10::intrusive_ptr<c10d::Backend> host, const std::string& in_process_group,
             std::chrono::milliseconds timeout);

  const std::string getBackendName() const override { return "tpu"; }
  // "xla" when the collectives XLA has run on the devices, else "host".
  std::string transport() const { return devices_ ? "xla" : "host"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // Raises on every rank unless all ranks called the same collective with
  // tensors of the same count, dtype and (with_shape) shape.
  void agree(c10d::OpType type, const at::Tensor& described, bool with_shape, size_t count);

  // XLA transport: the rank's result of the collective `build` on `input`;
  // `call` describes it for the cross-rank comparison.
  at::Tensor on_devices(c10d::OpType type, const std::string& call, const at::Tensor& input,
                        const InProcessGroup::Build& build, std::chrono::milliseconds timeout);
  // XLA transport: all-reduce (or reduce, where only a receiving rank
  // keeps the result) of each tensor.
  c10::intrusive_ptr<c10d::Work> reduce_on_devices(c10d::OpType type, std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOp& op, std::chrono::milliseconds timeout,
                                                   bool receives);
  // XLA transport: every rank's input, stacked along a new first dimension.
  at::Tensor gathered_on_devices(c10d::OpType type, const at::Tensor& input, std::chrono::milliseconds timeout);
  // XLA transport: reduce-scatter of `whole` ([size, ...]) into `output`.
  void reduce_scatter_on_devices(at::Tensor& output, const at::Tensor& whole, const c10d::ReduceScatterOptions& opts);

  c10::intrusive_ptr<c10d::Backend> host_;
  std::shared_ptr<InProcessGroup> devices_;  // null: host staging only
  uint64_t rounds_ = 0;                      // collectives run on devices_
  std::chrono::milliseconds timeout_;
};

}  // namespace torch_tpu::distributed
