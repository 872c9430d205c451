// Linear algebra: Cholesky and triangular solves on XLA's own ops; LU with
// partial pivoting (and what is built on it: solve, inverse, determinants) as
// a device loop over columns, the way LAPACK's getrf2 proceeds.
#include <ATen/native/Resize.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"

namespace torch_tpu::aten {

using namespace lower;

// --------------------------------------------------------------------------
// Linear algebra on XLA's own decompositions: Cholesky and triangular solves
// (batched over leading dimensions).

namespace {
std::string bool_attr(bool b) { return b ? "true" : "false"; }

// op(A) X = B (left) or X op(A) = B, with A triangular; both batched alike.
Value triangular_solve_values(Graph& g, Value a, Value b, bool left, bool lower, bool unit_diagonal, bool transpose_a) {
  return g.add("stablehlo.triangular_solve", {a, b}, g.type(b),
               "{left_side = " + bool_attr(left) + ", lower = " + bool_attr(lower) + ", transpose_a = #stablehlo<transpose " +
                   (transpose_a ? "TRANSPOSE" : "NO_TRANSPOSE") + ">, unit_diagonal = " + bool_attr(unit_diagonal) + "}");
}

// Zeroes the triangle the decomposition leaves undefined.
Value keep_triangle(Graph& g, Value v, bool lower) {
  auto t = g.type(v);
  int64_t r = t.shape.size();
  Value diff = binary(g, "subtract", iota(g, c10::kLong, t.shape, r - 1), iota(g, c10::kLong, t.shape, r - 2));
  Value keep = compare(g, diff, constant(g, 0, c10::kLong, t.shape), lower ? "LE" : "GE", c10::kLong);
  return select(g, keep, v, constant(g, 0, t.dtype, t.shape));
}

void check_square(const char* name, const at::Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, name, ": The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(a.size(-1) == a.size(-2), name, ": A must be batches of square matrices, but they are ", a.size(-2),
              " by ", a.size(-1), " matrices");
  check_not_complex(name, a);
  TORCH_CHECK(a.scalar_type() == c10::kFloat || a.scalar_type() == c10::kDouble, name,
              ": Expected a floating point tensor as input. Got ", a.scalar_type());
}

// Broadcasts the batch dimensions of a and b to a common shape.
std::pair<Shape, Shape> batched_shapes(const at::Tensor& a, const at::Tensor& b) {
  auto batch = at::infer_size_dimvector(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  Shape as(batch.begin(), batch.end()), bs = as;
  as.push_back(a.size(-2));
  as.push_back(a.size(-1));
  bs.push_back(b.size(-2));
  bs.push_back(b.size(-1));
  return {as, bs};
}
}  // namespace

std::tuple<at::Tensor, at::Tensor> linalg_cholesky_ex(const at::Tensor& self, bool upper, bool check_errors) {
  check_square("linalg.cholesky", self);
  Op op("aten::linalg_cholesky_ex");
  Graph& g = op.g();
  Shape s = shape_of(self);
  int64_t n = s.back();
  Shape batch(s.begin(), s.end() - 2);
  Value factor = keep_triangle(g, g.add("stablehlo.cholesky", {op.in(self)}, g.type(op.in(self)),
                                        "{lower = " + bool_attr(!upper) + "}"), !upper);
  // XLA leaves NaN from the first failing column on: info is that column's order (0: success).
  Value info = constant(g, 0, c10::kInt, batch);
  if (n > 0) {
    Shape flat_batch{numel_of(batch), n};
    Value diag_index = binary(g, "add", binary(g, "multiply", iota(g, c10::kLong, flat_batch, 0), constant(g, n * n, c10::kLong, flat_batch)),
                              binary(g, "multiply", iota(g, c10::kLong, flat_batch, 1), constant(g, n + 1, c10::kLong, flat_batch)));
    Value diag = gather_flat(g, reshape(g, factor, {numel_of(s)}), diag_index);
    Value bad = compare(g, diag, diag, "NE", self.scalar_type());
    Value order = select(g, bad, binary(g, "add", iota(g, c10::kInt, flat_batch, 1), constant(g, 1, c10::kInt, flat_batch)),
                         constant(g, std::numeric_limits<int32_t>::max(), c10::kInt, flat_batch));
    Value first = reduce(g, order, {1}, ReduceKind::Min);
    first = select(g, compare(g, first, constant(g, std::numeric_limits<int32_t>::max(), c10::kInt, {numel_of(batch)}), "EQ", c10::kInt),
                   constant(g, 0, c10::kInt, {numel_of(batch)}), first);
    info = reshape(g, first, batch);
  }
  at::Tensor l = op.result(factor);
  at::Tensor info_t = op.result(info);
  op.run();
  if (check_errors && info_t.numel() > 0) {
    int64_t bad = info_t.max().item<int64_t>();
    TORCH_CHECK_LINALG(bad == 0, "linalg.cholesky: The factorization could not be completed because the input is not "
                       "positive-definite (the leading minor of order ", bad, " is not positive-definite).");
  }
  return {l, info_t};
}

at::Tensor cholesky(const at::Tensor& self, bool upper) {
  return std::get<0>(torch_tpu::aten::linalg_cholesky_ex(self, upper, /*check_errors=*/true));
}

std::tuple<at::Tensor, at::Tensor> triangular_solve(const at::Tensor& self, const at::Tensor& a, bool upper,
                                                    bool transpose, bool unitriangular) {
  check_square("triangular_solve", a);
  TORCH_CHECK(self.dim() >= 2 && self.size(-2) == a.size(-1), "triangular_solve: Incompatible matrix sizes for A ",
              a.sizes(), " and b ", self.sizes());
  auto [as, bs] = batched_shapes(a, self);
  Op op("aten::triangular_solve");
  Graph& g = op.g();
  Value av = broadcast_to(g, op.in(a), as);
  Value x = triangular_solve_values(g, av, broadcast_to(g, op.in(self), bs), true, !upper, unitriangular, transpose);
  at::Tensor out = op.result(x);
  at::Tensor coefficient = op.result(av);
  op.run();
  return {out, coefficient};
}

at::Tensor linalg_solve_triangular(const at::Tensor& a, const at::Tensor& b, bool upper, bool left, bool unitriangular) {
  check_square("linalg.solve_triangular", a);
  TORCH_CHECK(b.dim() >= 2 && (left ? b.size(-2) : b.size(-1)) == a.size(-1),
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B",
              " (", a.sizes(), " and ", b.sizes(), ")");
  auto [as, bs] = batched_shapes(a, b);
  Op op("aten::linalg_solve_triangular");
  Graph& g = op.g();
  Value x = triangular_solve_values(g, broadcast_to(g, op.in(a), as), broadcast_to(g, op.in(b), bs), left, !upper,
                                    unitriangular, false);
  at::Tensor out = op.result(x);
  op.run();
  return out;
}

at::Tensor cholesky_solve_helper(const at::Tensor& self, const at::Tensor& factor, bool upper) {
  auto [as, bs] = batched_shapes(factor, self);
  Op op("aten::cholesky_solve");
  Graph& g = op.g();
  Value l = broadcast_to(g, op.in(factor), as);
  // A = L L^T (or U^T U): solve with the factor, then with its transpose.
  Value y = triangular_solve_values(g, l, broadcast_to(g, op.in(self), bs), true, !upper, false, upper);
  Value x = triangular_solve_values(g, l, y, true, !upper, false, !upper);
  at::Tensor out = op.result(x);
  op.run();
  return out;
}

at::Tensor cholesky_inverse(const at::Tensor& factor, bool upper) {
  check_square("cholesky_inverse", factor);
  at::Tensor eye = at::eye(factor.size(-1), factor.options()).expand(factor.sizes());
  return aten::cholesky_solve_helper(eye, factor, upper);
}


// --------------------------------------------------------------------------
// LU with partial pivoting: P^T A = L U, batched over leading dimensions.

namespace {

// A 0-d int64 j broadcast to `shape`.
Value splat(Graph& g, Value j, const Shape& shape) { return broadcast_in_dim(g, j, shape, {}); }

// Row `which` (bool [B, m], one true per batch) of a [B, m, n] value: [B, n].
Value pick_row(Graph& g, Value a, Value which) {
  auto t = g.type(a);
  Value mask = broadcast_in_dim(g, which, t.shape, {0, 1});
  return reduce(g, select(g, mask, a, constant(g, 0, t.dtype, t.shape)), {1}, ReduceKind::Sum);
}

struct LuValues {
  Value lu;      // [B, m, n]: L below the diagonal (unit diagonal implied), U on and above
  Value pivots;  // int32 [B, k], 1-based, LAPACK's convention
  Value perm;    // int64 [B, m]: row i of P^T A is row perm[i] of A
  Value info;    // int32 [B]: first zero pivot (1-based), 0 if none
};

// getrf on a [B, m, n] value: for each column j, the largest magnitude at or
// below the diagonal becomes the pivot, rows j and p swap, and the rows below
// are eliminated (rank-1 update). A zero pivot column is left as it is.
LuValues lu_factor_values(Graph& g, Value a, bool pivot) {
  const Type t = g.type(a);
  const int64_t batch = t.shape[0], m = t.shape[1], n = t.shape[2], k = std::min(m, n);
  const c10::ScalarType dt = t.dtype;
  Value pivots = constant(g, 0, c10::kInt, {batch, k});
  Value perm = iota(g, c10::kLong, {batch, m}, 1);
  Value info = constant(g, 0, c10::kInt, {batch});
  auto body = [&](Graph& sg, Value j, const std::vector<Value>& v) {
    Value lu = v[0], piv = v[1], order = v[2], first_zero = v[3];
    const Shape s3{batch, m, n}, rows{batch, m}, cols{batch, n}, steps{batch, k};
    Value row_index = iota(sg, c10::kLong, rows, 1);
    Value col_is_j = compare(sg, iota(sg, c10::kLong, s3, 2), splat(sg, j, s3), "EQ", c10::kLong);
    Value column = reduce(sg, select(sg, col_is_j, lu, constant(sg, 0, dt, s3)), {2}, ReduceKind::Sum);
    Value p = j;  // per batch: [B]
    Value at_or_below = compare(sg, row_index, splat(sg, j, rows), "GE", c10::kLong);
    if (pivot) {
      Value magnitude = select(sg, at_or_below, unary(sg, "abs", column), constant(sg, -1, dt, rows));
      p = arg_reduce(sg, magnitude, 1, true).second;
    } else {
      p = splat(sg, j, {batch});
    }
    Value is_j = compare(sg, row_index, splat(sg, j, rows), "EQ", c10::kLong);
    Value is_p = compare(sg, row_index, broadcast_in_dim(sg, p, rows, {0}), "EQ", c10::kLong);
    Value row_j = pick_row(sg, lu, is_j), row_p = pick_row(sg, lu, is_p);
    auto rows_of = [&](Value mask) { return broadcast_in_dim(sg, mask, s3, {0, 1}); };
    auto spread = [&](Value row) { return broadcast_in_dim(sg, row, s3, {0, 2}); };
    Value swapped = select(sg, rows_of(is_j), spread(row_p), select(sg, rows_of(is_p), spread(row_j), lu));
    auto pick = [&](Value vec, Value mask) {
      return reduce(sg, select(sg, mask, vec, constant(sg, 0, sg.type(vec).dtype, rows)), {1}, ReduceKind::Sum);
    };
    Value order_j = pick(order, is_j), order_p = pick(order, is_p);
    Value new_order = select(sg, is_j, broadcast_in_dim(sg, order_p, rows, {0}),
                             select(sg, is_p, broadcast_in_dim(sg, order_j, rows, {0}), order));
    // The pivot, the multipliers below it and the pivot row right of it.
    Value col_index = iota(sg, c10::kLong, cols, 1);
    Value d = reduce(sg, select(sg, compare(sg, col_index, splat(sg, j, cols), "EQ", c10::kLong), row_p,
                                constant(sg, 0, dt, cols)), {1}, ReduceKind::Sum);
    Value nonzero = compare(sg, d, constant(sg, 0, dt, {batch}), "NE", dt);
    Value new_column = reduce(sg, select(sg, col_is_j, swapped, constant(sg, 0, dt, s3)), {2}, ReduceKind::Sum);
    Value below = binary(sg, "and", compare(sg, row_index, splat(sg, j, rows), "GT", c10::kLong),
                         broadcast_in_dim(sg, nonzero, rows, {0}));
    Value l = select(sg, below, binary(sg, "divide", new_column, broadcast_in_dim(sg, d, rows, {0})),
                     constant(sg, 0, dt, rows));
    Value u = select(sg, compare(sg, col_index, splat(sg, j, cols), "GT", c10::kLong), row_p,
                     constant(sg, 0, dt, cols));
    Value updated = binary(sg, "subtract", swapped,
                           binary(sg, "multiply", broadcast_in_dim(sg, l, s3, {0, 1}), spread(u)));
    updated = select(sg, binary(sg, "and", col_is_j, rows_of(below)), broadcast_in_dim(sg, l, s3, {0, 1}), updated);
    Value step_is_j = compare(sg, iota(sg, c10::kLong, steps, 1), splat(sg, j, steps), "EQ", c10::kLong);
    Value new_piv = select(sg, step_is_j,
                           broadcast_in_dim(sg, convert(sg, binary(sg, "add", p, constant(sg, 1, c10::kLong, {batch})),
                                                        c10::kInt), steps, {0}),
                           piv);
    Value j_plus_one = convert(sg, binary(sg, "add", splat(sg, j, {batch}), constant(sg, 1, c10::kLong, {batch})),
                               c10::kInt);
    Value newly_zero = binary(sg, "and", unary(sg, "not", nonzero),
                              compare(sg, first_zero, constant(sg, 0, c10::kInt, {batch}), "EQ", c10::kInt));
    Value new_info = select(sg, newly_zero, j_plus_one, first_zero);
    return std::vector<Value>{updated, new_piv, new_order, new_info};
  };
  auto out = counted_loop(g, constant(g, 0, c10::kLong), constant(g, k, c10::kLong), {a, pivots, perm, info}, body);
  return {out[0], out[1], out[2], out[3]};
}

// The permutation (as in LuValues::perm) that LAPACK pivots [B, k] describe
// for matrices of m rows.
Value permutation_of(Graph& g, Value pivots, int64_t m) {
  const int64_t batch = g.type(pivots).shape[0], k = g.type(pivots).shape[1];
  auto body = [&](Graph& sg, Value j, const std::vector<Value>& v) {
    Value order = v[0], piv = v[1];
    const Shape rows{batch, m}, steps{batch, k};
    Value step_is_j = compare(sg, iota(sg, c10::kLong, steps, 1), splat(sg, j, steps), "EQ", c10::kLong);
    Value p = binary(sg, "subtract",
                     reduce(sg, select(sg, step_is_j, convert(sg, piv, c10::kLong), constant(sg, 0, c10::kLong, steps)),
                            {1}, ReduceKind::Sum),
                     constant(sg, 1, c10::kLong, {batch}));
    Value row_index = iota(sg, c10::kLong, rows, 1);
    Value is_j = compare(sg, row_index, splat(sg, j, rows), "EQ", c10::kLong);
    Value is_p = compare(sg, row_index, broadcast_in_dim(sg, p, rows, {0}), "EQ", c10::kLong);
    auto pick = [&](Value mask) {
      return broadcast_in_dim(sg, reduce(sg, select(sg, mask, order, constant(sg, 0, c10::kLong, rows)), {1},
                                         ReduceKind::Sum), rows, {0});
    };
    Value swapped = select(sg, is_j, pick(is_p), select(sg, is_p, pick(is_j), order));
    return std::vector<Value>{swapped, piv};
  };
  return counted_loop(g, constant(g, 0, c10::kLong), constant(g, k, c10::kLong),
                      {iota(g, c10::kLong, {batch, m}, 1), pivots}, body)[0];
}

// The [B, m, m] matrix P with P[perm[c], c] = 1 (A = P L U); transposed, P^T.
Value permutation_matrix(Graph& g, Value perm, c10::ScalarType dt, bool transposed) {
  const Shape s = g.type(perm).shape;
  const Shape s3{s[0], s[1], s[1]};
  Value target = broadcast_in_dim(g, perm, s3, {0, transposed ? 1 : 2});
  Value hit = compare(g, iota(g, c10::kLong, s3, transposed ? 2 : 1), target, "EQ", c10::kLong);
  return convert(g, hit, dt);
}

Value batched_matmul(Graph& g, Value a, Value b) {
  return dot_general(g, a, b, {0}, {0}, {2}, {1}, g.type(a).dtype);
}

// The diagonal [B, k] of a [B, m, n] value.
Value diagonal_of(Graph& g, Value a) {
  auto t = g.type(a);
  int64_t k = std::min(t.shape[1], t.shape[2]);
  Value sq = slice(g, a, {0, 0, 0}, {t.shape[0], k, k}, {1, 1, 1});
  Shape s3{t.shape[0], k, k};
  Value on = compare(g, iota(g, c10::kLong, s3, 1), iota(g, c10::kLong, s3, 2), "EQ", c10::kLong);
  return reduce(g, select(g, on, sq, constant(g, 0, t.dtype, s3)), {2}, ReduceKind::Sum);
}

// Solves A X = B (or A^T X = B) from A's LU factors; b is [B, n, r].
Value lu_solve_values(Graph& g, Value lu, Value perm, Value b, bool transpose) {
  auto dt = g.type(lu).dtype;
  if (!transpose) {
    Value permuted = batched_matmul(g, permutation_matrix(g, perm, dt, true), b);
    Value y = triangular_solve_values(g, lu, permuted, true, true, true, false);
    return triangular_solve_values(g, lu, y, true, false, false, false);
  }
  // A^T = U^T L^T P^T.
  Value y = triangular_solve_values(g, lu, b, true, false, false, true);
  Value z = triangular_solve_values(g, lu, y, true, true, true, true);
  return batched_matmul(g, permutation_matrix(g, perm, dt, false), z);
}

void check_float_matrix(const char* name, const at::Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, name, ": The input tensor A must have at least 2 dimensions.");
  check_not_complex(name, a);
  TORCH_CHECK(a.scalar_type() == c10::kFloat || a.scalar_type() == c10::kDouble, name,
              ": Expected a floating point tensor as input. Got ", a.scalar_type());
}

Shape batch_of(const at::Tensor& t, int64_t matrix_dims = 2) {
  return Shape(t.sizes().begin(), t.sizes().end() - matrix_dims);
}
Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

// Reads a [*, m, n] tensor as [B, m, n].
Value flat_batch(Op& op, const at::Tensor& t) {
  return reshape(op.g(), op.in(t), {numel_of(batch_of(t)), t.size(-2), t.size(-1)});
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu_factor_ex(const at::Tensor& A, bool pivot, bool check_errors) {
  check_float_matrix("torch.linalg.lu_factor_ex", A);
  Shape batch = batch_of(A);
  const int64_t k = std::min(A.size(-2), A.size(-1));
  Op op("aten::linalg_lu_factor_ex");
  Graph& g = op.g();
  LuValues f = lu_factor_values(g, flat_batch(op, A), pivot);
  at::Tensor lu = op.result(reshape(g, f.lu, shape_of(A)));
  at::Tensor pivots = op.result(reshape(g, f.pivots, with(batch, {k})));
  at::Tensor info = op.result(reshape(g, f.info, batch));
  op.run();
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", A.dim() == 2);
  return {lu, pivots, info};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_unpack(const at::Tensor& LU, const at::Tensor& pivots,
                                                         bool unpack_data, bool unpack_pivots) {
  TORCH_CHECK(LU.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", LU.sizes(),
              " instead");
  TORCH_CHECK(pivots.scalar_type() == at::kInt, "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
              "torch.int32 dtype. Note: this function is intended to be used with the output produced by torch.linalg.lu_factor");
  int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  Shape batch = batch_of(LU);
  int64_t flat = numel_of(batch);
  Op op("aten::lu_unpack");
  Graph& g = op.g();
  auto dt = LU.scalar_type();
  at::Tensor P, L, U;
  if (unpack_data) {
    Value lu = reshape(g, op.in(LU), {flat, m, n});
    Shape ls{flat, m, k}, us{flat, k, n};
    Value l = slice(g, lu, {0, 0, 0}, ls, {1, 1, 1});
    Value diff_l = binary(g, "subtract", iota(g, c10::kLong, ls, 2), iota(g, c10::kLong, ls, 1));
    Value zero_l = constant(g, 0, dt, ls);
    l = select(g, compare(g, diff_l, constant(g, 0, c10::kLong, ls), "LT", c10::kLong), l,
               select(g, compare(g, diff_l, constant(g, 0, c10::kLong, ls), "EQ", c10::kLong), constant(g, 1, dt, ls),
                      zero_l));
    Value u = slice(g, lu, {0, 0, 0}, us, {1, 1, 1});
    Value diff_u = binary(g, "subtract", iota(g, c10::kLong, us, 2), iota(g, c10::kLong, us, 1));
    u = select(g, compare(g, diff_u, constant(g, 0, c10::kLong, us), "GE", c10::kLong), u, constant(g, 0, dt, us));
    L = op.result(reshape(g, l, with(batch, {m, k})));
    U = op.result(reshape(g, u, with(batch, {k, n})));
  } else {
    L = at::empty({0}, LU.options());
    U = at::empty({0}, LU.options());
  }
  if (unpack_pivots) {
    TORCH_CHECK(pivots.size(-1) == k, "torch.lu_unpack: pivots must have ", k, " elements, but got ", pivots.size(-1));
    Value perm = permutation_of(g, reshape(g, convert(g, op.in(pivots), c10::kInt), {flat, k}), m);
    P = op.result(reshape(g, permutation_matrix(g, perm, dt, false), with(batch, {m, m})));
  } else {
    P = at::empty({0}, LU.options());
  }
  op.run();
  return {P, L, U};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu(const at::Tensor& A, bool pivot) {
  auto [lu, pivots, info] = torch_tpu::aten::linalg_lu_factor_ex(A, pivot, false);
  return torch_tpu::aten::lu_unpack(lu, pivots, true, true);
}

namespace {
// det = prod(diag U) * (-1)^(row swaps); slogdet splits it into sign and log|det|.
struct DetValues {
  Value sign, logabs, det;
};
// Like the CPU kernel, a contiguous A is factored as A^T (the same
// determinant): PyTorch's backward formulas read the returned LU that way.
LuValues determinant_factorization(Op& op, const at::Tensor& A) {
  return lu_factor_values(op.g(), flat_batch(op, A.is_contiguous() ? A.mT() : A), true);
}

DetValues det_values(Graph& g, const LuValues& f) {
  Value diag = diagonal_of(g, f.lu);
  auto dt = g.type(diag).dtype;
  Shape ks = g.type(f.pivots).shape;
  Value swapped = compare(g, f.pivots, binary(g, "add", iota(g, c10::kInt, ks, 1), constant(g, 1, c10::kInt, ks)), "NE",
                          c10::kInt);
  Value swaps = reduce(g, convert(g, swapped, c10::kInt), {1}, ReduceKind::Sum);
  Value odd = compare(g, binary(g, "remainder", swaps, constant_like(g, swaps, 2)), constant_like(g, swaps, 0), "NE",
                      c10::kInt);
  Shape bs = g.type(odd).shape;
  Value parity = select(g, odd, constant(g, -1, dt, bs), constant(g, 1, dt, bs));
  Value diag_sign = unary(g, "sign", diag);
  Value sign = binary(g, "multiply", reduce(g, diag_sign, {1}, ReduceKind::Prod), parity);
  Value logabs = reduce(g, unary(g, "log", unary(g, "abs", diag)), {1}, ReduceKind::Sum);
  Value det = binary(g, "multiply", reduce(g, diag, {1}, ReduceKind::Prod), parity);
  return {sign, logabs, det};
}
}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> _linalg_det(const at::Tensor& A) {
  check_square("linalg.det", A);
  Shape batch = batch_of(A);
  Op op("aten::_linalg_det");
  Graph& g = op.g();
  LuValues f = determinant_factorization(op, A);
  DetValues d = det_values(g, f);
  at::Tensor det = op.result(reshape(g, d.det, batch));
  at::Tensor lu = op.result(reshape(g, f.lu, shape_of(A)));
  at::Tensor pivots = op.result(reshape(g, f.pivots, with(batch, {A.size(-1)})));
  op.run();
  return {det, lu, pivots};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _linalg_slogdet(const at::Tensor& A) {
  check_square("linalg.slogdet", A);
  Shape batch = batch_of(A);
  Op op("aten::_linalg_slogdet");
  Graph& g = op.g();
  LuValues f = determinant_factorization(op, A);
  DetValues d = det_values(g, f);
  at::Tensor sign = op.result(reshape(g, d.sign, batch));
  at::Tensor logabs = op.result(reshape(g, d.logabs, batch));
  at::Tensor lu = op.result(reshape(g, f.lu, shape_of(A)));
  at::Tensor pivots = op.result(reshape(g, f.pivots, with(batch, {A.size(-1)})));
  op.run();
  return {sign, logabs, lu, pivots};
}

namespace {
// B as [*, n, r]: a vector right-hand side gains a trailing dimension (PyTorch's rule).
bool is_vector_rhs(const at::Tensor& A, const at::Tensor& B) {
  auto expected = A.sizes().slice(0, A.dim() - 1);
  return B.dim() == 1 || (A.dim() - 1 == B.dim() && B.sizes().equals(expected));
}
}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _linalg_solve_ex(const at::Tensor& A, const at::Tensor& B,
                                                                            bool left, bool check_errors) {
  check_square("linalg.solve", A);
  TORCH_CHECK(A.scalar_type() == B.scalar_type(), "linalg.solve: Expected A and B to have the same dtype, but found A "
              "of type ", A.scalar_type(), " and B of type ", B.scalar_type(), " instead");
  bool vector = is_vector_rhs(A, B);
  TORCH_CHECK(left || !vector, "linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
              "In this case linalg.solve is equivalent to B / A.squeeze(-1)");
  at::Tensor b = vector ? B.unsqueeze(-1) : B;
  if (!left) b = b.mT();
  int64_t n = A.size(-1);
  TORCH_CHECK(b.size(-2) == n, "linalg.solve: Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", A.sizes(), " and ", B.sizes(), ")");
  auto [as, bs] = batched_shapes(A, b);
  Shape batch(as.begin(), as.end() - 2);
  int64_t flat = numel_of(batch), r = bs.back();
  Op op("aten::_linalg_solve_ex");
  Graph& g = op.g();
  Value a = reshape(g, broadcast_to(g, op.in(A), as), {flat, n, n});
  // X A = B is A^T X^T = B^T.
  LuValues f = lu_factor_values(g, a, true);
  Value x = lu_solve_values(g, f.lu, f.perm, reshape(g, broadcast_to(g, op.in(b), bs), {flat, n, r}), !left);
  Shape xs = with(batch, {n, r});
  Value result = reshape(g, x, xs);
  at::Tensor out = op.result(result);
  at::Tensor lu = op.result(reshape(g, f.lu, as));
  at::Tensor pivots = op.result(reshape(g, f.pivots, with(batch, {n})));
  at::Tensor info = op.result(reshape(g, f.info, batch));
  op.run();
  if (!left) out = out.mT();
  if (vector) out = out.squeeze(-1);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  return {out.contiguous(), lu, pivots, info};
}

at::Tensor linalg_lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left, bool adjoint) {
  check_square("linalg.lu_solve", LU);
  TORCH_CHECK(pivots.scalar_type() == at::kInt, "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  TORCH_CHECK(B.dim() >= 2, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
  TORCH_CHECK(LU.scalar_type() == B.scalar_type(), "linalg.lu_solve: Expected LU and B to have the same dtype, but found "
              "LU of type ", LU.scalar_type(), " and B of type ", B.scalar_type(), " instead");
  int64_t n = LU.size(-1);
  TORCH_CHECK(left ? B.size(-2) == n : B.size(-1) == n, "linalg.lu_solve: Incompatible shapes of A and B for the "
              "equation ", left ? "AX = B" : "XA = B", " (", LU.sizes(), " and ", B.sizes(), ")");
  // X A = B is A^T X^T = B^T.
  at::Tensor b = left ? B : B.mT();
  bool transpose = left ? adjoint : !adjoint;
  auto [as, bs] = batched_shapes(LU, b);
  Shape batch(as.begin(), as.end() - 2);
  int64_t flat = numel_of(batch), r = bs.back();
  Shape ps = with(batch, {n});
  Op op("aten::linalg_lu_solve");
  Graph& g = op.g();
  Value lu = reshape(g, broadcast_to(g, op.in(LU), as), {flat, n, n});
  Value piv = reshape(g, broadcast_to(g, convert(g, op.in(pivots), c10::kInt), ps), {flat, n});
  Value x = lu_solve_values(g, lu, permutation_of(g, piv, n), reshape(g, broadcast_to(g, op.in(b), bs), {flat, n, r}),
                            transpose);
  at::Tensor out = op.result(reshape(g, x, with(batch, {n, r})));
  op.run();
  return left ? out : out.mT().contiguous();
}

std::tuple<at::Tensor, at::Tensor> linalg_inv_ex(const at::Tensor& A, bool check_errors) {
  check_square("linalg.inv", A);
  at::Tensor eye = at::eye(A.size(-1), A.options());
  auto [x, lu, pivots, info] = torch_tpu::aten::_linalg_solve_ex(A, eye.expand(A.sizes()), true, false);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
  return {x, info};
}

// --------------------------------------------------------------------------
// QR by Householder reflections with LAPACK's conventions (geqrf / orgqr /
// ormqr): H_j = I - tau_j v_j v_j^T with v_j[j] = 1, beta = -sign(alpha) ||x||,
// so R's diagonal has the signs LAPACK gives.

namespace {

// Column j (0-d int64) of a [B, m, n] value: [B, m].
Value pick_column(Graph& g, Value a, Value j) {
  auto t = g.type(a);
  Value is_j = compare(g, iota(g, c10::kLong, t.shape, 2), splat(g, j, t.shape), "EQ", c10::kLong);
  return reduce(g, select(g, is_j, a, constant(g, 0, t.dtype, t.shape)), {2}, ReduceKind::Sum);
}

// Entry j of a [B, k] value: [B].
Value pick_entry(Graph& g, Value v, Value j) {
  auto t = g.type(v);
  Value is_j = compare(g, iota(g, c10::kLong, t.shape, 1), splat(g, j, t.shape), "EQ", c10::kLong);
  return reduce(g, select(g, is_j, v, constant(g, 0, t.dtype, t.shape)), {1}, ReduceKind::Sum);
}

// The reflector v_j (unit at row j, zero above) stored in column j of the geqrf output.
Value reflector(Graph& g, Value packed, Value j) {
  Value col = pick_column(g, packed, j);
  auto t = g.type(col);
  Value rows = iota(g, c10::kLong, t.shape, 1), at = splat(g, j, t.shape);
  Value below = compare(g, rows, at, "GT", c10::kLong);
  Value on = compare(g, rows, at, "EQ", c10::kLong);
  return select(g, below, col, select(g, on, constant(g, 1, t.dtype, t.shape), constant(g, 0, t.dtype, t.shape)));
}

// c - tau v (v^T c) (left) or c - tau (c v) v^T (right), for c [B, r, s].
Value apply_reflector(Graph& g, Value c, Value v, Value tau, bool left) {
  auto t = g.type(c);
  if (left) {
    Value w = dot_general(g, v, c, {0}, {0}, {1}, {1}, t.dtype);  // [B, s]
    Value outer = binary(g, "multiply", broadcast_in_dim(g, v, t.shape, {0, 1}), broadcast_in_dim(g, w, t.shape, {0, 2}));
    return binary(g, "subtract", c, binary(g, "multiply", broadcast_in_dim(g, tau, t.shape, {0}), outer));
  }
  Value w = dot_general(g, c, v, {0}, {0}, {2}, {1}, t.dtype);  // [B, r]
  Value outer = binary(g, "multiply", broadcast_in_dim(g, w, t.shape, {0, 1}), broadcast_in_dim(g, v, t.shape, {0, 2}));
  return binary(g, "subtract", c, binary(g, "multiply", broadcast_in_dim(g, tau, t.shape, {0}), outer));
}

// geqrf on [B, m, n]: R on and above the diagonal, the reflectors below, and tau [B, k].
std::pair<Value, Value> geqrf_values(Graph& g, Value a) {
  const Type t = g.type(a);
  const int64_t batch = t.shape[0], m = t.shape[1], n = t.shape[2], k = std::min(m, n);
  const c10::ScalarType dt = t.dtype;
  auto body = [&](Graph& sg, Value j, const std::vector<Value>& v) {
    Value packed = v[0], taus = v[1];
    const Shape rows{batch, m}, s3{batch, m, n}, steps{batch, k};
    Value col = pick_column(sg, packed, j);
    Value row_index = iota(sg, c10::kLong, rows, 1);
    Value below = compare(sg, row_index, splat(sg, j, rows), "GT", c10::kLong);
    Value on = compare(sg, row_index, splat(sg, j, rows), "EQ", c10::kLong);
    Value zero_rows = constant(sg, 0, dt, rows);
    Value alpha = reduce(sg, select(sg, on, col, zero_rows), {1}, ReduceKind::Sum);
    Value x = select(sg, below, col, zero_rows);
    Value xnorm = unary(sg, "sqrt", reduce(sg, binary(sg, "multiply", x, x), {1}, ReduceKind::Sum));
    Value zero_b = constant(sg, 0, dt, {batch});
    Value trivial = compare(sg, xnorm, zero_b, "EQ", dt);
    Value norm = unary(sg, "sqrt", binary(sg, "add", binary(sg, "multiply", alpha, alpha), binary(sg, "multiply", xnorm, xnorm)));
    Value alpha_negative = compare(sg, alpha, zero_b, "LT", dt);
    Value beta = select(sg, alpha_negative, norm, unary(sg, "negate", norm));
    Value tau = select(sg, trivial, zero_b, binary(sg, "divide", binary(sg, "subtract", beta, alpha), beta));
    Value scale = select(sg, trivial, constant(sg, 1, dt, {batch}),
                         binary(sg, "divide", constant(sg, 1, dt, {batch}), binary(sg, "subtract", alpha, beta)));
    Value vx = binary(sg, "multiply", x, broadcast_in_dim(sg, scale, rows, {0}));
    Value reflector_v = select(sg, on, constant(sg, 1, dt, rows), vx);
    // H_j applied to the columns right of j.
    Value applied = apply_reflector(sg, packed, reflector_v, tau, true);
    Value cols = iota(sg, c10::kLong, s3, 2);
    Value right = compare(sg, cols, splat(sg, j, s3), "GT", c10::kLong);
    Value col_j = compare(sg, cols, splat(sg, j, s3), "EQ", c10::kLong);
    Value new_col = select(sg, on, broadcast_in_dim(sg, select(sg, trivial, alpha, beta), rows, {0}),
                           select(sg, below, vx, col));
    Value out = select(sg, right, applied, select(sg, col_j, broadcast_in_dim(sg, new_col, s3, {0, 1}), packed));
    Value step_is_j = compare(sg, iota(sg, c10::kLong, steps, 1), splat(sg, j, steps), "EQ", c10::kLong);
    Value new_taus = select(sg, step_is_j, broadcast_in_dim(sg, tau, steps, {0}), taus);
    return std::vector<Value>{out, new_taus};
  };
  auto out = counted_loop(g, constant(g, 0, c10::kLong), constant(g, k, c10::kLong),
                          {a, constant(g, 0, dt, {batch, k})}, body);
  return {out[0], out[1]};
}

// Applies Q = H_0 ... H_{k-1} (or Q^T) from the left or right to c [B, r, s].
Value apply_q(Graph& g, Value packed, Value taus, Value c, bool left, bool transpose) {
  const int64_t k = g.type(taus).shape[1];
  // Q C and C Q^T take the reflectors last to first; Q^T C and C Q first to last.
  const bool backwards = left != transpose;
  auto body = [&](Graph& sg, Value i, const std::vector<Value>& v) {
    Value j = backwards ? binary(sg, "subtract", constant(sg, k - 1, c10::kLong), i) : i;
    Value refl = reflector(sg, v[0], j);
    Value out = apply_reflector(sg, v[2], refl, pick_entry(sg, v[1], j), left);
    return std::vector<Value>{v[0], v[1], out};
  };
  return counted_loop(g, constant(g, 0, c10::kLong), constant(g, k, c10::kLong), {packed, taus, c}, body)[2];
}

// The first `cols` columns of the m x m identity, batched: [B, m, cols].
Value eye_columns(Graph& g, c10::ScalarType dt, int64_t batch, int64_t m, int64_t cols) {
  Shape s{batch, m, cols};
  return convert(g, compare(g, iota(g, c10::kLong, s, 1), iota(g, c10::kLong, s, 2), "EQ", c10::kLong), dt);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> geqrf(const at::Tensor& self) {
  check_float_matrix("geqrf", self);
  Shape batch = batch_of(self);
  int64_t k = std::min(self.size(-2), self.size(-1));
  Op op("aten::geqrf");
  Graph& g = op.g();
  auto [packed, taus] = geqrf_values(g, flat_batch(op, self));
  at::Tensor a = op.result(reshape(g, packed, shape_of(self)));
  at::Tensor tau = op.result(reshape(g, taus, with(batch, {k})));
  op.run();
  return {a, tau};
}

std::tuple<at::Tensor, at::Tensor> linalg_qr(const at::Tensor& A, c10::string_view mode) {
  check_float_matrix("linalg.qr", A);
  TORCH_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  Shape batch = batch_of(A);
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), flat = numel_of(batch);
  bool complete = mode == "complete";
  int64_t q_cols = complete ? m : k, r_rows = complete ? m : k;
  Op op("aten::linalg_qr");
  Graph& g = op.g();
  auto dt = A.scalar_type();
  auto [packed, taus] = geqrf_values(g, flat_batch(op, A));
  Shape rs{flat, r_rows, n};
  Value r = r_rows == m ? packed : slice(g, packed, {0, 0, 0}, rs, {1, 1, 1});
  Value upper = compare(g, iota(g, c10::kLong, rs, 2), iota(g, c10::kLong, rs, 1), "GE", c10::kLong);
  r = select(g, upper, r, constant(g, 0, dt, rs));
  at::Tensor Q;
  if (mode != "r") {
    Value q = apply_q(g, packed, taus, eye_columns(g, dt, flat, m, q_cols), true, false);
    Q = op.result(reshape(g, q, with(batch, {m, q_cols})));
  }
  at::Tensor R = op.result(reshape(g, r, with(batch, {r_rows, n})));
  op.run();
  if (mode == "r") Q = at::empty({0}, A.options());
  return {Q, R};
}

at::Tensor linalg_householder_product(const at::Tensor& input, const at::Tensor& tau) {
  check_float_matrix("torch.linalg.householder_product", input);
  int64_t m = input.size(-2), n = input.size(-1), k = tau.size(-1);
  TORCH_CHECK(m >= n, "torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
              "input.shape[-1]");
  TORCH_CHECK(n >= k, "torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
              "tau.shape[-1]");
  TORCH_CHECK(tau.dim() == input.dim() - 1, "torch.linalg.householder_product: Expected tau to have one dimension "
              "less than input, but got tau.ndim equal to ", tau.dim(), " and input.ndim is equal to ", input.dim());
  TORCH_CHECK(tau.scalar_type() == input.scalar_type(), "torch.linalg.householder_product: tau dtype ",
              tau.scalar_type(), " does not match input dtype ", input.scalar_type());
  Shape batch = batch_of(input);
  int64_t flat = numel_of(batch);
  Op op("aten::linalg_householder_product");
  Graph& g = op.g();
  Value packed = flat_batch(op, input);
  Value taus = reshape(g, op.in(tau), {flat, k});
  Value q = apply_q(g, packed, taus, eye_columns(g, input.scalar_type(), flat, m, n), true, false);
  at::Tensor out = op.result(reshape(g, q, shape_of(input)));
  op.run();
  return out;
}

at::Tensor ormqr(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left, bool transpose) {
  check_float_matrix("torch.ormqr", input);
  TORCH_CHECK(other.dim() == input.dim(), "torch.ormqr: other must have the input's number of dimensions");
  int64_t m = input.size(-2), k = tau.size(-1);
  TORCH_CHECK((left ? other.size(-2) : other.size(-1)) == m, "torch.ormqr: other.shape[", left ? -2 : -1,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(k <= m, "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-2]");
  TORCH_CHECK(tau.scalar_type() == input.scalar_type() && other.scalar_type() == input.scalar_type(),
              "torch.ormqr: input, tau and other must have the same dtype");
  Shape batch = batch_of(input);
  int64_t flat = numel_of(batch);
  Op op("aten::ormqr");
  Graph& g = op.g();
  // Reflectors beyond input's columns do not exist: pad the packed matrix to k columns.
  Value packed = flat_batch(op, input);
  if (input.size(-1) < k)
    packed = pad(g, packed, 0, {0, 0, 0}, {0, 0, k - input.size(-1)}, {0, 0, 0});
  Value c = reshape(g, op.in(other), {flat, other.size(-2), other.size(-1)});
  Value out = apply_q(g, packed, reshape(g, op.in(tau), {flat, k}), c, left, transpose);
  at::Tensor result = op.result(reshape(g, out, shape_of(other)));
  op.run();
  return result;
}

// --------------------------------------------------------------------------
// Symmetric eigendecomposition and SVD by parallel cyclic Jacobi: each round
// applies n/2 disjoint plane rotations at once (round-robin pairing), as one
// orthogonal matrix J; sweeps of n - 1 rounds repeat until the off-diagonal
// mass is negligible. eigh rotates A <- J^T A J; the SVD (one-sided, Hestenes)
// rotates the columns of U <- U J until they are orthogonal.

namespace {

constexpr int kMaxSweeps = 30;

// Round r's rotation [B, n, n] (n even) zeroing G[p, q] for every pair (p, q)
// of the round; G is [B, n, n] symmetric.
Value jacobi_rotation(Graph& g, Value G, Value r) {
  const Type t = g.type(G);
  const int64_t batch = t.shape[0], n = t.shape[1], half = n / 2, players = n - 1;
  const c10::ScalarType dt = t.dtype;
  const Shape ps{batch, half};
  auto k = [&](int64_t v) { return constant(g, v, c10::kLong, ps); };
  // Pair 0 is (r, n - 1); pair i > 0 is ((r + i) mod (n - 1), (r - i) mod (n - 1)).
  Value i = iota(g, c10::kLong, ps, 1), rr = splat(g, r, ps);
  Value first = binary(g, "remainder", binary(g, "add", rr, i), k(players));
  Value second = binary(g, "remainder", binary(g, "add", binary(g, "subtract", rr, i), k(players)), k(players));
  Value is_first_pair = compare(g, i, k(0), "EQ", c10::kLong);
  Value p = select(g, is_first_pair, rr, first);
  Value q = select(g, is_first_pair, k(players), second);
  Value base = binary(g, "multiply", iota(g, c10::kLong, ps, 0), k(n * n));
  auto at = [&](Value row, Value col) {
    return binary(g, "add", base, binary(g, "add", binary(g, "multiply", row, k(n)), col));
  };
  Value flat = reshape(g, G, {batch * n * n});
  Value app = gather_flat(g, flat, at(p, p)), aqq = gather_flat(g, flat, at(q, q)), apq = gather_flat(g, flat, at(p, q));
  auto c_ = [&](double v) { return constant(g, v, dt, ps); };
  Value zero = compare(g, apq, c_(0), "EQ", dt);
  Value safe_apq = select(g, zero, c_(1), apq);
  Value tau = binary(g, "divide", binary(g, "subtract", aqq, app), binary(g, "multiply", c_(2), safe_apq));
  Value root = unary(g, "sqrt", binary(g, "add", c_(1), binary(g, "multiply", tau, tau)));
  Value sign = select(g, compare(g, tau, c_(0), "LT", dt), c_(-1), c_(1));
  Value tangent = select(g, zero, c_(0), binary(g, "divide", sign, binary(g, "add", unary(g, "abs", tau), root)));
  Value cosine = unary(g, "rsqrt", binary(g, "add", c_(1), binary(g, "multiply", tangent, tangent)));
  Value sine = binary(g, "multiply", tangent, cosine);
  // J = I with J[p,p] = J[q,q] = c, J[p,q] = s, J[q,p] = -s.
  Value index = concat(g, {at(p, p), at(q, q), at(p, q), at(q, p)}, 1);
  Value updates = concat(g, {cosine, cosine, sine, unary(g, "negate", sine)}, 1);
  Shape s3{batch, n, n};
  Value eye = convert(g, compare(g, iota(g, c10::kLong, s3, 1), iota(g, c10::kLong, s3, 2), "EQ", c10::kLong), dt);
  return reshape(g, scatter_flat(g, reshape(g, eye, {batch * n * n}), index, updates, false), s3);
}

// Sum of squares of the off-diagonal entries and of all entries, over the whole batch.
std::pair<Value, Value> off_and_total(Graph& g, Value G) {
  const Type t = g.type(G);
  Value sq = binary(g, "multiply", G, G);
  Value diag = compare(g, iota(g, c10::kLong, t.shape, 1), iota(g, c10::kLong, t.shape, 2), "EQ", c10::kLong);
  Value off = reduce(g, select(g, diag, constant(g, 0, t.dtype, t.shape), sq), {0, 1, 2}, ReduceKind::Sum);
  return {off, reduce(g, sq, {0, 1, 2}, ReduceKind::Sum)};
}

// Sweeps while the off-diagonal mass of gram(state) exceeds eps^2 of the total.
// `round` applies one round to the state (the rotation comes from gram(state)).
using GramFn = std::function<Value(Graph&, const std::vector<Value>&)>;
using RoundFn = std::function<std::vector<Value>(Graph&, Value J, const std::vector<Value>&)>;
std::vector<Value> jacobi_sweeps(Graph& g, std::vector<Value> state, int64_t n, const GramFn& gram, const RoundFn& round) {
  const c10::ScalarType dt = g.type(state[0]).dtype;
  const double eps = dt == c10::kDouble ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  state.push_back(constant(g, 0, c10::kLong));  // sweeps done
  auto cond = [&](Graph& sg, const std::vector<Value>& v) {
    auto [off, total] = off_and_total(sg, gram(sg, v));
    Value busy = compare(sg, off, binary(sg, "multiply", total, constant(sg, eps * eps, dt)), "GT", dt);
    Value more = compare(sg, v.back(), constant(sg, kMaxSweeps, c10::kLong), "LT", c10::kLong);
    return std::vector<Value>{binary(sg, "and", busy, more)};
  };
  auto sweep = [&](Graph& sg, const std::vector<Value>& v) {
    std::vector<Value> inner(v.begin(), v.end() - 1);
    auto rounds = [&](Graph& rg, Value r, const std::vector<Value>& w) {
      return round(rg, jacobi_rotation(rg, gram(rg, w), r), w);
    };
    std::vector<Value> next = counted_loop(sg, constant(sg, 0, c10::kLong), constant(sg, n - 1, c10::kLong), inner, rounds);
    next.push_back(binary(sg, "add", v.back(), constant(sg, 1, c10::kLong)));
    return next;
  };
  std::vector<Value> out = while_loop(g, state, cond, sweep);
  out.pop_back();
  return out;
}

Value pad_to_even(Graph& g, Value a, bool rows, bool cols) {
  const Shape s = g.type(a).shape;
  return pad(g, a, 0, {0, 0, 0}, {0, rows ? s[1] % 2 : 0, cols ? s[2] % 2 : 0}, {0, 0, 0});
}

Value batched_transpose(Graph& g, Value a) { return transpose(g, a, {0, 2, 1}); }

// Columns of v [B, r, c] reordered: column j becomes column order[j] ([B, c] int64).
Value permute_columns(Graph& g, Value v, Value order) {
  const Shape s = g.type(v).shape;
  const Shape ps{s[0], s[2], s[2]};
  Value perm = convert(g, compare(g, iota(g, c10::kLong, ps, 1), broadcast_in_dim(g, order, ps, {0, 2}), "EQ",
                                  c10::kLong), g.type(v).dtype);
  return batched_matmul(g, v, perm);
}

// Eigenvalues ascending [B, n] and eigenvectors [B, n, n] of a symmetric [B, n, n].
std::pair<Value, Value> eigh_values(Graph& g, Value a) {
  const Type t = g.type(a);
  const int64_t batch = t.shape[0], n = t.shape[1];
  Value padded = pad_to_even(g, a, true, true);
  const int64_t ne = g.type(padded).shape[1];
  Value v = eye_columns(g, t.dtype, batch, ne, ne);
  auto gram = [](Graph&, const std::vector<Value>& w) { return w[0]; };
  auto round = [](Graph& rg, Value J, const std::vector<Value>& w) {
    Value rotated = batched_matmul(rg, batched_transpose(rg, J), batched_matmul(rg, w[0], J));
    return std::vector<Value>{rotated, batched_matmul(rg, w[1], J)};
  };
  auto out = jacobi_sweeps(g, {padded, v}, ne, gram, round);
  Value values = slice(g, diagonal_of(g, out[0]), {0, 0}, {batch, n}, {1, 1});
  Value vectors = slice(g, out[1], {0, 0, 0}, {batch, n, n}, {1, 1, 1});
  auto [sorted, order] = sort_with_indices(g, values, 1, false);
  return {sorted, permute_columns(g, vectors, order)};
}

// The symmetric matrix eigh reads: one triangle of a, mirrored.
Value symmetric_from(Graph& g, Value a, bool lower) {
  const Shape s = g.type(a).shape;
  Value keep = compare(g, iota(g, c10::kLong, s, 1), iota(g, c10::kLong, s, 2), lower ? "GT" : "LT", c10::kLong);
  Value diag = compare(g, iota(g, c10::kLong, s, 1), iota(g, c10::kLong, s, 2), "EQ", c10::kLong);
  Value zero = constant(g, 0, g.type(a).dtype, s);
  Value strict = select(g, keep, a, zero);
  return binary(g, "add", binary(g, "add", strict, batched_transpose(g, strict)), select(g, diag, a, zero));
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> _linalg_eigh(const at::Tensor& A, c10::string_view UPLO, bool compute_v) {
  check_square("linalg.eigh", A);
  TORCH_CHECK(UPLO == "L" || UPLO == "U", "Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  Shape batch = batch_of(A);
  int64_t n = A.size(-1);
  Op op("aten::_linalg_eigh");
  Graph& g = op.g();
  auto [values, vectors] = eigh_values(g, symmetric_from(g, flat_batch(op, A), UPLO == "L"));
  at::Tensor L = op.result(reshape(g, values, with(batch, {n})));
  at::Tensor V = compute_v ? op.result(reshape(g, vectors, shape_of(A))) : at::Tensor();
  op.run();
  if (!compute_v) V = at::empty({0}, A.options());
  return {L, V};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> _linalg_svd(const at::Tensor& A, bool full_matrices, bool compute_uv,
                                                           std::optional<c10::string_view> driver) {
  check_float_matrix("linalg.svd", A);
  Shape batch = batch_of(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), flat = numel_of(batch);
  if (flat == 0 || k == 0) {
    // Nothing to decompose: the results are empty or identities, made on the host.
    auto [U, S, Vh] = at::_linalg_svd(A.cpu(), full_matrices, compute_uv, driver);
    return {U.to(A.device()), S.to(A.device()), Vh.to(A.device())};
  }
  Op op("aten::_linalg_svd");
  Graph& g = op.g();
  auto dt = A.scalar_type();
  // One-sided Jacobi on the columns of the taller orientation: A = U S V^T, or A^T's.
  const bool tall = m >= n;
  Value a = flat_batch(op, A);
  if (!tall) a = batched_transpose(g, a);
  const int64_t rows = tall ? m : n, cols = k;
  Value u = pad_to_even(g, a, false, true);
  const int64_t ce = g.type(u).shape[2];
  Value v = eye_columns(g, dt, flat, ce, ce);
  auto gram = [](Graph& rg, const std::vector<Value>& w) {
    return dot_general(rg, w[0], w[0], {0}, {0}, {1}, {1}, rg.type(w[0]).dtype);
  };
  auto round = [](Graph& rg, Value J, const std::vector<Value>& w) {
    return std::vector<Value>{batched_matmul(rg, w[0], J), batched_matmul(rg, w[1], J)};
  };
  auto out = jacobi_sweeps(g, {u, v}, ce, gram, round);
  Value uc = slice(g, out[0], {0, 0, 0}, {flat, rows, cols}, {1, 1, 1});
  Value vc = slice(g, out[1], {0, 0, 0}, {flat, cols, cols}, {1, 1, 1});
  Value norms = unary(g, "sqrt", reduce(g, binary(g, "multiply", uc, uc), {1}, ReduceKind::Sum));  // [B, k]
  auto [sorted, order] = sort_with_indices(g, norms, 1, true);
  at::Tensor S = op.result(reshape(g, sorted, with(batch, {k})));
  at::Tensor U, Vh;
  if (compute_uv) {
    Value zero = constant(g, 0, dt, {flat, cols});
    Value safe = select(g, compare(g, norms, zero, "EQ", dt), constant(g, 1, dt, {flat, cols}), norms);
    Value left = permute_columns(g, binary(g, "divide", uc, broadcast_in_dim(g, safe, {flat, rows, cols}, {0, 2})), order);
    Value right = permute_columns(g, vc, order);  // [B, k, k]: columns are right singular vectors
    if (full_matrices && rows > cols) {
      // Complete the left vectors to an orthonormal basis: the trailing columns of
      // the complete QR of [left | I] are orthogonal to left's span.
      Value basis = concat(g, {left, eye_columns(g, dt, flat, rows, rows - cols)}, 2);
      auto [packed, taus] = geqrf_values(g, basis);
      Value q = apply_q(g, packed, taus, eye_columns(g, dt, flat, rows, rows), true, false);
      left = concat(g, {left, slice(g, q, {0, 0, cols}, {flat, rows, rows}, {1, 1, 1})}, 2);
    }
    // A = left S right^T when tall; A^T = left S right^T otherwise.
    Value u_out = tall ? left : right, v_out = tall ? right : left;
    U = op.result(reshape(g, u_out, with(batch, {m, g.type(u_out).shape[2]})));
    Vh = op.result(reshape(g, batched_transpose(g, v_out), with(batch, {g.type(v_out).shape[2], n})));
  }
  op.run();
  if (!compute_uv) {
    U = at::empty({0}, A.options());
    Vh = at::empty({0}, A.options());
  }
  return {U, S, Vh};
}

// exp(A) by scaling and squaring: A / 2^s has 1-norm at most 1, where a
// Taylor polynomial of degree 18 (12 in float32) is accurate to rounding; then
// s squarings, per matrix of the batch.
at::Tensor linalg_matrix_exp(const at::Tensor& self) {
  TORCH_CHECK(self.dim() >= 2 && self.size(-1) == self.size(-2), "linalg.matrix_exp: A must be batches of square "
              "matrices, but they are ", self.size(-2), " by ", self.size(-1), " matrices");
  check_not_complex("linalg.matrix_exp", self);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "linalg.matrix_exp: Expected a floating point tensor as input. "
              "Got ", self.scalar_type());
  const int64_t n = self.size(-1);
  if (self.numel() == 0) return at::empty_like(self, at::MemoryFormat::Contiguous);
  Shape batch = batch_of(self);
  const int64_t flat = numel_of(batch);
  Op op("aten::linalg_matrix_exp");
  Graph& g = op.g();
  // Half types compute in float32.
  auto dt = accumulate_type(self.scalar_type());
  Value a = convert(g, flat_batch(op, self), dt);
  const Shape s3{flat, n, n};
  Value norm = reduce(g, reduce(g, unary(g, "abs", a), {1}, ReduceKind::Sum), {1}, ReduceKind::Max);  // [B]
  Value log2 = binary(g, "divide", unary(g, "log", norm), constant(g, M_LN2, dt, {flat}));
  Value squarings = binary(g, "maximum", unary(g, "ceil", log2), constant(g, 0, dt, {flat}));
  squarings = select(g, compare(g, squarings, squarings, "EQ", dt), squarings, constant(g, 0, dt, {flat}));  // NaN
  squarings = binary(g, "minimum", squarings, constant(g, 1000, dt, {flat}));
  Value scale = binary(g, "power", constant(g, 2, dt, {flat}), unary(g, "negate", squarings));
  Value scaled = binary(g, "multiply", a, broadcast_in_dim(g, scale, s3, {0}));
  Value eye = eye_columns(g, dt, flat, n, n);
  Value p = eye;
  for (int k = dt == c10::kDouble ? 18 : 12; k >= 1; --k)
    p = binary(g, "add", eye, binary(g, "divide", batched_matmul(g, scaled, p), constant(g, k, dt, s3)));
  Value count = convert(g, squarings, c10::kLong);
  Value most = reduce(g, count, {0}, ReduceKind::Max);
  auto body = [&](Graph& sg, Value i, const std::vector<Value>& v) {
    Value more = compare(sg, splat(sg, i, {flat}), v[1], "LT", c10::kLong);
    Value squared = batched_matmul(sg, v[0], v[0]);
    return std::vector<Value>{select(sg, broadcast_in_dim(sg, more, s3, {0}), squared, v[0]), v[1]};
  };
  p = counted_loop(g, constant(g, 0, c10::kLong), most, {p, count}, body)[0];
  at::Tensor out = op.result(convert(g, reshape(g, p, shape_of(self)), self.scalar_type()));
  op.run();
  return out;
}

// --------------------------------------------------------------------------
// Discrete Fourier transforms on stablehlo.fft, which transforms trailing
// dimensions: each transformed dimension is moved last and back.

namespace {
const char* kFftTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
enum FftType { kFft, kIfft, kRfft, kIrfft };

// One stablehlo.fft along dimension `dim` of v, whose result has `length`
// elements there (the onesided length n/2+1 for kRfft; n for kIrfft, which
// reads n/2+1 elements).
Value fft_along(Graph& g, Value v, int64_t dim, FftType type, int64_t length) {
  auto t = g.type(v);
  int64_t rank = t.shape.size();
  std::vector<int64_t> perm, inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  for (int64_t d = 0; d < rank; ++d) inverse[perm[d]] = d;
  Value moved = transpose(g, v, perm);
  Shape shape = g.type(moved).shape;
  int64_t n = type == kIrfft ? length : shape.back();
  if (type == kIrfft) moved = slice_dim(g, moved, rank - 1, 0, length / 2 + 1);
  shape.back() = type == kRfft ? n / 2 + 1 : n;
  auto dtype = type == kRfft ? c10::toComplexType(t.dtype) : type == kIrfft ? c10::toRealValueType(t.dtype) : t.dtype;
  Value out = g.add("stablehlo.fft", {moved}, Type{dtype, shape},
                    "{fft_length = " + i64_array({n}) + ", fft_type = #stablehlo<fft_type " + kFftTypes[type] + ">}");
  return transpose(g, out, inverse);
}

// PyTorch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n. XLA's inverse
// transforms already divide by n, so they pass `inverse` to be multiplied back.
Value normalize(Graph& g, Value v, int64_t normalization, int64_t n, bool inverse) {
  double scale = normalization == 1 ? 1.0 / std::sqrt(static_cast<double>(n)) : normalization == 2 ? 1.0 / n : 1.0;
  if (inverse) scale *= n;
  if (scale == 1.0) return v;
  return binary(g, "multiply", v, constant_like(g, v, scale));
}

std::vector<int64_t> fft_dims(const at::Tensor& self, at::IntArrayRef dim) {
  std::vector<int64_t> dims;
  for (int64_t d : dim) dims.push_back(at::maybe_wrap_dim(d, self.dim()));
  return dims;
}
}  // namespace

at::Tensor _fft_c2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool forward) {
  TORCH_CHECK(self.is_complex(), "_fft_c2c expects a complex input tensor, but got ", self.scalar_type());
  if (self.numel() == 0) return at::empty_like(self, at::MemoryFormat::Contiguous);
  Op op("aten::_fft_c2c");
  Graph& g = op.g();
  Value v = op.in(self);
  int64_t n = 1;
  for (int64_t d : fft_dims(self, dim)) {
    v = fft_along(g, v, d, forward ? kFft : kIfft, self.size(d));
    n *= self.size(d);
  }
  at::Tensor out = op.result(normalize(g, v, normalization, n, !forward));
  op.run();
  return out;
}

at::Tensor _fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "_fft_r2c expects a floating point input tensor, but got ",
              self.scalar_type());
  auto dims = fft_dims(self, dim);
  Op op("aten::_fft_r2c");
  Graph& g = op.g();
  Value v = op.in(self);
  int64_t n = 1;
  for (int64_t d : dims) n *= self.size(d);
  if (onesided) {
    // The halved dimension is the last one listed; the rest transform in full.
    v = fft_along(g, v, dims.back(), kRfft, 0);
    dims.pop_back();
  } else {
    v = convert(g, v, c10::toComplexType(self.scalar_type()));
  }
  for (int64_t d : dims) v = fft_along(g, v, d, kFft, 0);
  at::Tensor out = op.result(normalize(g, v, normalization, n, false));
  op.run();
  return out;
}

at::Tensor _fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  TORCH_CHECK(self.is_complex(), "_fft_c2r expects a complex input tensor, but got ", self.scalar_type());
  TORCH_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
  auto dims = fft_dims(self, dim);
  Op op("aten::_fft_c2r");
  Graph& g = op.g();
  Value v = op.in(self);
  int64_t last = dims.back(), n = last_dim_size;
  dims.pop_back();
  for (int64_t d : dims) {
    v = fft_along(g, v, d, kIfft, 0);
    n *= self.size(d);
  }
  v = fft_along(g, v, last, kIrfft, last_dim_size);
  at::Tensor out = op.result(normalize(g, v, normalization, n, true));
  op.run();
  return out;
}

}  // namespace torch_tpu::aten
