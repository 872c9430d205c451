// Neural-network building blocks as graphs: per-channel broadcasting, GELU
// and its backward, pairwise distances, embedding-bag indexing, the CTC
// recursion, the elementwise losses and the reduction of per-sample losses.
#pragma once

#include <ATen/core/Reduction.h>

#include "lowering/builder.h"

namespace torch_tpu::lower {

Value per_channel(Graph& g, Value v, const Shape& shape);

// gelu and its derivative in float32 (or wider) for the given approximation.
Value gelu_value(Graph& g, Value x, bool tanh_approx);

// grad * gelu'(x), as grad * left + grad * right where gelu'(x) = left + right.
// Distributed so that the result is an add: XLA's CPU backend then sums it
// (a bias gradient) through its reduction library, which stores it once for
// all its users, where a final multiply would be recomputed inside each.
Value gelu_backward_value(Graph& g, Value grad, Value x, bool tanh_approx);

// log(exp(a) + exp(b) + exp(c)), -inf where all three are.
Value log_add3(Graph& g, Value a, Value b, Value c);

// ||x1[b, i] - x2[b, j]||_p: [B, P, R].
Value pairwise_distance(Graph& g, Value x1, Value x2, double p);

// The gradient with respect to x1 of sum(grad * pairwise_distance(x1, x2)): [B, P, M].
Value pairwise_distance_grad(Graph& g, Value grad, Value x1, Value x2, Value dist, double p);

// [I, D] flat positions of (bag, feature) in a [count + 1, D] buffer whose last row is a spare.
Value bag_feature_index(Graph& g, Value bag, Value valid, int64_t count, int64_t d);

// The values both directions need, over [N, L] (L = 2S + 1) unless noted.
struct CtcTerms {
  int64_t T, N, C, L;
  Value labels;    // the extended targets, int64
  Value valid;     // s < 2 * target_length + 1
  Value skip;      // s may come from s - 2: a label other than the one two before
  Value emission;  // [T, N, L]: log_probs at each extended target
  Value in_len, ext_len;  // [N] int64
};

// Runs one direction of the recursion over t = 0 .. T-1 (backward: T-1 .. 0);
// returns the [T, N, L] log-probabilities (alpha or beta) at every step.
Value ctc_recursion(Graph& g, const CtcTerms& t, c10::ScalarType dt, bool backward);

// The elementwise losses of input x and target y (one dtype and shape), and
// their derivatives in x. Huber: 0.5 d^2 inside |d| < delta, delta (|d| - 0.5
// delta) outside; smooth L1 is Huber / beta. Binary cross entropy takes
// probabilities, its logs clamped at -100 as in PyTorch.
Value squared_error(Graph& g, Value x, Value y);
Value squared_error_grad(Graph& g, Value x, Value y);
Value huber(Graph& g, Value x, Value y, double delta);
Value huber_grad(Graph& g, Value x, Value y, double delta);
Value smooth_l1(Graph& g, Value x, Value y, double beta);
Value smooth_l1_grad(Graph& g, Value x, Value y, double beta);
Value binary_cross_entropy(Graph& g, Value x, Value y);
Value binary_cross_entropy_grad(Graph& g, Value x, Value y);

// Per-sample losses [n] reduced as `reduction` (at::Reduction) says;
// `per_sample` is the shape reduction None returns.
Value reduce_sample_losses(Graph& g, Value losses, int64_t n, int64_t reduction, const Shape& per_sample);

}  // namespace torch_tpu::lower
