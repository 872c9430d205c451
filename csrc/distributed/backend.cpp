// The c10d backend "tpu": process-group operations, their Work objects, and
// the choice between in-process XLA collectives and host staging over gloo.
#include "distributed/backend.h"

#include <mutex>
#include <numeric>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "lowering/collective.h"

namespace torch_tpu::distributed {

namespace {

// A collective that finished before its call returned.
class CompletedWork : public c10d::Work {
 public:
  CompletedWork(int rank, c10d::OpType type, std::vector<at::Tensor> result)
      : Work(rank, type), result_(std::move(result)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    future_->markCompleted(c10::IValue(result_));
  }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds) override { return true; }
  std::vector<at::Tensor> result() override { return result_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> result_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

using WrittenBack = std::vector<std::pair<at::Tensor, at::Tensor>>;  // (tpu tensor, its host copy)

void write_back(const WrittenBack& written) {
  for (auto& [t, host] : written) t.copy_(host);
}

// A point-to-point operation still in flight on the host: the results reach
// the tpu tensors when it is waited for (or found complete). Sends and
// receives must not complete at the call: two ranks that both send first
// (batch_isend_irecv, a ring) would each wait for the other's receive.
class PendingWork : public c10d::Work {
 public:
  PendingWork(int rank, c10d::OpType type, c10::intrusive_ptr<c10d::Work> host, WrittenBack written,
              std::vector<at::Tensor> sent)
      : Work(rank, type), host_(std::move(host)), written_(std::move(written)), sent_(std::move(sent)) {}
  bool isCompleted() override {
    if (!host_->isCompleted()) return false;
    write_back();
    return true;
  }
  bool isSuccess() const override { return host_->isSuccess(); }
  std::exception_ptr exception() const override { return host_->exception(); }
  bool wait(std::chrono::milliseconds timeout) override {
    bool done = host_->wait(timeout);
    write_back();
    return done;
  }
  std::vector<at::Tensor> result() override {
    std::vector<at::Tensor> r;
    for (auto& [t, host] : written_) r.push_back(t);
    return r;
  }

 private:
  void write_back() {
    std::call_once(written_back_, [&] { distributed::write_back(written_); });
  }
  c10::intrusive_ptr<c10d::Work> host_;
  WrittenBack written_;
  std::vector<at::Tensor> sent_;  // the host copies a send reads until it completes
  std::once_flag written_back_;
};

// Waits for a host operation; its failure (a rank that died, the group's
// timeout passing while a rank never called) names the collective.
void host_wait(const c10::intrusive_ptr<c10d::Work>& work, c10d::OpType type) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    TORCH_CHECK(false, "tpu: ", c10d::opTypeToString(type), " failed on the host transport: ", e.what());
  }
}

void check_tpu_dense(const at::Tensor& t) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1 && t.layout() == at::kStrided,
              "Tensors must be tpu and dense, got a ", t.device().type() == c10::DeviceType::PrivateUse1 ? "" : "non-tpu ",
              t.layout() == at::kStrided ? "" : "non-dense ", "tensor on ", t.device());
}

// The host copies of one collective's tensors, and where its results go back.
class Staging {
 public:
  Staging(int rank, c10d::OpType type) : rank_(rank), type_(type) {}

  // A host copy of t, which the collective reads.
  at::Tensor in(const at::Tensor& t) {
    check_tpu_dense(t);
    return t.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
  }
  // A host tensor for what the collective writes into t; with `read`, it
  // starts as a copy of t (the collective reads t too).
  at::Tensor out(const at::Tensor& t, bool read) {
    at::Tensor host = read ? in(t) : (check_tpu_dense(t), at::empty(t.sizes(), t.options().device(at::kCPU)));
    written_.emplace_back(t, host);
    return host;
  }
  std::vector<at::Tensor> in(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> host;
    for (const auto& t : ts) host.push_back(in(t));
    return host;
  }
  std::vector<at::Tensor> out(const std::vector<at::Tensor>& ts, bool read) {
    std::vector<at::Tensor> host;
    for (const auto& t : ts) host.push_back(out(t, read));
    return host;
  }
  std::vector<std::vector<at::Tensor>> out(const std::vector<std::vector<at::Tensor>>& lists) {
    std::vector<std::vector<at::Tensor>> host;
    for (const auto& l : lists) host.push_back(out(l, false));
    return host;
  }
  // Forgets the results: this rank receives nothing (a reduce's non-root).
  void discard_results() { written_.clear(); }

