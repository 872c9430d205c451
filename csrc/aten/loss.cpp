// Losses: negative log-likelihood (1-d and per-pixel), the elementwise losses
// (MSE, Huber, smooth L1, binary cross entropy), margin losses over classes and
// CTC, with their gradients.
#include <ATen/native/Resize.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/nn.h"

namespace torch_tpu::aten {

using namespace lower;

namespace {

// An op's device-side check that class targets (those `valid` marks, when
// given) lie in [0, classes); CPU targets are checked by the caller.
void check_class_targets(Op& op, const at::Tensor& target, Value t, int64_t classes, Value valid = -1) {
  if (target.device().is_cpu()) return;
  Graph& g = op.g();
  Shape s = g.type(t).shape;
  Value bad = binary(g, "or", compare(g, t, constant(g, 0, c10::kLong, s), "LT", c10::kLong),
                     compare(g, t, constant(g, classes, c10::kLong, s), "GE", c10::kLong));
  if (valid >= 0) bad = binary(g, "and", bad, valid);
  op.check_on_device(bad, std::string(runtime::OpNameScope::current()) + ": target out of range for " +
                         std::to_string(classes) + " classes");
}

void check_host_targets(const at::Tensor& target, int64_t classes, bool terminated) {
  if (!target.device().is_cpu() || target.numel() == 0) return;
  at::Tensor t = target.to(c10::kLong);
  if (terminated) {  // multi-label: a row's entries from its first negative one on are not targets
    at::Tensor rows = t.reshape({-1, t.dim() == 0 ? 1 : t.size(-1)});
    t = rows.masked_select(rows.lt(0).cumsum(1).eq(0));
  }
  if (t.numel() == 0) return;
  TORCH_CHECK(t.min().item<int64_t>() >= 0 && t.max().item<int64_t>() < classes, "target out of range");
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  TORCH_CHECK(self.dim() >= 1 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  int64_t n = self.dim() == 2 ? self.size(0) : 1;
  int64_t c = self.size(-1);
  TORCH_CHECK(self.dim() == 1 || target.size(0) == n, "Expected input batch_size (", n,
              ") to match target batch_size (", target.numel() ? target.size(0) : 0, ").");
  TORCH_CHECK(target.scalar_type() == c10::kLong || target.scalar_type() == c10::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
  if (weight && weight->defined()) {
    TORCH_CHECK(weight->dim() == 1 && weight->numel() == c, "weight tensor should be defined either for all ", c,
                " classes or no classes but got weight tensor of shape: ", weight->sizes());
    // PyTorch's CPU and CUDA kernels read the weight as the input's type.
    TORCH_CHECK(weight->scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
                " but found ", weight->scalar_type());
  }
  Op op("aten::nll_loss_forward");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  Value x = reshape(g, convert(g, op.in(self), accumulate_type(dt)), {n, c});
  Value t = reshape(g, convert(g, op.in(target), c10::kLong), {n, 1});
  Shape nc{n, c};
  Value onehot = compare(g, broadcast_to(g, t, nc), iota(g, c10::kLong, nc, 1), "EQ", c10::kLong);
  Value valid = compare(g, t, constant(g, ignore_index, c10::kLong, {n, 1}), "NE", c10::kLong);
  check_class_targets(op, target, t, c, valid);
  Value w = constant(g, 1.0, accumulate_type(dt), nc);
  if (weight && weight->defined()) w = broadcast_to(g, reshape(g, convert(g, op.in(*weight), accumulate_type(dt)), {1, c}), nc);
  Value zero = constant(g, 0.0, accumulate_type(dt), nc);
  Value picked_w = reduce(g, select(g, onehot, w, zero), {1}, ReduceKind::Sum);  // [n]
  picked_w = select(g, reshape(g, valid, {n}), picked_w, constant(g, 0.0, accumulate_type(dt), {n}));
  Value picked = reduce(g, select(g, onehot, x, zero), {1}, ReduceKind::Sum);
  Value losses = unary(g, "negate", binary(g, "multiply", picked, picked_w));
  Value total_weight = reduce(g, picked_w, {0}, ReduceKind::Sum);
  Value out;
  if (reduction == at::Reduction::None) {
    out = self.dim() == 2 ? losses : reshape(g, losses, {});
  } else {
    out = reduce(g, losses, {0}, ReduceKind::Sum);
    if (reduction == at::Reduction::Mean) out = binary(g, "divide", out, total_weight);
  }
  at::Tensor o = op.result(convert(g, out, dt));
  at::Tensor tw = op.result(convert(g, total_weight, dt));
  op.run();
  return {o, tw};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  int64_t n = self.dim() == 2 ? self.size(0) : 1;
  int64_t c = self.size(-1);
  Op op("aten::nll_loss_backward");
  Graph& g = op.g();
  auto dt = self.scalar_type();
  auto acc = accumulate_type(dt);
  Shape nc{n, c};
  Value t = reshape(g, convert(g, op.in(target), c10::kLong), {n, 1});
  Value onehot = compare(g, broadcast_to(g, t, nc), iota(g, c10::kLong, nc, 1), "EQ", c10::kLong);
  Value valid = broadcast_to(g, compare(g, t, constant(g, ignore_index, c10::kLong, {n, 1}), "NE", c10::kLong), nc);
  Value w = constant(g, 1.0, acc, nc);
  if (weight && weight->defined()) w = broadcast_to(g, reshape(g, convert(g, op.in(*weight), acc), {1, c}), nc);
  Value go = convert(g, op.in(grad_output), acc);
  if (reduction == at::Reduction::None && self.dim() == 2) {
    go = broadcast_to(g, reshape(g, go, {n, 1}), nc);
  } else {
    go = reshape(g, go, {});
    if (reduction == at::Reduction::Mean) go = binary(g, "divide", go, convert(g, reshape(g, op.in(total_weight), {}), acc));
    go = broadcast_to(g, go, nc);
  }
  Value grad = unary(g, "negate", binary(g, "multiply", w, go));
  Value zero = constant(g, 0.0, acc, nc);
  grad = select(g, onehot, select(g, valid, grad, zero), zero);
  at::Tensor out = op.result(reshape(g, convert(g, grad, dt), shape_of(self)));
  op.run();
  return out;
}

namespace {

using LossFn = std::function<Value(Graph&, Value x, Value y)>;

// A loss computed elementwise from (input, target), then reduced (none, mean, sum).
at::Tensor pointwise_loss(const char* name, const at::Tensor& self, const at::Tensor& target,
                          const std::optional<at::Tensor>& weight, int64_t reduction, const LossFn& loss) {
  Op op(name);
  Graph& g = op.g();
  auto dt = at::result_type(self, target);
  auto acc = accumulate_type(dt);
  Shape s = shape_of(self);
  if (target.sizes() != self.sizes()) {
    auto b = at::infer_size_dimvector(self.sizes(), target.sizes());
    s.assign(b.begin(), b.end());
  }
  Value x = broadcast_to(g, convert(g, op.in(self), acc), s), y = broadcast_to(g, convert(g, op.in(target), acc), s);
  Value l = loss(g, x, y);
  if (weight && weight->defined()) l = binary(g, "multiply", l, broadcast_to(g, convert(g, op.in(*weight), acc), s));
  if (reduction != at::Reduction::None) {
    std::vector<int64_t> all(s.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    int64_t n = g.type(l).numel();
    l = reduce(g, l, all, ReduceKind::Sum);
    if (reduction == at::Reduction::Mean) l = binary(g, "divide", l, constant(g, static_cast<double>(n), acc));
  }
  at::Tensor out = op.result(convert(g, l, dt));
  op.run();
  return out;
}

// Its gradient: grad_output (scaled for mean) times d loss / d input.
at::Tensor pointwise_loss_backward(const char* name, const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                   int64_t reduction, const LossFn& derivative) {
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type();
  auto acc = accumulate_type(at::result_type(self, target));
  Shape s = shape_of(self);
  Value x = convert(g, op.in(self), acc), y = broadcast_to(g, convert(g, op.in(target), acc), s);
  Value d = derivative(g, x, y);
  if (weight && weight->defined()) d = binary(g, "multiply", d, broadcast_to(g, convert(g, op.in(*weight), acc), s));
  Value go = broadcast_to(g, convert(g, op.in(grad_output), acc), s);
  if (reduction == at::Reduction::Mean)
    go = binary(g, "divide", go, constant(g, static_cast<double>(std::max<int64_t>(self.numel(), 1)), acc, s));
  at::Tensor out = op.result(convert(g, binary(g, "multiply", d, go), dt));
  op.run();
  return out;
}

}  // namespace

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  return pointwise_loss("aten::mse_loss", self, target, std::nullopt, reduction, squared_error);
}
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  return pointwise_loss_backward("aten::mse_loss_backward", grad_output, self, target, std::nullopt, reduction,
                                 squared_error_grad);
}

at::Tensor huber_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return pointwise_loss("aten::huber_loss", self, target, std::nullopt, reduction,
                        [&](Graph& g, Value x, Value y) { return huber(g, x, y, delta); });
}
at::Tensor huber_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, double delta) {
  return pointwise_loss_backward("aten::huber_loss_backward", grad_output, self, target, std::nullopt, reduction,
                                 [&](Graph& g, Value x, Value y) { return huber_grad(g, x, y, delta); });
}
at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  return pointwise_loss("aten::smooth_l1_loss", self, target, std::nullopt, reduction,
                        [&](Graph& g, Value x, Value y) { return smooth_l1(g, x, y, beta); });
}
at::Tensor smooth_l1_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                   int64_t reduction, double beta) {
  return pointwise_loss_backward("aten::smooth_l1_loss_backward", grad_output, self, target, std::nullopt, reduction,
                                 [&](Graph& g, Value x, Value y) { return smooth_l1_grad(g, x, y, beta); });
}

