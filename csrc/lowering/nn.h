// Neural-network building blocks as graphs: per-channel broadcasting, erf and
// GELU with its backward, pairwise distances, embedding-bag indexing.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace torch_tpu::lower