  // Waits for the host collective, writes the results into the tpu tensors
  // and returns the completed work.
  c10::intrusive_ptr<c10d::Work> finish(const c10::intrusive_ptr<c10d::Work>& host_work,
                                        std::vector<at::Tensor> result) {
    host_wait(host_work, type_);
    return finish(std::move(result));
  }
  c10::intrusive_ptr<c10d::Work> finish(std::vector<at::Tensor> result) {
    write_back(written_);
    return c10::make_intrusive<CompletedWork>(rank_, type_, std::move(result));
  }
  // The work of a host operation left in flight (point-to-point), keeping
  // `sent` alive until it completes.
  c10::intrusive_ptr<c10d::Work> pending(c10::intrusive_ptr<c10d::Work> host_work, std::vector<at::Tensor> sent = {}) {
    return c10::make_intrusive<PendingWork>(rank_, type_, std::move(host_work), std::move(written_), std::move(sent));
  }

 private:
  int rank_;
  c10d::OpType type_;
  WrittenBack written_;
};

// Gloo has no AVG or PREMUL_SUM: they run as SUM, with the values scaled
// before (PREMUL_SUM) or divided by the group's size after (AVG; integers
// truncate).
c10d::ReduceOp host_op(const c10d::ReduceOp& op) {
  if (op.op_ == c10d::ReduceOp::AVG || op.op_ == c10d::ReduceOp::PREMUL_SUM) return c10d::ReduceOp(c10d::ReduceOp::SUM);
  return op;
}

// The operand a reduction of `op` combines: t itself, or t scaled (PREMUL_SUM);
// `in_place` scales t itself (a host copy), else a new tensor.
at::Tensor premultiplied(const at::Tensor& t, const c10d::ReduceOp& op, bool in_place) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return t;
  auto* factor = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(factor, "PREMUL_SUM needs a factor: use torch.distributed._make_nccl_premul_sum");
  if (factor->tensor_factor.defined()) {
    at::Tensor f = factor->tensor_factor.to(t.device());
    return in_place ? t.mul_(f) : t.mul(f);
  }
  return in_place ? t.mul_(factor->double_factor) : t.mul(factor->double_factor);
}

// A reduction's result as `op` defines it: AVG divides the sum by the group's
// size (integers truncate); `in_place` as above.
at::Tensor averaged(const at::Tensor& sum, const c10d::ReduceOp& op, int size, bool in_place) {
  if (op.op_ != c10d::ReduceOp::AVG) return sum;
  if (at::isFloatingType(sum.scalar_type()) || at::isComplexType(sum.scalar_type()))
    return in_place ? sum.div_(size) : sum.div(size);
  return in_place ? sum.div_(size, "trunc") : sum.div(size, "trunc");
}

void check_same_numel(const at::Tensor& a, const at::Tensor& b, int64_t factor, const char* what) {
  TORCH_CHECK(a.numel() == b.numel() * factor, what, ": the output holds ", a.numel(), " elements, expected ",
              b.numel() * factor, " (the input's ", b.numel(), " times the group size ", factor, ")");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), what, ": the output's dtype ", a.scalar_type(),
              " differs from the input's ", b.scalar_type());
}

}  // namespace