at::Tensor binary_cross_entropy(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                int64_t reduction) {
  return pointwise_loss("aten::binary_cross_entropy", self, target, weight, reduction, lower::binary_cross_entropy);
}
at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                         const std::optional<at::Tensor>& weight, int64_t reduction) {
  return pointwise_loss_backward("aten::binary_cross_entropy_backward", grad_output, self, target, weight, reduction,
                                 binary_cross_entropy_grad);
}

// The 2-d (per-pixel) NLL loss is the 1-d one over (N*H*W, C) rows.
std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index) {
  TORCH_CHECK(self.dim() == 4 && target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got "
              "targets of dimension: ", target.dim());
  int64_t c = self.size(1);
  auto [out, total] = aten::nll_loss_forward(self.movedim(1, -1).reshape({-1, c}), target.reshape({-1}), weight,
                                            reduction, ignore_index);
  if (reduction == at::Reduction::None) out = out.reshape(target.sizes());
  return {out, total};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  int64_t c = self.size(1);
  at::Tensor rows = self.movedim(1, -1).reshape({-1, c});
  at::Tensor go = reduction == at::Reduction::None ? grad_output.reshape({-1}) : grad_output;
  at::Tensor g = aten::nll_loss_backward(go, rows, target.reshape({-1}), weight, reduction, ignore_index, total_weight);
  at::DimVector moved{self.size(0), self.size(2), self.size(3), c};
  return g.reshape(moved).movedim(-1, 1).contiguous();
}

