// The c10d backend "tpu": collectives on tpu tensors.
//
// Transport here: host staging. The tensors are copied to the host, the
// collective runs on those copies through a host backend (gloo) over the
// same store, and the results are copied back into the tpu tensors. This is
// how ranks that are separate processes on the XLA CPU plugin communicate:
// the plugin runs no collectives across processes.
//
// Invariants:
//  - Reading a tpu tensor to the host runs the pending work that produces it
//    (a fused-mode flush), so a collective sees every op issued before it.
//  - A collective is complete when its call returns: the outputs hold their
//    results and the Work it returns is already completed (wait() returns at
//    once, get_future() is already done), so async_op=True is valid but does
//    not overlap communication with computation. Sends and receives stay in
//    flight until waited for (a received tensor is written then), as they
//    must for two ranks that both send first.
//  - Every argument check is PyTorch's, with CUDA's wording where there is one.
//    Before each collective the ranks compare what they called (one small
//    host all-gather): a call that differs across ranks raises on all of them
//    instead of returning wrong data; a rank that died or never calls makes
//    the others raise within the group's timeout, naming the collective.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace torch_tpu::distributed {

class HostStagingBackend : public c10d::Backend {
 public:
  // `host` is a backend for CPU tensors over the same ranks (gloo).
  HostStagingBackend(int rank, int size, c10::intrusive_ptr<c10d::Backend> host);

  const std::string getBackendName() const override { return "tpu"; }

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

  c10::intrusive_ptr<c10d::Backend> host_;
};

}  // namespace torch_tpu::distributed
