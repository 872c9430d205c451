// StableHLO building blocks over ir::Graph: each helper adds one or a few
// StableHLO ops and returns the resulting value. The op families' lowerings
// (csrc/lowering/<family>.cpp) are written with these, as are the few nodes
// the kernels in csrc/aten add themselves.
//
// Conventions: shapes are row-major; a "dims" argument lists dimensions of the
// operand; helpers check what StableHLO would reject, so errors point at the
// lowering rather than at the plugin's parser.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <c10/core/Scalar.h>

#include "ir/graph.h"

namespace torch_tpu::lower {

using ir::Graph;
using ir::Shape;
using ir::Type;
using ir::Value;

using ir::i64_array;
bool is_float(c10::ScalarType t);
bool is_signed_int(c10::ScalarType t);

// A constant of `dtype` broadcast to `shape`.
Value constant(Graph& g, const c10::Scalar& value, c10::ScalarType dtype, const Shape& shape = {});
// A constant of like's dtype and shape.
Value constant_like(Graph& g, Value like, const c10::Scalar& value);
// PyTorch's casts (to bool: != 0). Complex to real has no StableHLO form: a
// cast that means it takes real_part() first.
Value convert(Graph& g, Value v, c10::ScalarType dtype);
// Complex values: the float type of each part, the parts (a real v is its own
// real part, with a zero imaginary part), and a complex value from its parts.
c10::ScalarType complex_part_type(c10::ScalarType complex);
Value real_part(Graph& g, Value z);
Value imag_part(Graph& g, Value z);
Value make_complex(Graph& g, Value re, Value im);
Value conj(Graph& g, Value z);  // z itself for real values
Value magnitude(Graph& g, Value v);  // |v|: real, also for complex v
// Reinterprets the bytes of v as dtype; a flat value may change element size.
Value bitcast(Graph& g, Value v, c10::ScalarType dtype);
using ir::reshape;
inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}
Value transpose(Graph& g, Value v, const std::vector<int64_t>& perm);
// Broadcasts v to `shape` with numpy rules (trailing dimensions aligned).
Value broadcast_to(Graph& g, Value v, const Shape& shape);
// broadcast_in_dim with explicit dimension mapping.
Value broadcast_in_dim(Graph& g, Value v, const Shape& shape, const std::vector<int64_t>& dims);
Value slice(Graph& g, Value v, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
            const std::vector<int64_t>& strides);
// [start, limit) of a 1-D value whose length grows later (a host-value pool,
// see exec::Recording): always a slice, even when it covers all of v today.
Value slice_of_growing(Graph& g, Value v, int64_t start, int64_t limit);
Value slice_dim(Graph& g, Value v, int64_t dim, int64_t start, int64_t limit, int64_t step = 1);
Value concat(Graph& g, const std::vector<Value>& vs, int64_t dim);
Value iota(Graph& g, c10::ScalarType dtype, const Shape& shape, int64_t dim);

Value unary(Graph& g, const char* op, Value v);
// Operands must already share shape and dtype.
Value binary(Graph& g, const char* op, Value a, Value b);
// Broadcasts a and b to a common shape and converts both to `dtype` first.
Value binary_bc(Graph& g, const char* op, Value a, Value b, c10::ScalarType dtype);
// direction: EQ NE LT LE GT GE. Operands are broadcast and converted to `dtype`.
Value compare(Graph& g, Value a, Value b, const char* direction, c10::ScalarType dtype);
Value select(Graph& g, Value pred, Value on_true, Value on_false);

enum class ReduceKind { Sum, Prod, Max, Min, And, Or, Xor };
// The value a reduction of `kind` starts from (0, 1, -inf, the lowest integer, ...).
c10::Scalar reduce_identity(c10::ScalarType dt, ReduceKind kind);
// The combiner region of a reduction of `kind` over `dt` ("({ ^bb0(...): ... })").
// PyTorch's max and min propagate NaN: with `explicit_nan` the region says so
// with selects; without, it is the one op (stablehlo.maximum and minimum
// propagate NaN too), the only form XLA's collectives accept.
std::string reduce_region(c10::ScalarType dt, ReduceKind kind, bool explicit_nan = true);
// Reduces `dims` away; the accumulation happens in the operand's dtype. A
// float32 row sum runs as a product with ones (see builder.cpp).
Value reduce(Graph& g, Value v, const std::vector<int64_t>& dims, ReduceKind kind);

// Returns {values, indices(int64)} of the max (or min) along `dim` (removed):
// NaN wins like in PyTorch, and ties go to the first index.
std::pair<Value, Value> arg_reduce(Graph& g, Value v, int64_t dim, bool is_max);

