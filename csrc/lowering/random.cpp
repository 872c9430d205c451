// Random numbers as graphs.
#include "lowering/random.h"

#include <cmath>

namespace torch_tpu::lower {

Value random_bits_u32(Graph& g, Value state, const Shape& shape) {
  auto outs = g.add_multi("stablehlo.rng_bit_generator", {state},
                          {g.type(state), Type{c10::kUInt32, shape}},
                          "{rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>}");
  return outs[1];
}

namespace {
// 64 random bits per element from two 32-bit draws.
Value random_bits_u64(Graph& g, Value state, const Shape& shape) {
  Shape twice = shape;
  twice.push_back(2);
  Value bits = convert(g, random_bits_u32(g, state, twice), c10::kUInt64);
  int64_t last = static_cast<int64_t>(twice.size()) - 1;
  Value lo = reshape(g, slice_dim(g, bits, last, 0, 1), shape);
  Value high = reshape(g, slice_dim(g, bits, last, 1, 2), shape);
  return binary(g, "or", g.add("stablehlo.shift_left", {high, constant(g, 32, c10::kUInt64, shape)}, g.type(high)),
                lo);
}
}  // namespace

Value uniform01(Graph& g, Value state, const Shape& shape, c10::ScalarType dtype) {
  if (dtype == c10::kDouble) {
    // 53 random bits, k / 2^53, as PyTorch's CPU generator makes a double.
    Value top = g.add("stablehlo.shift_right_logical",
                      {random_bits_u64(g, state, shape), constant(g, 11, c10::kUInt64, shape)},
                      Type{c10::kUInt64, shape});
    return binary(g, "multiply", convert(g, top, c10::kDouble), constant(g, std::ldexp(1.0, -53), c10::kDouble, shape));
  }
  // 23 random mantissa bits under exponent 0 give a float in [1, 2).
  Value bits = random_bits_u32(g, state, shape);
  Value mant = g.add("stablehlo.shift_right_logical", {bits, constant(g, 9, c10::kUInt32, shape)},
                     Type{c10::kUInt32, shape});
  Value one_bits = binary(g, "or", mant, constant(g, 0x3F800000LL, c10::kUInt32, shape));
  Value f = bitcast(g, one_bits, c10::kFloat);
  Value u = binary(g, "subtract", f, constant(g, 1.0, c10::kFloat, shape));
  if (dtype != c10::kFloat) {
    u = convert(g, u, dtype);
    // Rounding to a narrower type can reach 1.0; keep the interval half-open.
    double largest_below_one = dtype == c10::kBFloat16 ? 0.99609375 : dtype == c10::kHalf ? 0.99951171875 : 0.99999994;
    Value below_one = constant(g, largest_below_one, dtype, shape);
    u = binary(g, "minimum", u, below_one);
  }
  return u;
}

Value uniform_below(Graph& g, Value state, const Shape& shape, uint64_t range) {
  return binary(g, "remainder", random_bits_u64(g, state, shape),
                constant(g, static_cast<int64_t>(range), c10::kUInt64, shape));
}

Value standard_normal(Graph& g, Value state, const Shape& shape) {
  Shape twice = shape;
  twice.insert(twice.begin(), 2);
  Value u = uniform01(g, state, twice, c10::kFloat);
  Value u1 = reshape(g, slice_dim(g, u, 0, 0, 1), shape);
  Value u2 = reshape(g, slice_dim(g, u, 0, 1, 2), shape);
  // 1 - u1 lies in (0, 1], so the log is finite.
  Value one = constant(g, 1.0, c10::kFloat, shape);
  Value radius = unary(g, "sqrt", binary(g, "multiply", constant(g, -2.0, c10::kFloat, shape),
                                           unary(g, "log", binary(g, "subtract", one, u1))));
  Value angle = binary(g, "multiply", constant(g, 6.283185307179586, c10::kFloat, shape), u2);
  return binary(g, "multiply", radius, unary(g, "cosine", angle));
}

Value exponential_from_uniform(Graph& g, Value u, Value lambda) {
  // -log(1 - u) / lambda; 1 - u lies in (0, 1].
  return binary(g, "divide", unary(g, "negate", unary(g, "log_plus_one", unary(g, "negate", u))), lambda);
}

Value geometric_from_uniform(Graph& g, Value u, Value log1m_p) {
  // ceil(log(1 - u) / log(1 - p)), at least 1.
  Value r = unary(g, "ceil", binary(g, "divide", unary(g, "log_plus_one", unary(g, "negate", u)), log1m_p));
  return binary(g, "maximum", r, constant(g, 1, c10::kFloat, g.type(u).shape));
}

Value cauchy_from_uniform(Graph& g, Value u, Value median, Value sigma) {
  const Shape& s = g.type(u).shape;
  Value angle = binary(g, "multiply", constant(g, M_PI, c10::kFloat, s), binary(g, "subtract", u, constant(g, 0.5, c10::kFloat, s)));
  return binary(g, "add", median, binary(g, "multiply", sigma, g.add("chlo.tan", {angle}, g.type(angle))));
}

Value multinomial(Graph& g, Value state, Value p, int64_t n, bool replacement) {
  int64_t rows = g.type(p).shape[0], categories = g.type(p).shape[1];
  if (replacement) {
    // Inverse CDF: the sample is the number of cumulative weights at or below u * total.
    Value cdf = cumulative(g, p, 1, ReduceKind::Sum);
    Value total = reshape(g, slice_dim(g, cdf, 1, categories - 1, categories), {rows, 1});
    Shape ss{rows, n, categories};
    Value u = uniform01(g, state, {rows, n}, c10::kFloat);
    Value target = binary(g, "multiply", u, broadcast_in_dim(g, total, {rows, n}, {0, 1}));
    Value below = compare(g, broadcast_in_dim(g, cdf, ss, {0, 2}), broadcast_in_dim(g, target, ss, {0, 1}), "LE",
                          c10::kFloat);
    Value r = reduce(g, convert(g, below, c10::kLong), {2}, ReduceKind::Sum);
    return binary(g, "minimum", r, constant(g, categories - 1, c10::kLong, {rows, n}));
  }
  // Gumbel top-k: the n largest log(p) + Gumbel noise are a sample without replacement.
  Value u = uniform01(g, state, {rows, categories}, c10::kFloat);
  Value gumbel = unary(g, "negate", unary(g, "log", unary(g, "negate", unary(g, "log_plus_one", unary(g, "negate", u)))));
  Value keys = binary(g, "add", unary(g, "log", p), gumbel);
  return slice_dim(g, sort_with_indices(g, keys, 1, true).second, 1, 0, n);
}

Value random_permutation(Graph& g, Value state, int64_t n) {
  // Sorting random keys permutes 0..n-1 uniformly (ties are vanishingly rare with 32 random bits).
  return sort_with_indices(g, random_bits_u32(g, state, {n}), 0, false).second;
}

}  // namespace torch_tpu::lower