TpuBackend::TpuBackend(int rank, int size, c10::intrusive_ptr<c10d::Backend> host,
                       const std::string& in_process_group, std::chrono::milliseconds timeout)
    : Backend(rank, size), host_(std::move(host)), timeout_(timeout) {
  TORCH_CHECK(host_, "tpu: the tpu backend needs a host backend");
  if (!in_process_group.empty() && size > 1) devices_ = InProcessGroup::join(in_process_group, size);
}

namespace {

lower::ReduceKind reduce_kind(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::AVG:
    case c10d::ReduceOp::PREMUL_SUM: return lower::ReduceKind::Sum;
    case c10d::ReduceOp::PRODUCT: return lower::ReduceKind::Prod;
    case c10d::ReduceOp::MIN: return lower::ReduceKind::Min;
    case c10d::ReduceOp::MAX: return lower::ReduceKind::Max;
    case c10d::ReduceOp::BAND: return lower::ReduceKind::And;
    case c10d::ReduceOp::BOR: return lower::ReduceKind::Or;
    case c10d::ReduceOp::BXOR: return lower::ReduceKind::Xor;
    default: TORCH_CHECK(false, "tpu: unsupported reduce op ", static_cast<int>(op.op_));
  }
}

const char* reduce_name(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return "sum";
    case c10d::ReduceOp::AVG: return "avg";
    case c10d::ReduceOp::PREMUL_SUM: return "premul_sum";
    case c10d::ReduceOp::PRODUCT: return "product";
    case c10d::ReduceOp::MIN: return "min";
    case c10d::ReduceOp::MAX: return "max";
    case c10d::ReduceOp::BAND: return "band";
    case c10d::ReduceOp::BOR: return "bor";
    case c10d::ReduceOp::BXOR: return "bxor";
    default: return "?";
  }
}

// t with a leading dimension of 1: what the ranks' parts stack along.
lower::Value leading_one(lower::Graph& g, lower::Value v) {
  ir::Shape shape = g.type(v).shape;
  shape.insert(shape.begin(), 1);
  return lower::reshape(g, v, shape);
}

std::chrono::milliseconds timeout_of(std::chrono::milliseconds requested, std::chrono::milliseconds fallback) {
  return requested == c10d::kUnsetTimeout ? fallback : requested;
}

}  // namespace

at::Tensor TpuBackend::on_devices(c10d::OpType type, const std::string& call, const at::Tensor& input,
                                  const InProcessGroup::Build& build, std::chrono::milliseconds timeout) {
  check_tpu_dense(input);
  std::string op = c10d::opTypeToString(type);
  std::string described = op + (call.empty() ? "" : " ") + call + " of " + c10::toString(input.scalar_type()) + " " +
                          c10::str(input.sizes());
  return devices_->run(rank_, rounds_++, op, described, input, build, timeout_of(timeout, timeout_));
}

void TpuBackend::reduce_scatter_on_devices(at::Tensor& output, const at::Tensor& whole,
                                           const c10d::ReduceScatterOptions& opts) {
  auto kind = reduce_kind(opts.reduceOp);
  at::Tensor part = on_devices(c10d::OpType::REDUCE_SCATTER, reduce_name(opts.reduceOp),
                               premultiplied(whole, opts.reduceOp, /*in_place=*/false),
                               [&](lower::Graph& g, lower::Value v, int64_t n) {
                                 return lower::reduce_scatter(g, v, 0, kind, n);
                               },
                               opts.timeout);
  write_result(output, averaged(part, opts.reduceOp, size_, /*in_place=*/false).view(output.sizes()));
}

c10::intrusive_ptr<c10d::Work> TpuBackend::reduce_on_devices(c10d::OpType type, std::vector<at::Tensor>& tensors,
                                                             const c10d::ReduceOp& op,
                                                             std::chrono::milliseconds timeout, bool receives) {
  auto kind = reduce_kind(op);
  for (auto& t : tensors) {
    at::Tensor r = on_devices(type, reduce_name(op), premultiplied(t, op, /*in_place=*/false),
                              [&](lower::Graph& g, lower::Value v, int64_t n) { return lower::all_reduce(g, v, kind, n); },
                              timeout);
    if (receives) write_result(t, averaged(r, op, size_, /*in_place=*/false));
  }
  return c10::make_intrusive<CompletedWork>(rank_, type, tensors);
}

