// Linear algebra as graphs: triangular solves, LU with partial pivoting (a device
// loop over columns, as LAPACK's getrf2), determinants, Householder QR, Jacobi
// eigh and SVD.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lowering/builder.h"

namespace torch_tpu::lower {

std::string bool_attr(bool b);

// op(A) X = B (left) or X op(A) = B, with A triangular; both batched alike.
Value triangular_solve_values(Graph& g, Value a, Value b, bool left, bool lower, bool unit_diagonal, bool transpose_a);

// Zeroes the triangle the decomposition leaves undefined.
Value keep_triangle(Graph& g, Value v, bool lower);

// XLA's Cholesky factor of a batch of matrices (the other triangle zeroed); a
// matrix that is not positive definite gets NaN in some or all of it.
Value cholesky_factor(Graph& g, Value a, bool lower);
// LAPACK's info for that factorization, int32 [batch]: 0, or the order of the
// first leading minor of `a` (the `lower` triangle read) that is not positive
// definite, for the matrices whose `factor` holds NaN.
Value cholesky_info(Graph& g, Value a, Value factor, bool lower);

// A 0-d int64 j broadcast to `shape`.
Value splat(Graph& g, Value j, const Shape& shape);

struct LuValues {
  Value lu;      // [B, m, n]: L below the diagonal (unit diagonal implied), U on and above
  Value pivots;  // int32 [B, k], 1-based, LAPACK's convention
  Value perm;    // int64 [B, m]: row i of P^T A is row perm[i] of A
  Value info;    // int32 [B]: first zero pivot (1-based), 0 if none
};

// getrf on a [B, m, n] value: for each column j, the largest magnitude at or
// below the diagonal becomes the pivot, rows j and p swap, and the rows below
// are eliminated (rank-1 update). A zero pivot column is left as it is.
LuValues lu_factor_values(Graph& g, Value a, bool pivot);

// The permutation (as in LuValues::perm) that LAPACK pivots [B, k] describe
// for matrices of m rows.
Value permutation_of(Graph& g, Value pivots, int64_t m);

// The [B, m, m] matrix P with P[perm[c], c] = 1 (A = P L U); transposed, P^T.
Value permutation_matrix(Graph& g, Value perm, c10::ScalarType dt, bool transposed);

Value batched_matmul(Graph& g, Value a, Value b);

// Solves A X = B (or A^T X = B) from A's LU factors; b is [B, n, r].
Value lu_solve_values(Graph& g, Value lu, Value perm, Value b, bool transpose);

// det = prod(diag U) * (-1)^(row swaps); slogdet splits it into sign and log|det|.
struct DetValues {
  Value sign, logabs, det;
};

DetValues det_values(Graph& g, const LuValues& f);

// geqrf on [B, m, n]: R on and above the diagonal, the reflectors below, and tau [B, k].
std::pair<Value, Value> geqrf_values(Graph& g, Value a);

// Applies Q = H_0 ... H_{k-1} (or Q^T) from the left or right to c [B, r, s].
Value apply_q(Graph& g, Value packed, Value taus, Value c, bool left, bool transpose);

// The first `cols` columns of the m x m identity, batched: [B, m, cols].
Value eye_columns(Graph& g, c10::ScalarType dt, int64_t batch, int64_t m, int64_t cols);

using GramFn = std::function<Value(Graph&, const std::vector<Value>&)>;
using RoundFn = std::function<std::vector<Value>(Graph&, Value J, const std::vector<Value>&)>;

// Sweeps while the off-diagonal mass of gram(state) exceeds eps^2 of the total.
// `round` applies one round to the state (the rotation comes from gram(state)).
std::vector<Value> jacobi_sweeps(Graph& g, std::vector<Value> state, int64_t n, const GramFn& gram, const RoundFn& round);

Value pad_to_even(Graph& g, Value a, bool rows, bool cols);

Value batched_transpose(Graph& g, Value a);

// Columns of v [B, r, c] reordered: column j becomes column order[j] ([B, c] int64).
Value permute_columns(Graph& g, Value v, Value order);

// Eigenvalues ascending [B, n] and eigenvectors [B, n, n] of a symmetric [B, n, n].
std::pair<Value, Value> eigh_values(Graph& g, Value a);

// The symmetric matrix eigh reads: one triangle of a, mirrored.
Value symmetric_from(Graph& g, Value a, bool lower);

}  // namespace torch_tpu::lower