// --------------------------------------------------------------------------
// Margin losses over classes (nn.MultiMarginLoss, nn.MultiLabelMarginLoss):
// input [n, c] (or [c]), per-sample sums over classes divided by c, written
// as [n, c] (multi-label: [n, c, c]) comparisons so one program serves any
// targets. Their formulas follow PyTorch's CPU kernels.

namespace {

// [n, c] sizes of a margin loss's input, after PyTorch's shape checks.
std::pair<int64_t, int64_t> margin_loss_sizes(const at::Tensor& self) {
  int64_t ndims = self.dim();
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) || ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  if (ndims <= 1) return {1, ndims == 0 ? 1 : self.size(0)};
  return {self.size(0), self.size(1)};
}

// d(loss)/d(per-sample loss) / c as an [n, 1] value: grad_output per sample
// (reduction None) or shared, divided by c and, for a mean, by n.
Value sample_loss_grad(Op& op, const at::Tensor& grad_output, int64_t n, int64_t c, int64_t reduction,
                       c10::ScalarType acc) {
  Graph& g = op.g();
  Value go = convert(g, op.in(grad_output), acc);
  go = reduction == at::Reduction::None ? reshape(g, go, {n, 1}) : broadcast_to(g, reshape(g, go, {}), {n, 1});
  double denom = static_cast<double>(c) * (reduction == at::Reduction::Mean ? n : 1);
  return binary(g, "divide", go, constant(g, denom, acc, {n, 1}));
}