at::Tensor TpuBackend::gathered_on_devices(c10d::OpType type, const at::Tensor& input,
                                           std::chrono::milliseconds timeout) {
  return on_devices(type, "", input,
                    [](lower::Graph& g, lower::Value v, int64_t n) { return lower::all_gather(g, leading_one(g, v), 0, n); },
                    timeout);
}

// Each rank describes its call (op, tensor count, dtype, shape) and all
// compare: a mismatch raises on every rank, where gloo would fail on one
// rank and return wrong data on another, or wait until the timeout.
void TpuBackend::agree(c10d::OpType type, const at::Tensor& described, bool with_shape, size_t count) {
  constexpr int64_t kFields = 12, kMaxDims = kFields - 4;
  at::Tensor mine = at::full({kFields}, -1, at::kLong);
  int64_t* d = mine.data_ptr<int64_t>();
  d[0] = static_cast<int64_t>(type);
  d[1] = static_cast<int64_t>(count);
  if (described.defined()) {
    d[2] = static_cast<int64_t>(described.scalar_type());
    if (with_shape) {
      d[3] = described.dim();
      for (int64_t i = 0; i < std::min<int64_t>(described.dim(), kMaxDims); ++i) d[4 + i] = described.size(i);
      if (described.dim() > kMaxDims) d[kFields - 1] = described.numel();
    }
  }
  at::Tensor all = at::empty({size_ * kFields}, at::kLong);
  host_wait(host_->_allgather_base(all, mine, c10d::AllgatherOptions()), type);
  const int64_t* rows = all.data_ptr<int64_t>();
  bool same = true;
  for (int r = 1; r < size_ && same; ++r) same = std::equal(rows, rows + kFields, rows + r * kFields);
  if (same) return;
  std::string calls;
  for (int r = 0; r < size_; ++r) {
    const int64_t* row = rows + r * kFields;
    calls += "\n  rank " + std::to_string(r) + ": " + c10d::opTypeToString(static_cast<c10d::OpType>(row[0]));
    if (row[2] >= 0) {
      calls += " of " + std::to_string(row[1]) + " " + c10::toString(static_cast<c10::ScalarType>(row[2])) + " tensor(s)";
      if (row[3] >= 0) {
        std::vector<int64_t> dims(row + 4, row + 4 + std::min(row[3], kMaxDims));
        calls += " of shape " + c10::str(c10::IntArrayRef(dims));
      }
    }
  }
  TORCH_CHECK(false, "tpu: ", c10d::opTypeToString(type), ": the ranks' calls do not match:", calls);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                     const c10d::BroadcastOptions& opts) {
  if (devices_) {
    int64_t root = opts.rootRank;
    for (auto& t : tensors) {
      at::Tensor r = on_devices(c10d::OpType::BROADCAST, "from rank " + std::to_string(root), t,
                                [&](lower::Graph& g, lower::Value v, int64_t n) {
                                  lower::Value all = lower::all_gather(g, leading_one(g, v), 0, n);
                                  return lower::reshape(g, lower::slice_dim(g, all, 0, root, root + 1), g.type(v).shape);
                                },
                                opts.timeout);
      if (rank_ != root) write_result(t, r);
    }
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::BROADCAST, tensors);
  }
  agree(c10d::OpType::BROADCAST, tensors.at(0), true, tensors.size());
  Staging s(rank_, c10d::OpType::BROADCAST);
  auto host = s.out(tensors, /*read=*/true);
  return s.finish(host_->broadcast(host, opts), tensors);
}

