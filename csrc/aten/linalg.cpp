// Linear algebra: Cholesky and triangular solves on XLA's own ops; LU with
// partial pivoting (and what is built on it: solve, inverse, determinants) as
// a device loop over columns, the way LAPACK's getrf2 proceeds.
#include <ATen/native/Resize.h>

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
  if (check_errors) {
    int64_t bad = info_t.max().item<int64_t>();
    TORCH_CHECK_LINALG(bad == 0, "linalg.cholesky: The factorization could not be completed because the input is not "
                       "positive-definite (the leading minor of order ", bad, " is not positive-definite).");
  }
  return {l, info_t};
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

}  // namespace torch_tpu::aten
