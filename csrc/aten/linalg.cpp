// Linear algebra and FFT kernels (Cholesky, triangular solves, LU and what is
// built on it, QR, eigh, SVD, matrix_exp, FFTs): checks, shapes and outputs;
// the algorithms are in lowering/linalg.cpp and lowering/fft.cpp. Then the
// matrix products (mm, bmm, addmm, dot, addmv, baddbmm, addbmm).
#include <ATen/native/Resize.h>
#include <ATen/ops/addr_native.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/fft.h"
#include "lowering/linalg.h"

namespace torch_tpu::aten {

using namespace lower;

// --------------------------------------------------------------------------
// Linear algebra on XLA's own decompositions: Cholesky and triangular solves
// (batched over leading dimensions).

namespace {

// PyTorch's checkFloatingOrComplex, then our real-only lowerings' check.
void check_float_or_complex(const char* name, const at::Tensor& a) {
  c10::ScalarType t = a.scalar_type();
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t), name,
              ": Expected a floating point or complex tensor as input. Got ", t);
  TORCH_CHECK(t == c10::kFloat || t == c10::kDouble || t == c10::kComplexFloat || t == c10::kComplexDouble, name,
              ": Low precision dtypes not supported. Got ", t);
  check_not_complex(name, a);
}

void check_square(const char* name, const at::Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, name, ": The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(a.size(-1) == a.size(-2), name, ": A must be batches of square matrices, but they are ", a.size(-2),
              " by ", a.size(-1), " matrices");
  check_float_or_complex(name, a);
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
  Value factor = cholesky_factor(g, op.in(self), !upper);
  at::Tensor l = op.result(factor);
  at::Tensor info_t = op.result(cholesky_info(g, op.in(self), factor, !upper));
  op.run();
  if (check_errors) at::_linalg_check_errors(info_t, "linalg.cholesky_ex", self.dim() == 2);
  return {l, info_t};
}

at::Tensor cholesky(const at::Tensor& self, bool upper) {
  auto [factor, info] = torch_tpu::aten::linalg_cholesky_ex(self, upper, /*check_errors=*/false);
  at::_linalg_check_errors(info, "cholesky", self.dim() == 2);
  return factor;
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

void check_float_matrix(const char* name, const at::Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, name, ": The input tensor A must have at least 2 dimensions.");
  check_float_or_complex(name, a);
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
// Like the CPU kernel, a contiguous A is factored as A^T (the same
// determinant): PyTorch's backward formulas read the returned LU that way.
LuValues determinant_factorization(Op& op, const at::Tensor& A) {
  return lu_factor_values(op.g(), flat_batch(op, A.is_contiguous() ? A.mT() : A), true);
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
  // Column-major, as LAPACK's geqrf leaves it on CPU and CUDA (ormqr's callers rely on it).
  return {a.mT().contiguous().mT(), tau};
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

// --------------------------------------------------------------------------
// Matrix products: mm, bmm, addmm, dot, vdot, addmv, baddbmm, addbmm.

namespace {

void check_matmul_dtypes(const char* name, const Dest& d, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              a.scalar_type(), " != ", b.scalar_type());
  // As the CPU and CUDA kernels: out= takes only the product's dtype.
  TORCH_CHECK(d.form() != Dest::Out || d.target().scalar_type() == a.scalar_type(), "Expected out tensor to have dtype ",
              a.dtype(), ", but got ", d.target().dtype(), " instead");
}
}  // namespace

at::Tensor mm(Dest d, const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2, "self must be a matrix");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x",
              self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_matmul_dtypes("mm", d, self, mat2);
  Op op("aten::mm");
  Value r = dot_general(op.g(), op.in(self), op.in(mat2), {}, {}, {1}, {0}, self.scalar_type());
  at::Tensor out = op.result(r);
  op.run();
  return d.deliver(out);
}

at::Tensor bmm(Dest d, const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(mat2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1),
              "Expected size for first two dimensions of batch2 tensor to be: [", self.size(0), ", ", self.size(2),
              "] but got: [", mat2.size(0), ", ", mat2.size(1), "].");
  check_matmul_dtypes("bmm", d, self, mat2);
  Op op("aten::bmm");
  Value r = dot_general(op.g(), op.in(self), op.in(mat2), {0}, {0}, {2}, {1}, self.scalar_type());
  at::Tensor out = op.result(r);
  op.run();
  return d.deliver(out);
}

at::Tensor addmm(Dest d, const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  TORCH_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "mat1 and mat2 must be matrices");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
              mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_matmul_dtypes("addmm", d, mat1, mat2);
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", mat2.scalar_type());
  Op op("aten::addmm");
  Graph& g = op.g();
  // Half types: the product, scaling and bias add in float32, rounded once at the
  // end, as CPU and CUDA do (rounding the product before the bias add doubles the error).
  auto dt = mat1.scalar_type(), acc = accumulate_type(dt);
  Value prod = dot_general(g, op.in(mat1), op.in(mat2), {}, {}, {1}, {0}, acc);
  Shape s = g.type(prod).shape;
  if (!alpha.equal(1)) prod = binary(g, "multiply", prod, broadcast_to(g, op.scalar(alpha, acc), s));
  if (!beta.equal(0)) {
    Value bias = broadcast_to(g, convert(g, op.in(self), acc), s);
    if (!beta.equal(1)) bias = binary(g, "multiply", bias, broadcast_to(g, op.scalar(beta, acc), s));
    prod = binary(g, "add", bias, prod);
  }
  at::Tensor out = op.result(convert(g, prod, dt));
  op.run();
  return d.deliver(out);
}