namespace {

// Reduces host copies with `op` by `call` (given `opts` with the host's op,
// see host_op); `receives` says whether this rank gets the result (a
// reduce's root), which AVG then divides.
template <typename Options, typename HostCall>
void reduce_copies(std::vector<at::Tensor>& host, const c10d::ReduceOp& op, Options opts, c10d::OpType type, int size,
                   bool receives, HostCall&& call) {
  for (auto& h : host) premultiplied(h, op, /*in_place=*/true);
  opts.reduceOp = host_op(op);
  host_wait(call(host, opts), type);
  if (receives)
    for (auto& h : host) averaged(h, op, size, /*in_place=*/true);
}

// All-reduce, its coalesced form and reduce, on host copies of the tensors.
template <typename Options, typename HostCall>
c10::intrusive_ptr<c10d::Work> reduce_on_host(int rank, int size, c10d::OpType type, std::vector<at::Tensor>& tensors,
                                              const Options& opts, bool receives, HostCall&& call) {
  Staging s(rank, type);
  auto host = s.out(tensors, /*read=*/true);
  reduce_copies(host, opts.reduceOp, opts, type, size, receives, call);
  if (!receives) s.discard_results();  // the others' inputs stay as they were
  return s.finish(tensors);
}

// All-gather, its coalesced form and gather: lists of outputs filled from the
// ranks' inputs by `call`.
template <typename HostCall>
c10::intrusive_ptr<c10d::Work> gather_on_host(int rank, c10d::OpType type,
                                              std::vector<std::vector<at::Tensor>>& outputs,
                                              std::vector<at::Tensor>& inputs, HostCall&& call) {
  Staging s(rank, type);
  auto host_in = s.in(inputs);
  auto host_out = s.out(outputs);
  std::vector<at::Tensor> result;
  for (auto& l : outputs) result.insert(result.end(), l.begin(), l.end());
  return s.finish(call(host_out, host_in), result);
}

}  // namespace

c10::intrusive_ptr<c10d::Work> TpuBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceOptions& opts) {
  if (devices_) return reduce_on_devices(c10d::OpType::ALLREDUCE, tensors, opts.reduceOp, opts.timeout, true);
  agree(c10d::OpType::ALLREDUCE, tensors.at(0), true, tensors.size());
  return reduce_on_host(rank_, size_, c10d::OpType::ALLREDUCE, tensors, opts, true,
                        [&](auto& host, const auto& o) { return host_->allreduce(host, o); });
}

c10::intrusive_ptr<c10d::Work> TpuBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceCoalescedOptions& opts) {
  if (devices_)
    return reduce_on_devices(c10d::OpType::ALLREDUCE_COALESCED, tensors, opts.reduceOp, opts.timeout, true);
  agree(c10d::OpType::ALLREDUCE_COALESCED, tensors.at(0), true, tensors.size());
  return reduce_on_host(rank_, size_, c10d::OpType::ALLREDUCE_COALESCED, tensors, opts, true,
                        [&](auto& host, const auto& o) { return host_->allreduce_coalesced(host, o); });
}

c10::intrusive_ptr<c10d::Work> TpuBackend::reduce(std::vector<at::Tensor>& tensors,
                                                  const c10d::ReduceOptions& opts) {
  if (devices_)
    return reduce_on_devices(c10d::OpType::REDUCE, tensors, opts.reduceOp, opts.timeout, rank_ == opts.rootRank);
  agree(c10d::OpType::REDUCE, tensors.at(0), true, tensors.size());
  return reduce_on_host(rank_, size_, c10d::OpType::REDUCE, tensors, opts, rank_ == opts.rootRank,
                        [&](auto& host, const auto& o) { return host_->reduce(host, o); });
}