// multi_margin_loss's terms: z = margin - x[target] + x over [n, c], where it
// counts (z > 0, class != target), and the target's weight per sample.
struct MultiMarginTerms {
  Value z, counts, target_weight, onehot;
};
MultiMarginTerms multi_margin_terms(Op& op, const at::Tensor& self, const at::Tensor& target, const at::Scalar& margin,
                                    const std::optional<at::Tensor>& weight, int64_t n, int64_t c,
                                    c10::ScalarType acc) {
  Graph& g = op.g();
  Shape nc{n, c};
  Value x = reshape(g, convert(g, op.in(self), acc), nc);
  Value t = reshape(g, convert(g, op.in(target), c10::kLong), {n, 1});
  check_class_targets(op, target, t, c);
  Value onehot = compare(g, broadcast_to(g, t, nc), iota(g, c10::kLong, nc, 1), "EQ", c10::kLong);
  Value zero = constant(g, 0.0, acc, nc);
  Value x_target = reduce(g, select(g, onehot, x, zero), {1}, ReduceKind::Sum);
  Value z = binary(g, "add", binary(g, "subtract", constant(g, margin, acc, nc), broadcast_to(g, reshape(g, x_target, {n, 1}), nc)), x);
  Value counts = binary(g, "and", compare(g, z, zero, "GT", acc), unary(g, "not", onehot));
  Value w = constant(g, 1.0, acc, {n});
  if (weight && weight->defined()) {
    Value wc = broadcast_to(g, reshape(g, convert(g, op.in(*weight), acc), {1, c}), nc);
    w = reduce(g, select(g, onehot, wc, zero), {1}, ReduceKind::Sum);
  }
  return {z, counts, reshape(g, w, {n, 1}), onehot};
}

void check_multi_margin_args(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const std::optional<at::Tensor>& weight, int64_t n, int64_t c) {
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  TORCH_CHECK(target.dim() <= 1 && target.numel() == n, "inconsistent target size, expected ", n, " but got ",
              target.sizes());
  if (weight && weight->defined())
    TORCH_CHECK(weight->dim() <= 1 && weight->numel() == c, "inconsistent weight size, expected ", c, " but got ",
                weight->sizes());
  check_host_targets(target, c, false);
}

}  // namespace

at::Tensor multi_margin_loss(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const at::Scalar& margin, const std::optional<at::Tensor>& weight, int64_t reduction) {
  auto [n, c] = margin_loss_sizes(self);
  check_multi_margin_args(self, target, p, weight, n, c);
  Op op("aten::multi_margin_loss");
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  Shape nc{n, c};
  MultiMarginTerms m = multi_margin_terms(op, self, target, margin, weight, n, c, acc);
  Value h = p.toLong() == 1 ? m.z : binary(g, "multiply", m.z, m.z);
  h = select(g, m.counts, binary(g, "multiply", h, broadcast_to(g, m.target_weight, nc)), constant(g, 0.0, acc, nc));
  Value losses = binary(g, "divide", reduce(g, h, {1}, ReduceKind::Sum), constant(g, static_cast<double>(c), acc, {n}));
  Shape per_sample = target.dim() > 0 ? Shape{n} : Shape{};
  at::Tensor out = op.result(convert(g, reduce_sample_losses(g, losses, n, reduction, per_sample), dt));
  op.run();
  return out;
}

at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                      const at::Scalar& p, const at::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction) {
  auto [n, c] = margin_loss_sizes(self);
  check_multi_margin_args(self, target, p, weight, n, c);
  Op op("aten::multi_margin_loss_backward");
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  Shape nc{n, c};
  MultiMarginTerms m = multi_margin_terms(op, self, target, margin, weight, n, c, acc);
  Value scale = broadcast_to(g, binary(g, "multiply", sample_loss_grad(op, grad_output, n, c, reduction, acc),
                                       m.target_weight), nc);
  Value dz = p.toLong() == 1 ? scale : binary(g, "multiply", binary(g, "multiply", constant(g, 2.0, acc, nc), m.z), scale);
  Value zero = constant(g, 0.0, acc, nc);
  Value others = select(g, m.counts, dz, zero);
  // The target's own entry gets minus the sum of the others.
  Value to_target = unary(g, "negate", reduce(g, others, {1}, ReduceKind::Sum));
  Value grad = select(g, m.onehot, broadcast_to(g, reshape(g, to_target, {n, 1}), nc), others);
  at::Tensor out = op.result(reshape(g, convert(g, grad, dt), shape_of(self)));
  op.run();
  return out;
}