namespace {

// beta * self + alpha * prod, with PyTorch's rule that beta == 0 ignores self (NaN included).
Value scale_and_add(Op& op, Value prod, const at::Tensor& self, const at::Scalar& beta, const at::Scalar& alpha) {
  Graph& g = op.g();
  auto dt = g.type(prod).dtype;
  Shape s = g.type(prod).shape;
  if (!alpha.equal(1)) prod = binary(g, "multiply", prod, broadcast_to(g, op.scalar(alpha, dt), s));
  if (beta.equal(0)) return prod;
  Value bias = broadcast_to(g, convert(g, op.in(self), dt), s);
  if (!beta.equal(1)) bias = binary(g, "multiply", bias, broadcast_to(g, op.scalar(beta, dt), s));
  return binary(g, "add", bias, prod);
}

at::Tensor dot_impl(const char* name, const at::Tensor& self, const at::Tensor& other, bool conjugate_self) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
              "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              self.scalar_type(), " and ", other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(),
              "] and src [", other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
              other.numel(), " elements respectively");
  Op op(name);
  Graph& g = op.g();
  auto dt = self.scalar_type(), acc = accumulate_type(dt);
  Value a = op.in(self);
  if (conjugate_self) a = conj(g, a);
  Value r = dot_general(g, convert(g, a, acc), convert(g, op.in(other), acc), {}, {}, {0}, {0}, acc);
  at::Tensor out = op.result(convert(g, r, dt));
  op.run();
  return out;
}
}  // namespace

at::Tensor dot(const at::Tensor& self, const at::Tensor& other) { return dot_impl("aten::dot", self, other, false); }
// The conjugate of self (for complex vectors) dotted with other.
at::Tensor vdot(const at::Tensor& self, const at::Tensor& other) { return dot_impl("aten::vdot", self, other, true); }

// int4 weight-only quantized matmul, in CUDA's interface (what torchao and
// gpt-fast call): a packed int32 weight of CUDA's shape, whose bytes are the
// [n, k/2] uint8 weight as given (two 4-bit values a byte, the first in the
// high half), and per-group scales and zeros [k/group, n, 2]: w = (q - 8) * scale + zero.
at::Tensor convert_weight_to_int4pack(const at::Tensor& weight, int64_t inner_k_tiles) {
  TORCH_CHECK(weight.dim() == 2, "_convert_weight_to_int4pack: expected a 2-D weight, got ", weight.dim(), "-D");
  TORCH_CHECK(weight.scalar_type() == c10::kByte, "_convert_weight_to_int4pack: expected a uint8 weight, got ",
              weight.scalar_type());
  TORCH_CHECK(inner_k_tiles == 2 || inner_k_tiles == 4 || inner_k_tiles == 8,
              "_convert_weight_to_int4pack: innerKTiles must be 2, 4, or 8");
  const int64_t n = weight.size(0), k = weight.size(1) * 2;
  TORCH_CHECK(n % 8 == 0, "_convert_weight_to_int4pack: the weight's first dimension must be a multiple of 8, got ", n);
  TORCH_CHECK(k % (inner_k_tiles * 16) == 0, "_convert_weight_to_int4pack: k (", k,
              ") must be a multiple of innerKTiles * 16 = ", inner_k_tiles * 16);
  return weight.contiguous().view(c10::kInt).reshape({n / 8, k / (inner_k_tiles * 16), 32, inner_k_tiles / 2});
}

at::Tensor weight_int4pack_mm(const at::Tensor& a, const at::Tensor& packed, int64_t group_size,
                              const at::Tensor& scales_and_zeros) {
  TORCH_CHECK(a.dim() == 2 && c10::isFloatingType(a.scalar_type()), "_weight_int4pack_mm: expected a 2-D floating "
              "point A, got ", a.dim(), "-D ", a.scalar_type());
  TORCH_CHECK(packed.dim() == 4 && packed.scalar_type() == c10::kInt,
              "_weight_int4pack_mm: expected B packed by _convert_weight_to_int4pack (4-D int32)");
  const int64_t n = packed.size(0) * 8, k = packed.size(1) * packed.size(3) * 32;
  TORCH_CHECK(a.size(1) == k, "_weight_int4pack_mm: A's k (", a.size(1), ") does not match the packed weight's (", k,
              ")");
  TORCH_CHECK(group_size == 32 || group_size == 64 || group_size == 128 || group_size == 256,
              "_weight_int4pack_mm: q_group_size must be 32, 64, 128 or 256, got ", group_size);
  TORCH_CHECK(scales_and_zeros.dim() == 3 && scales_and_zeros.size(0) == k / group_size &&
                  scales_and_zeros.size(1) == n && scales_and_zeros.size(2) == 2,
              "_weight_int4pack_mm: expected qScaleAndZeros of shape [", k / group_size, ", ", n, ", 2], got ",
              scales_and_zeros.sizes());
  at::Tensor bytes = packed.reshape({-1}).view(c10::kByte).reshape({n, k / 2}).to(c10::kInt);
  at::Tensor q = at::stack({at::bitwise_right_shift(bytes, 4), at::bitwise_and(bytes, 15)}, -1).reshape({n, k});
  at::Tensor per_group = scales_and_zeros.to(c10::kFloat).permute({1, 0, 2}).repeat_interleave(group_size, 1);
  at::Tensor w = (q.to(c10::kFloat) - 8) * per_group.select(2, 0) + per_group.select(2, 1);
  return at::mm(a.to(c10::kFloat), w.t()).to(a.scalar_type());
}