c10::intrusive_ptr<c10d::Work> TpuBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) {
  if (devices_) {
    TORCH_CHECK(outputs.size() == inputs.size(), "all_gather: ", outputs.size(), " output lists for ", inputs.size(),
                " inputs");
    std::vector<at::Tensor> result;
    for (size_t i = 0; i < inputs.size(); ++i) {
      TORCH_CHECK(static_cast<int>(outputs[i].size()) == size_, "all_gather: the output list has ",
                  outputs[i].size(), " tensors, expected one per rank (", size_, ")");
      for (const auto& t : outputs[i]) check_tpu_dense(t);
      at::Tensor all = gathered_on_devices(c10d::OpType::ALLGATHER, inputs[i], opts.timeout);
      for (int r = 0; r < size_; ++r) {
        check_same_numel(outputs[i][r], inputs[i], 1, "all_gather");
        outputs[i][r].copy_(all[r].view(outputs[i][r].sizes()));
        result.push_back(outputs[i][r]);
      }
    }
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::ALLGATHER, result);
  }
  agree(c10d::OpType::ALLGATHER, inputs.at(0), true, inputs.size());
  return gather_on_host(rank_, c10d::OpType::ALLGATHER, outputs, inputs,
                        [&](auto& out, auto& in) { return host_->allgather(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> TpuBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                           const c10d::AllgatherOptions& opts) {
  check_same_numel(output, input, size_, "all_gather_into_tensor");
  if (devices_) {
    check_tpu_dense(output);
    write_result(output, gathered_on_devices(c10d::OpType::_ALLGATHER_BASE, input, opts.timeout).view(output.sizes()));
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::_ALLGATHER_BASE, std::vector<at::Tensor>{output});
  }
  agree(c10d::OpType::_ALLGATHER_BASE, input, true, 1);
  Staging s(rank_, c10d::OpType::_ALLGATHER_BASE);
  at::Tensor host_in = s.in(input);
  at::Tensor host_out = s.out(output, false);
  return s.finish(host_->_allgather_base(host_out, host_in, opts), {output});
}

c10::intrusive_ptr<c10d::Work> TpuBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  agree(c10d::OpType::ALLGATHER_COALESCED, inputs.at(0), true, inputs.size());
  return gather_on_host(rank_, c10d::OpType::ALLGATHER_COALESCED, outputs, inputs,
                        [&](auto& out, auto& in) { return host_->allgather_coalesced(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> TpuBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "all_gather_into_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) _allgather_base(outputs[i], inputs[i], opts);
  return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::COALESCED, outputs);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                  std::vector<at::Tensor>& inputs,
                                                  const c10d::GatherOptions& opts) {
  agree(c10d::OpType::GATHER, inputs.at(0), true, inputs.size());
  return gather_on_host(rank_, c10d::OpType::GATHER, outputs, inputs,
                        [&](auto& out, auto& in) { return host_->gather(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> TpuBackend::scatter(std::vector<at::Tensor>& outputs,
                                                   std::vector<std::vector<at::Tensor>>& inputs,
                                                   const c10d::ScatterOptions& opts) {
  agree(c10d::OpType::SCATTER, outputs.at(0), true, outputs.size());
  Staging s(rank_, c10d::OpType::SCATTER);
  std::vector<std::vector<at::Tensor>> host_in;
  for (auto& l : inputs) host_in.push_back(s.in(l));
  auto host_out = s.out(outputs, false);
  return s.finish(host_->scatter(host_out, host_in, opts), outputs);
}

// Reduce-scatter runs as an all-reduce of the whole input, of which each rank
// keeps its part: every host backend has all-reduce (gloo's reduce-scatter
// does not cover every dtype and op).
c10::intrusive_ptr<c10d::Work> TpuBackend::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "reduce_scatter: ", outputs.size(), " outputs for ", inputs.size(),
              " input lists");
  if (devices_) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      check_tpu_dense(outputs[i]);
      TORCH_CHECK(static_cast<int>(inputs[i].size()) == size_, "reduce_scatter: the input list has ",
                  inputs[i].size(), " tensors, expected one per rank (", size_, ")");
      for (const auto& t : inputs[i])
        TORCH_CHECK(t.sizes() == outputs[i].sizes() && t.scalar_type() == outputs[i].scalar_type(),
                    "reduce_scatter: every input must have the output's shape and dtype");
      reduce_scatter_on_devices(outputs[i], at::stack(inputs[i]), opts);
    }
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::REDUCE_SCATTER, outputs);
  }
  agree(c10d::OpType::REDUCE_SCATTER, outputs.at(0), true, outputs.size());
  Staging s(rank_, c10d::OpType::REDUCE_SCATTER);
  for (size_t i = 0; i < outputs.size(); ++i) {
    TORCH_CHECK(static_cast<int>(inputs[i].size()) == size_, "reduce_scatter: the input list has ",
                inputs[i].size(), " tensors, expected one per rank (", size_, ")");
    std::vector<at::Tensor> flat;
    for (const auto& t : inputs[i]) {
      TORCH_CHECK(t.sizes() == outputs[i].sizes() && t.scalar_type() == outputs[i].scalar_type(),
                  "reduce_scatter: every input must have the output's shape and dtype");
      flat.push_back(s.in(t).reshape(-1));
    }
    std::vector<at::Tensor> whole{at::cat(flat)};
    c10d::AllreduceOptions allreduce_opts;
    allreduce_opts.timeout = opts.timeout;
    reduce_copies(whole, opts.reduceOp, allreduce_opts, c10d::OpType::REDUCE_SCATTER, size_, true,
                  [&](auto& host, const auto& o) { return host_->allreduce(host, o); });
    s.out(outputs[i], false).copy_(whole[0].chunk(size_)[rank_].view(outputs[i].sizes()));
  }
  return s.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                const c10d::ReduceScatterOptions& opts) {
  check_same_numel(input, output, size_, "reduce_scatter_tensor");
  if (devices_) {
    check_tpu_dense(output);
    reduce_scatter_on_devices(output, input.reshape({size_, -1}), opts);
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::_REDUCE_SCATTER_BASE, std::vector<at::Tensor>{output});
  }
  std::vector<at::Tensor> outputs{output};
  std::vector<std::vector<at::Tensor>> inputs{input.reshape({size_, -1}).unbind(0)};
  for (auto& t : inputs[0]) t = t.view(output.sizes());
  return reduce_scatter(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "reduce_scatter_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  for (size_t i = 0; i < inputs.size(); ++i) _reduce_scatter_base(outputs[i], inputs[i], opts);
  return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::COALESCED, outputs);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                         std::vector<int64_t>& output_split_sizes,
                                                         std::vector<int64_t>& input_split_sizes,
                                                         const c10d::AllToAllOptions& opts) {
  auto even = [&](const std::vector<int64_t>& splits, const at::Tensor& t) {
    return splits.empty() || std::all_of(splits.begin(), splits.end(), [&](int64_t n) {
             return t.dim() > 0 && n * size_ == t.size(0);
           });
  };
  if (devices_ && input.dim() > 0 && input.size(0) % size_ == 0 && even(input_split_sizes, input) &&
      even(output_split_sizes, output)) {
    check_tpu_dense(output);
    check_same_numel(output, input, 1, "all_to_all_single");
    at::Tensor r = on_devices(c10d::OpType::ALLTOALL_BASE, "", input.reshape({size_, -1}),
                              [](lower::Graph& g, lower::Value v, int64_t n) { return lower::all_to_all(g, v, 0, n); },
                              opts.timeout);
    write_result(output, r.view(output.sizes()));
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::ALLTOALL_BASE, std::vector<at::Tensor>{output});
  }
  agree(c10d::OpType::ALLTOALL_BASE, input, false, 1);
  Staging s(rank_, c10d::OpType::ALLTOALL_BASE);
  at::Tensor host_in = s.in(input);
  at::Tensor host_out = s.out(output, false);
  std::vector<int64_t> host_out_splits = output_split_sizes, host_in_splits = input_split_sizes;
  return s.finish(host_->alltoall_base(host_out, host_in, host_out_splits, host_in_splits, opts), {output});
}