namespace {

// multilabel_margin_loss's terms over [n, j, d]: target entry j (a class, valid
// before the sample's first negative entry) against class d (not a target):
// where 1 - x[target_j] + x[d] > 0.
struct MultiLabelTerms {
  Value z, counts, entry_is_class, is_target;
};
MultiLabelTerms multilabel_terms(Op& op, const at::Tensor& self, const at::Tensor& target, int64_t n, int64_t c,
                                 c10::ScalarType acc) {
  Graph& g = op.g();
  Shape nc{n, c}, ncc{n, c, c};
  Value x = reshape(g, convert(g, op.in(self), acc), nc);
  Value t = reshape(g, convert(g, op.in(target), c10::kLong), nc);
  // Entry j counts while no entry up to j is negative.
  Value negative = compare(g, t, constant(g, 0, c10::kLong, nc), "LT", c10::kLong);
  Value position = iota(g, c10::kLong, nc, 1);
  Value first_negative = reduce(g, select(g, negative, position, constant(g, c, c10::kLong, nc)), {1}, ReduceKind::Min);
  Value valid = compare(g, position, broadcast_to(g, reshape(g, first_negative, {n, 1}), nc), "LT", c10::kLong);
  check_class_targets(op, target, t, c, valid);
  // entry_is_class[n, j, k]: entry j names class k.
  Value entry_is_class = binary(g, "and", compare(g, broadcast_in_dim(g, t, ncc, {0, 1}), iota(g, c10::kLong, ncc, 2), "EQ", c10::kLong),
                                broadcast_in_dim(g, valid, ncc, {0, 1}));
  Value is_target = reduce(g, entry_is_class, {1}, ReduceKind::Or);  // [n, c]
  Value zero3 = constant(g, 0.0, acc, ncc);
  Value x_entry = reduce(g, select(g, entry_is_class, broadcast_in_dim(g, x, ncc, {0, 2}), zero3), {2}, ReduceKind::Sum);
  Value z = binary(g, "add", binary(g, "subtract", constant(g, 1.0, acc, ncc), broadcast_in_dim(g, x_entry, ncc, {0, 1})),
                   broadcast_in_dim(g, x, ncc, {0, 2}));
  Value counts = binary(g, "and", binary(g, "and", compare(g, z, zero3, "GT", acc), broadcast_in_dim(g, valid, ncc, {0, 1})),
                        unary(g, "not", broadcast_in_dim(g, is_target, ncc, {0, 2})));
  return {z, counts, entry_is_class, is_target};
}

void check_multilabel_args(const at::Tensor& self, const at::Tensor& target, int64_t n, int64_t c) {
  TORCH_CHECK(self.dim() <= 1 ? target.dim() <= 1 && target.numel() == c : target.dim() == 2 && target.size(0) == n &&
                                                                                target.size(1) == c,
              "inconsistent target size: ", target.sizes(), " for input of size: ", self.sizes());
  check_host_targets(target, c, true);
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                                  int64_t reduction) {
  auto [n, c] = margin_loss_sizes(self);
  check_multilabel_args(self, target, n, c);
  Op op("aten::multilabel_margin_loss_forward");
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  MultiLabelTerms m = multilabel_terms(op, self, target, n, c, acc);
  Value h = select(g, m.counts, m.z, constant(g, 0.0, acc, {n, c, c}));
  Value losses = binary(g, "divide", reduce(g, h, {1, 2}, ReduceKind::Sum), constant(g, static_cast<double>(c), acc, {n}));
  Shape per_sample = self.dim() <= 1 ? Shape{} : Shape{n};
  at::Tensor out = op.result(convert(g, reduce_sample_losses(g, losses, n, reduction, per_sample), dt));
  at::Tensor is_target = op.result(reshape(g, convert(g, m.is_target, dt), shape_of(target)));
  op.run();
  return {out, is_target};
}

at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction,
                                           const at::Tensor& /*is_target*/) {
  auto [n, c] = margin_loss_sizes(self);
  check_multilabel_args(self, target, n, c);
  Op op("aten::multilabel_margin_loss_backward");
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  Shape nc{n, c}, ncc{n, c, c};
  MultiLabelTerms m = multilabel_terms(op, self, target, n, c, acc);
  Value scale = sample_loss_grad(op, grad_output, n, c, reduction, acc);
  Value active = select(g, m.counts, constant(g, 1.0, acc, ncc), constant(g, 0.0, acc, ncc));
  // Class d gains once per active (j, d); target entry j's class loses once per active (j, d).
  Value gained = reduce(g, active, {1}, ReduceKind::Sum);                 // [n, d]
  Value lost_by_entry = reduce(g, active, {2}, ReduceKind::Sum);          // [n, j]
  Value lost = reduce(g, select(g, m.entry_is_class, broadcast_in_dim(g, lost_by_entry, ncc, {0, 1}),
                                constant(g, 0.0, acc, ncc)), {1}, ReduceKind::Sum);  // [n, k]
  Value grad = binary(g, "multiply", binary(g, "subtract", gained, lost), broadcast_to(g, scale, nc));
  at::Tensor out = op.result(reshape(g, convert(g, grad, dt), shape_of(self)));
  op.run();
  return out;
}