// PyTorch's composite outer product, with the checks of its device kernels on
// the scalars (the composite leaves them out).
at::Tensor addr(Dest d, const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const at::Scalar& beta,
                const at::Scalar& alpha) {
  c10::ScalarType result = at::promote_types(self.scalar_type(), at::promote_types(vec1.scalar_type(), vec2.scalar_type()));
  if (!d.is_new()) {
    TORCH_CHECK(at::canCast(result, d.target().scalar_type()), "result type ", result,
                " can't be cast to the desired output type ", d.target().scalar_type());
    result = d.target().scalar_type();
  }
  for (auto [scalar, name] : {std::pair{&beta, "beta"}, std::pair{&alpha, "alpha"}}) {
    TORCH_CHECK(!scalar->isBoolean() || result == c10::kBool, "Boolean ", name, " only supported for Boolean results.");
    TORCH_CHECK(c10::isFloatingType(result) || c10::isComplexType(result) || scalar->isIntegral(true),
                "For integral input tensors, argument ", name, " must not be a floating point number.");
  }
  return d.deliver(at::native::math_addr(self, vec1, vec2, beta, alpha));
}

at::Tensor addmv(Dest d, const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ", self.dim(), ", ",
              mat.dim(), ", ", vec.dim());
  TORCH_CHECK(mat.size(1) == vec.size(0), "size mismatch, got input (", self.size(0), "), mat (", mat.size(0), "x",
              mat.size(1), "), vec (", vec.size(0), ")");
  check_matmul_dtypes("addmv", d, mat, vec);
  TORCH_CHECK(self.scalar_type() == mat.scalar_type(), "addmv input tensors must have the same dtype, but got ",
              self.scalar_type(), ", ", mat.scalar_type(), ", and ", vec.scalar_type());
  Op op("aten::addmv");
  Graph& g = op.g();
  Value prod = dot_general(g, op.in(mat), op.in(vec), {}, {}, {1}, {0}, mat.scalar_type());
  at::Tensor out = op.result(scale_and_add(op, prod, self, beta, alpha));
  op.run();
  return d.deliver(out);
}

at::Tensor baddbmm(Dest d, const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  TORCH_CHECK(b1.dim() == 3 && b2.dim() == 3, "batch1 and batch2 must be 3D tensors");
  TORCH_CHECK(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1), "Expected size for first two dimensions of batch2 "
              "tensor to be: [", b1.size(0), ", ", b1.size(2), "] but got: [", b2.size(0), ", ", b2.size(1), "].");
  check_matmul_dtypes("baddbmm", d, b1, b2);
  TORCH_CHECK(self.scalar_type() == b1.scalar_type(), "Input dtypes must be the same, got: input ",
              c10::scalarTypeToTypeMeta(self.scalar_type()), ", batch1: ", c10::scalarTypeToTypeMeta(b1.scalar_type()),
              ", batch2: ", c10::scalarTypeToTypeMeta(b2.scalar_type()));
  Op op("aten::baddbmm");
  Value prod = dot_general(op.g(), op.in(b1), op.in(b2), {0}, {0}, {2}, {1}, b1.scalar_type());
  at::Tensor out = op.result(scale_and_add(op, prod, self, beta, alpha));
  op.run();
  return d.deliver(out);
}

at::Tensor addbmm(Dest d, const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const at::Scalar& beta,
                  const at::Scalar& alpha) {
  TORCH_CHECK(b1.dim() == 3 && b2.dim() == 3, "batch1 and batch2 must be 3D tensors");
  TORCH_CHECK(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1), "incompatible batch sizes for addbmm");
  check_matmul_dtypes("addbmm", d, b1, b2);
  TORCH_CHECK(self.scalar_type() == b2.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", b2.scalar_type());
  Op op("aten::addbmm");
  // The batch is contracted together with the inner dimension.
  Value prod = dot_general(op.g(), op.in(b1), op.in(b2), {}, {}, {0, 2}, {0, 1}, b1.scalar_type());
  at::Tensor out = op.result(scale_and_add(op, prod, self, beta, alpha));
  op.run();
  return d.deliver(out);
}

}  // namespace torch_tpu::aten