// Sorts along `dim` (stable): returns {values, int64 indices}. NaN sorts as
// the largest value, as in PyTorch.
std::pair<Value, Value> sort_with_indices(Graph& g, Value v, int64_t dim, bool descending);
// Inclusive scan along `dim`.
Value cumulative(Graph& g, Value v, int64_t dim, ReduceKind kind);
// Sliding-window reduction; every vector has one entry per dimension of v.
// Padding takes the reduction's identity.
Value reduce_window(Graph& g, Value v, ReduceKind kind, const std::vector<int64_t>& window,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilation,
                    const std::vector<int64_t>& pad_lo, const std::vector<int64_t>& pad_hi);
// Window max with the `index` (int64, v's shape) of the chosen element:
// NaN wins, ties go to the lower index; padding never wins.
std::pair<Value, Value> reduce_window_argmax(Graph& g, Value v, Value index, const std::vector<int64_t>& window,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& dilation,
                                             const std::vector<int64_t>& pad_lo,
                                             const std::vector<int64_t>& pad_hi, bool is_max = true,
                                             bool ties_to_last = false);
// Running max (or min) along `dim` with the index where it was reached
// (ties and NaN: the later index, as torch.cummax).
std::pair<Value, Value> cumulative_arg(Graph& g, Value v, int64_t dim, bool is_max);
// Running log(sum(exp(v))) along `dim` (floating types).
Value cumulative_logsumexp(Graph& g, Value v, int64_t dim);
// "dense<[[lo0, hi0], ...]> : tensor<Nx2xi64>", the padding attribute of windowed ops.
std::string padding_attr(const std::vector<int64_t>& lo, const std::vector<int64_t>& hi);
// stablehlo.pad: edge padding (negative trims) and interior padding.
Value pad(Graph& g, Value v, const c10::Scalar& value, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
          const std::vector<int64_t>& interior);
// Reverses the listed dimensions.
Value reverse(Graph& g, Value v, const std::vector<int64_t>& dims);

// Default: the backend's default precision (on a TPU, bf16 passes for f32);
// Highest: full f32 accumulation everywhere.
enum class DotPrecision { Default, Highest };
Value dot_general(Graph& g, Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                  const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                  const std::vector<int64_t>& rhs_contract, c10::ScalarType out_dtype,
                  DotPrecision precision = DotPrecision::Default);

// out[idx] = elements of a flattened 1-D operand at int64 flat indices (any shape).
Value gather_flat(Graph& g, Value flat, Value indices);
// The slices of v along `dim` at `indices` (1-D, int64, in range): v's shape
// with dim's size the index count. Whole rows, where gather_flat takes one
// element per index.
Value gather_along(Graph& g, Value v, int64_t dim, Value indices);
// v with the slices of `updates` (gather_along's shape) added into its slices
// along `dim` at `indices`.
Value scatter_add_along(Graph& g, Value v, int64_t dim, Value indices, Value updates);
// Scatters `updates` (shape of indices) into a 1-D operand at flat int64 indices;
// combine is "set" (replace) or "add".
Value scatter_flat(Graph& g, Value flat, Value indices, Value updates, bool add);
// The same, combining colliding updates and the operand with `combine`.
Value scatter_flat(Graph& g, Value flat, Value indices, Value updates, ReduceKind combine);
Value dynamic_update_slice(Graph& g, Value operand, Value update, const std::vector<int64_t>& start);
// The same with start indices that are 0-d int64 graph values (runtime inputs).
Value dynamic_update_slice(Graph& g, Value operand, Value update, const std::vector<Value>& start);
// The `sizes` block of `operand` at start indices that are 0-d int64 values.
Value dynamic_slice(Graph& g, Value operand, const std::vector<Value>& start, const Shape& sizes);

// stablehlo.while: the `carried` values go round while `cond` (a 0-d bool)
// holds. cond and body are built on nested graphs whose parameters are the
// carried values; the body returns the next values, of the same types.
using RegionFn = std::function<std::vector<Value>(Graph&, const std::vector<Value>&)>;
std::vector<Value> while_loop(Graph& g, const std::vector<Value>& carried, const RegionFn& cond, const RegionFn& body);
// A counted loop: body(g, i, values) for i = start, start + 1, ... while i < limit,
// with start and limit 0-d int64 values of g.
using CountedBodyFn = std::function<std::vector<Value>(Graph&, Value, const std::vector<Value>&)>;
std::vector<Value> counted_loop(Graph& g, Value start, Value limit, const std::vector<Value>& carried,
                                const CountedBodyFn& body);

}  // namespace torch_tpu::lower
