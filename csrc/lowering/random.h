// Random numbers as graphs: every draw comes from stablehlo.rng_bit_generator
// over a generator's (seed, counter) state, a tensor<2xui64> runtime input, so
// the same seed gives the same numbers in every eager mode.
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower {

// uint32 random bits of `shape`.
Value random_bits_u32(Graph& g, Value state, const Shape& shape);
// Uniform floats in [0, 1) of `dtype`, computed in float32 from the bits.
Value uniform01(Graph& g, Value state, const Shape& shape, c10::ScalarType dtype);
// Uniform integers in [0, range) (uint64): 64 random bits reduced modulo `range`.
Value uniform_below(Graph& g, Value state, const Shape& shape, uint64_t range);
// Standard normal float32 samples: Box-Muller over two uniform draws.
Value standard_normal(Graph& g, Value state, const Shape& shape);

// Distributions from u uniform in [0, 1) (float32); parameters are float32
// values of u's shape (runtime scalars broadcast by the caller).
Value exponential_from_uniform(Graph& g, Value u, Value lambda);
// The number of trials to the first success, given log(1 - p).
Value geometric_from_uniform(Graph& g, Value u, Value log1m_p);
Value cauchy_from_uniform(Graph& g, Value u, Value median, Value sigma);

// `n` category indices (int64, [rows, n]) per row of the float32 weights p
// [rows, categories]: with replacement by the inverse CDF, without it by
// Gumbel top-k.
Value multinomial(Graph& g, Value state, Value p, int64_t n, bool replacement);
// A uniformly random permutation of 0 .. n-1 (int64).
Value random_permutation(Graph& g, Value state, int64_t n);

}  // namespace torch_tpu::lower