// --------------------------------------------------------------------------
// CTC loss: the forward (alpha) and backward (beta) recursions of PyTorch's CPU
// kernel in log space, over the extended targets (blank, l1, blank, ..., lS,
// blank), all samples at once in one counted loop over time; a sample past its
// input length keeps its last alpha. Lengths are runtime inputs, so batches of
// other lengths reuse the program.

namespace {

struct CtcArgs {
  at::Tensor targets;  // [N, S] int64 on the device, padded
  at::Tensor input_lengths, target_lengths;  // [N] int64 on the device
  int64_t T, N, C, S;
};

CtcArgs ctc_args(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
                 at::IntArrayRef target_lengths, int64_t blank) {
  TORCH_CHECK(log_probs.dim() == 3, "ctc_loss: log_probs must be (time, batch, classes), got ", log_probs.sizes());
  TORCH_CHECK(log_probs.scalar_type() == c10::kFloat || log_probs.scalar_type() == c10::kDouble,
              "\"ctc_loss_tpu\" not implemented for '", log_probs.scalar_type(), "'");
  CtcArgs a{{}, {}, {}, log_probs.size(0), log_probs.size(1), log_probs.size(2), 0};
  TORCH_CHECK(blank >= 0 && blank < a.C, "blank must be in label range");
  TORCH_CHECK((int64_t)input_lengths.size() == a.N, "input_lengths must be of size batch_size");
  TORCH_CHECK((int64_t)target_lengths.size() == a.N, "target_lengths must be of size batch_size");
  int64_t total = 0;
  for (int64_t n = 0; n < a.N; ++n) {
    TORCH_CHECK(input_lengths[n] >= 0 && input_lengths[n] <= a.T, "Expected input_lengths to have value at most ",
                a.T, ", but got value ", input_lengths[n]);
    TORCH_CHECK(target_lengths[n] >= 0, "Expected target_lengths to be non-negative, but got ", target_lengths[n]);
    a.S = std::max(a.S, target_lengths[n]);
    total += target_lengths[n];
  }
  auto device = log_probs.device();
  auto longs = at::TensorOptions().dtype(c10::kLong);
  if (targets.dim() == 1) {
    TORCH_CHECK(targets.size(0) >= total, "Expected tensor to have size at least ", total, " at dimension 1, but got ",
                "size ", targets.size(0), " for argument #2 'targets'");
    // Each sample's targets padded to S with its last one (any valid index for
    // an empty one: the recursion never reads it).
    std::vector<int64_t> picks;
    for (int64_t n = 0, offset = 0; n < a.N; offset += target_lengths[n++])
      for (int64_t j = 0; j < a.S; ++j)
        picks.push_back(std::min(offset + std::min(j, std::max<int64_t>(target_lengths[n] - 1, 0)),
                                 std::max<int64_t>(targets.size(0) - 1, 0)));
    at::Tensor rows = targets.numel() ? targets.index_select(0, at::tensor(picks, longs).to(targets.device()))
                                      : at::zeros({a.N * a.S}, longs);
    a.targets = rows.reshape({a.N, a.S});
  } else {
    TORCH_CHECK(targets.dim() == 2 && targets.size(0) == a.N && targets.size(1) >= a.S, "Expected tensor to have size ",
                "at least ", a.S, " at dimension 1, but got size ", targets.dim() == 2 ? targets.size(1) : -1,
                " for argument #2 'targets'");
    a.targets = targets.narrow(1, 0, a.S);
  }
  a.targets = a.targets.to(device, c10::kLong).contiguous();
  a.input_lengths = at::tensor(input_lengths.vec(), longs).to(device);
  a.target_lengths = at::tensor(target_lengths.vec(), longs).to(device);
  return a;
}

CtcTerms ctc_terms(Op& op, const CtcArgs& a, const at::Tensor& log_probs, int64_t blank) {
  Graph& g = op.g();
  int64_t L = 2 * a.S + 1;
  Shape nl{a.N, L};
  CtcTerms t{a.T, a.N, a.C, L};
  Value s = iota(g, c10::kLong, nl, 1);
  auto c = [&](int64_t v) { return constant(g, v, c10::kLong, nl); };
  Value is_label = compare(g, binary(g, "remainder", s, c(2)), c(1), "EQ", c10::kLong);
  Value labels = c(blank);
  if (a.S > 0) {
    Value j = binary(g, "minimum", binary(g, "divide", s, c(2)), c(a.S - 1));  // (s - 1) / 2 at odd s
    Value row = binary(g, "multiply", iota(g, c10::kLong, nl, 0), c(a.S));
    Value label = gather_flat(g, reshape(g, op.in(a.targets), {a.N * a.S}), binary(g, "add", row, j));
    labels = select(g, is_label, label, labels);
  }
  t.labels = labels;
  t.in_len = op.in(a.input_lengths);
  Value tgt_len = op.in(a.target_lengths);
  t.ext_len = binary(g, "add", binary(g, "multiply", tgt_len, constant(g, 2, c10::kLong, {a.N})),
                     constant(g, 1, c10::kLong, {a.N}));
  t.valid = compare(g, s, broadcast_in_dim(g, t.ext_len, nl, {0}), "LT", c10::kLong);
  check_class_targets(op, a.targets, labels, a.C, t.valid);
  Value two_before = L > 2 ? pad(g, slice(g, labels, {0, 0}, {a.N, L - 2}, {1, 1}), blank, {0, 2}, {0, 0}, {0, 0}) : c(blank);
  t.skip = binary(g, "and", binary(g, "and", is_label, compare(g, s, c(2), "GE", c10::kLong)),
                  compare(g, labels, two_before, "NE", c10::kLong));
  Shape tnl{a.T, a.N, L};
  Value flat = binary(g, "multiply", binary(g, "add", binary(g, "multiply", iota(g, c10::kLong, tnl, 0),
                                                             constant(g, a.N, c10::kLong, tnl)),
                                            iota(g, c10::kLong, tnl, 1)),
                      constant(g, a.C, c10::kLong, tnl));
  flat = binary(g, "add", flat, broadcast_in_dim(g, labels, tnl, {1, 2}));
  t.emission = gather_flat(g, reshape(g, op.in(log_probs), {a.T * a.N * a.C}), flat);
  return t;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                            int64_t blank, bool /*zero_infinity*/) {
  CtcArgs a = ctc_args(log_probs, targets, input_lengths, target_lengths, blank);
  Op op("aten::_ctc_loss");
  Graph& g = op.g();
  auto dt = log_probs.scalar_type();
  CtcTerms t = ctc_terms(op, a, log_probs, blank);
  Value alpha = ctc_recursion(g, t, dt, false);  // [T, N, L]
  // The last step of each sample: the last label or the final blank.
  Shape tnl{t.T, t.N, t.L};
  Value last_step = binary(g, "subtract", t.in_len, constant(g, 1, c10::kLong, {t.N}));
  Value s = iota(g, c10::kLong, tnl, 2);
  Value ext = broadcast_in_dim(g, t.ext_len, tnl, {1});
  Value ends = binary(g, "and", compare(g, iota(g, c10::kLong, tnl, 0), broadcast_in_dim(g, last_step, tnl, {1}), "EQ", c10::kLong),
                      binary(g, "and", compare(g, s, ext, "LT", c10::kLong),
                             compare(g, s, binary(g, "subtract", ext, constant(g, 2, c10::kLong, tnl)), "GE", c10::kLong)));
  double inf = std::numeric_limits<double>::infinity();
  Value picked = select(g, ends, alpha, constant(g, -inf, dt, tnl));
  Value m = reduce(g, picked, {0, 2}, ReduceKind::Max);
  Value m_all = broadcast_in_dim(g, m, tnl, {1});
  Value finite_m = select(g, compare(g, m_all, constant(g, -inf, dt, tnl), "EQ", dt), constant(g, 0.0, dt, tnl), m_all);
  Value total = reduce(g, unary(g, "exponential", binary(g, "subtract", picked, finite_m)), {0, 2}, ReduceKind::Sum);
  Value m_safe = select(g, compare(g, m, constant(g, -inf, dt, {t.N}), "EQ", dt), constant(g, 0.0, dt, {t.N}), m);
  Value nll = unary(g, "negate", binary(g, "add", unary(g, "log", total), m_safe));
  // zero_infinity is the caller's (ctc_loss zeroes infinite losses; the backward zeroes their gradients).
  at::Tensor loss = op.result(nll);
  at::Tensor log_alpha = op.result(transpose(g, alpha, {1, 0, 2}));
  op.run();
  return {loss, log_alpha};
}

at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                             at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                             const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                             bool zero_infinity) {
  CtcArgs a = ctc_args(log_probs, targets, input_lengths, target_lengths, blank);
  Op op("aten::_ctc_loss_backward");
  Graph& g = op.g();
  auto dt = log_probs.scalar_type();
  CtcTerms t = ctc_terms(op, a, log_probs, blank);
  Value beta = ctc_recursion(g, t, dt, true);  // [T, N, L]
  Shape tnl{t.T, t.N, t.L}, tnc{t.T, t.N, t.C};
  Value ab = binary(g, "add", transpose(g, op.in(log_alpha), {1, 0, 2}), beta);
  double inf = std::numeric_limits<double>::infinity();
  // log sum over s with labels[s] == c of exp(alpha + beta), per (t, n, c).
  Value m = reduce(g, ab, {2}, ReduceKind::Max);
  m = select(g, compare(g, m, constant(g, -inf, dt, {t.T, t.N}), "EQ", dt), constant(g, 0.0, dt, {t.T, t.N}), m);
  Value scaled = unary(g, "exponential", binary(g, "subtract", ab, broadcast_in_dim(g, m, tnl, {0, 1})));
  Value flat = binary(g, "multiply", binary(g, "add", binary(g, "multiply", iota(g, c10::kLong, tnl, 0),
                                                             constant(g, t.N, c10::kLong, tnl)),
                                            iota(g, c10::kLong, tnl, 1)),
                      constant(g, t.C, c10::kLong, tnl));
  flat = binary(g, "add", flat, broadcast_in_dim(g, t.labels, tnl, {1, 2}));
  Value sums = reshape(g, scatter_flat(g, constant(g, 0.0, dt, {t.T * t.N * t.C}), flat, scaled, true), tnc);
  Value lcab = binary(g, "add", unary(g, "log", sums), broadcast_in_dim(g, m, tnc, {0, 1}));
  Value lp = op.in(log_probs);
  Value nll = broadcast_in_dim(g, op.in(neg_log_likelihood), tnc, {1});
  Value gr = broadcast_in_dim(g, convert(g, op.in(grad), dt), tnc, {1});
  Value result = binary(g, "multiply", binary(g, "subtract", unary(g, "exponential", lp),
                                              unary(g, "exponential", binary(g, "subtract", binary(g, "add", lcab, nll), lp))),
                        gr);
  Value live = compare(g, iota(g, c10::kLong, tnc, 0), broadcast_in_dim(g, t.in_len, tnc, {1}), "LT", c10::kLong);
  if (zero_infinity)
    live = binary(g, "and", live, compare(g, nll, constant(g, inf, dt, tnc), "NE", dt));
  at::Tensor out = op.result(select(g, live, result, constant(g, 0.0, dt, tnc)));
  op.run();
  return out;
}

namespace {

std::vector<int64_t> host_lengths(const at::Tensor& lengths, const char* name) {
  TORCH_CHECK(lengths.dim() <= 1 && at::isIntegralType(lengths.scalar_type(), false), name,
              " must be a 1-D integer tensor");
  at::Tensor host = lengths.to(c10::kCPU, c10::kLong).contiguous();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                   const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                   int64_t blank, bool zero_infinity) {
  return ctc_loss(log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                  host_lengths(target_lengths, "target_lengths"), blank, zero_infinity);
}

}  // namespace torch_tpu::aten
