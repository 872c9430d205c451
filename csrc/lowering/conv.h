// Convolution, pooling and resampling as graphs: convolution forward and its
// gradients, pooling windows and adaptive pooling, grid sampling and interpolation
// (nearest, linear, cubic).
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "lowering/builder.h"

namespace torch_tpu::lower {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  size_t spatial = 0;
};

// Forward convolution (or transposed convolution) of x with w.
Value conv_forward(Graph& g, Value x, Value w, const ConvParams& p, bool transposed);

// d(loss)/d(weight) of the forward convolution x (*) w = y, given dy; shaped like w.
Value conv_weight_grad(Graph& g, Value x, Value dy, const Shape& w_shape, const ConvParams& p);

struct PoolParams {
  size_t spatial = 0, lead = 0;  // window dimensions; dimensions before them
  std::vector<int64_t> kernel, stride, padding, dilation, pad_hi, out;
};

// Extends per-spatial-dimension values with `lead_value` for the leading dimensions.
std::vector<int64_t> full(const PoolParams& p, const std::vector<int64_t>& spatial, int64_t lead_value);

// The flat position of every element within its spatial plane (PyTorch's max-pool indices).
Value plane_positions(Graph& g, const Shape& shape, size_t lead);

Value avg_divisor(Graph& g, const PoolParams& p, const Shape& in_shape, const Shape& out_shape, bool count_include_pad,
                  std::optional<int64_t> divisor_override, c10::ScalarType dt);

// Adaptive average pooling as one matrix per spatial dimension: row o of the
// (out x in) matrix averages the bin [floor(o*in/out), ceil((o+1)*in/out)).
Value adaptive_matrix(Graph& g, int64_t in, int64_t out, c10::ScalarType dt);

// Contracts each trailing spatial dimension of v with its matrix (transposed
// for the backward), in order: every contraction appends its result dimension.
Value adaptive_apply(Graph& g, Value v, size_t lead, const std::vector<Value>& mats, bool transposed);

enum class GridPadding { Zeros = 0, Border = 1, Reflection = 2 };

// A normalized coordinate in [-1, 1] as a position in [0, size - 1] (or with
// half-pixel edges when not aligning corners).
Value unnormalize(Graph& g, Value coord, int64_t size, bool align_corners);

// Reflects coord into [twice_low / 2, twice_high / 2] (PyTorch's reflect_coordinates).
Value reflect(Graph& g, Value coord, int64_t twice_low, int64_t twice_high);

Value pad_coordinate(Graph& g, Value coord, int64_t size, GridPadding padding, bool align_corners);

// One tap: integer coordinates per spatial dimension (float values) and a weight.
struct Tap {
  std::vector<Value> coords;
  Value weight;
};

// Sum over taps of weight * input[n, c, coords] (zero outside the input):
// input [N, C, *S] as a value, coords and weights [N, *O].
Value sample_taps(Graph& g, Value input, const std::vector<Tap>& taps);

// PyTorch's cubic convolution weights (A = -0.75) for the four taps around t.
std::array<Value, 4> cubic_weights(Graph& g, Value t);

enum class Interp { Nearest, NearestExact, Linear, Cubic };

// The (out x in) interpolation matrix of one dimension; `weights_in` rounds
// each tap's weight to that dtype first.
Value interp_matrix(Graph& g, int64_t in, int64_t out, Interp mode, bool align_corners, std::optional<double> scale,
                    c10::ScalarType dt, std::optional<c10::ScalarType> weights_in = std::nullopt);

// The (out x in) antialiased interpolation matrix of one dimension, as
// PyTorch's antialias=True kernels: when shrinking, the linear (triangle) or
// cubic (Keys, A = -0.5) filter widens by the scale, and each row's weights
// are normalized to sum to one.
Value antialias_matrix(Graph& g, int64_t in, int64_t out, Interp mode, bool align_corners, std::optional<double> scale,
                       c10::ScalarType dt);

// Flat index into the input of every output element, given the source
// position along each trailing dimension (int64 vectors of the output's
// sizes); leading dimensions map to themselves.
Value source_flat_index(Graph& g, const Shape& in, const Shape& out, size_t lead, const std::vector<Value>& sources);

Value nearest_flat_index(Graph& g, const Shape& in, const Shape& out, size_t lead, bool exact,
                         const std::vector<std::optional<double>>& scales);

// Reflection (edge not repeated) or replication padding of the trailing
// dimensions: output position i reads input position i - lo reflected or
// clamped into [0, n); negative padding crops. The backward scatters back.
Value edge_source(Graph& g, int64_t n, int64_t lo, int64_t out, bool reflect);

Value edge_flat_index(Graph& g, const Shape& in, c10::IntArrayRef padding, bool reflect, size_t spatial, Shape& out);

}  // namespace torch_tpu::lower