// All-to-all of lists runs as one all-to-all of their concatenations.
c10::intrusive_ptr<c10d::Work> TpuBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                    std::vector<at::Tensor>& inputs,
                                                    const c10d::AllToAllOptions& opts) {
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_ && static_cast<int>(inputs.size()) == size_,
              "all_to_all: expected one input and one output tensor per rank (", size_, "), got ", inputs.size(),
              " and ", outputs.size());
  auto same_numel = [&](const std::vector<at::Tensor>& ts) {
    return std::all_of(ts.begin(), ts.end(), [&](const at::Tensor& t) {
      return t.numel() == inputs[0].numel() && t.scalar_type() == inputs[0].scalar_type();
    });
  };
  if (devices_ && same_numel(inputs) && same_numel(outputs)) {
    for (const auto& t : outputs) check_tpu_dense(t);
    std::vector<at::Tensor> flat;
    for (const auto& t : inputs) flat.push_back(t.reshape(-1));
    at::Tensor r = on_devices(c10d::OpType::ALLTOALL, "", at::stack(flat),
                              [](lower::Graph& g, lower::Value v, int64_t n) { return lower::all_to_all(g, v, 0, n); },
                              opts.timeout);
    for (int i = 0; i < size_; ++i) outputs[i].copy_(r[i].view(outputs[i].sizes()));
    return c10::make_intrusive<CompletedWork>(rank_, c10d::OpType::ALLTOALL, outputs);
  }
  agree(c10d::OpType::ALLTOALL, inputs.at(0), false, inputs.size());
  Staging s(rank_, c10d::OpType::ALLTOALL);
  std::vector<at::Tensor> flat_in;
  std::vector<int64_t> in_splits, out_splits;
  for (const auto& t : inputs) {
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type() && t.scalar_type() == outputs[0].scalar_type(),
                "all_to_all: every tensor must have the same dtype");
    flat_in.push_back(s.in(t).reshape(-1));
    in_splits.push_back(t.numel());
  }
  std::vector<at::Tensor> host_out;
  for (const auto& t : outputs) {
    host_out.push_back(s.out(t, false));
    out_splits.push_back(t.numel());
  }
  at::Tensor whole_in = at::cat(flat_in);
  at::Tensor whole_out = at::empty({std::accumulate(out_splits.begin(), out_splits.end(), int64_t{0})},
                                   whole_in.options());
  // The host backend may take the split vectors (gloo moves them into its work).
  std::vector<int64_t> host_out_splits = out_splits, host_in_splits = in_splits;
  host_wait(host_->alltoall_base(whole_out, whole_in, host_out_splits, host_in_splits, opts), c10d::OpType::ALLTOALL);
  int64_t offset = 0;
  for (size_t i = 0; i < host_out.size(); ++i) {
    host_out[i].copy_(whole_out.narrow(0, offset, out_splits[i]).view(host_out[i].sizes()));
    offset += out_splits[i];
  }
  return s.finish(outputs);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  Staging s(rank_, c10d::OpType::SEND);
  auto host = s.in(tensors);
  auto work = host_->send(host, dst_rank, tag);
  return s.pending(work, host);
}

c10::intrusive_ptr<c10d::Work> TpuBackend::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  Staging s(rank_, c10d::OpType::RECV);
  auto host = s.out(tensors, false);
  return s.pending(host_->recv(host, src_rank, tag));
}

c10::intrusive_ptr<c10d::Work> TpuBackend::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  Staging s(rank_, c10d::OpType::RECVANYSOURCE);
  auto host = s.out(tensors, false);
  return s.pending(host_->recvAnysource(host, tag));
}

c10::intrusive_ptr<c10d::Work> TpuBackend::barrier(const c10d::BarrierOptions& opts) {
  agree(c10d::OpType::BARRIER, at::Tensor(), false, 0);
  Staging s(rank_, c10d::OpType::BARRIER);
  return s.finish(host_->barrier(opts), {});
}

}  // namespace torch_tpu::distributed
