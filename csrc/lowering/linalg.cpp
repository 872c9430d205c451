// Linear algebra as graphs: triangular solves, LU with partial pivoting (a device
#include "lowering/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace torch_tpu::lower {

std::string bool_attr(bool b) { return b ? "true" : "false"; }

Value triangular_solve_values(Graph& g, Value a, Value b, bool left, bool lower, bool unit_diagonal, bool transpose_a) {
  return g.add("stablehlo.triangular_solve", {a, b}, g.type(b),
               "{left_side = " + bool_attr(left) + ", lower = " + bool_attr(lower) + ", transpose_a = #stablehlo<transpose " +
                   (transpose_a ? "TRANSPOSE" : "NO_TRANSPOSE") + ">, unit_diagonal = " + bool_attr(unit_diagonal) + "}");
}

Value keep_triangle(Graph& g, Value v, bool lower) {
  auto t = g.type(v);
  int64_t r = t.shape.size();
  Value diff = binary(g, "subtract", iota(g, c10::kLong, t.shape, r - 1), iota(g, c10::kLong, t.shape, r - 2));
  Value keep = compare(g, diff, constant(g, 0, c10::kLong, t.shape), lower ? "LE" : "GE", c10::kLong);
  return select(g, keep, v, constant(g, 0, t.dtype, t.shape));
}

Value cholesky_factor(Graph& g, Value a, bool lower) {
  return keep_triangle(g, g.add("stablehlo.cholesky", {a}, g.type(a), "{lower = " + bool_attr(lower) + "}"), lower);
}

Value splat(Graph& g, Value j, const Shape& shape) { return broadcast_in_dim(g, j, shape, {}); }

Value cholesky_info(Graph& g, Value a, Value factor, bool lower) {
  const Type t = g.type(a);
  const Shape batch(t.shape.begin(), t.shape.end() - 2);
  const int64_t n = t.shape.back(), b = numel_of(batch);
  const c10::ScalarType dt = t.dtype;
  const Shape s3{b, n, n}, rows{b, n};
  a = reshape(g, a, s3);
  Value flat_factor = reshape(g, factor, s3);
  Value failed = reduce(g, compare(g, flat_factor, flat_factor, "NE", dt), {1, 2}, ReduceKind::Or);
  // The symmetric matrix the factorization reads: the used triangle, mirrored.
  Value used = compare(g, iota(g, c10::kLong, s3, 2), iota(g, c10::kLong, s3, 1), lower ? "LE" : "GE", c10::kLong);
  Value sym = select(g, used, a, transpose(g, a, {0, 2, 1}));
  Value zero_order = constant(g, 0, c10::kInt, {b});
  auto unresolved = [&](Graph& sg, Value order, Value failed_in) {
    return binary(sg, "and", failed_in, compare(sg, order, constant(sg, 0, c10::kInt, {b}), "EQ", c10::kInt));
  };
  // Gaussian elimination without pivoting: the first pivot that is not
  // positive is where the factorization fails. It runs only while a matrix
  // that failed has no order yet, so not at all when every one succeeded.
  auto cond = [&](Graph& sg, const std::vector<Value>& v) {
    Value more = compare(sg, v[0], constant(sg, n, c10::kLong), "LT", c10::kLong);
    Value open = reduce(sg, unresolved(sg, v[2], v[3]), {0}, ReduceKind::Or);
    return std::vector<Value>{binary(sg, "and", more, open)};
  };
  auto body = [&](Graph& sg, const std::vector<Value>& v) {
    Value j = v[0], m = v[1], order = v[2];
    Value col_is_j = compare(sg, iota(sg, c10::kLong, s3, 2), splat(sg, j, s3), "EQ", c10::kLong);
    Value column = reduce(sg, select(sg, col_is_j, m, constant(sg, 0, dt, s3)), {2}, ReduceKind::Sum);
    Value row_index = iota(sg, c10::kLong, rows, 1);
    Value pivot = reduce(sg, select(sg, compare(sg, row_index, splat(sg, j, rows), "EQ", c10::kLong), column,
                                    constant(sg, 0, dt, rows)), {1}, ReduceKind::Sum);
    Value not_positive = unary(sg, "not", compare(sg, pivot, constant(sg, 0, dt, {b}), "GT", dt));
    Value j_plus_one = convert(sg, binary(sg, "add", splat(sg, j, {b}), constant(sg, 1, c10::kLong, {b})), c10::kInt);
    Value new_order = select(sg, binary(sg, "and", unresolved(sg, order, v[3]), not_positive), j_plus_one, order);
    Value below = select(sg, compare(sg, row_index, splat(sg, j, rows), "GT", c10::kLong), column,
                         constant(sg, 0, dt, rows));
    Value update = binary(sg, "divide",
                          binary(sg, "multiply", broadcast_in_dim(sg, below, s3, {0, 1}),
                                 broadcast_in_dim(sg, below, s3, {0, 2})),
                          broadcast_in_dim(sg, pivot, s3, {0}));
    return std::vector<Value>{binary(sg, "add", j, constant(sg, 1, c10::kLong)), binary(sg, "subtract", m, update),
                              new_order, v[3]};
  };
  auto out = while_loop(g, {constant(g, 0, c10::kLong), sym, zero_order, failed}, cond, body);
  // Rounding may let the elimination pass a matrix XLA could not factor: the last minor then.
  Value info = select(g, unresolved(g, out[2], failed), constant(g, n, c10::kInt, {b}), out[2]);
  return reshape(g, info, batch);
}

namespace {

// Row `which` (bool [B, m], one true per batch) of a [B, m, n] value: [B, n].
Value pick_row(Graph& g, Value a, Value which) {
  auto t = g.type(a);
  Value mask = broadcast_in_dim(g, which, t.shape, {0, 1});
  return reduce(g, select(g, mask, a, constant(g, 0, t.dtype, t.shape)), {1}, ReduceKind::Sum);
}

}  // namespace

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

namespace {

// The diagonal [B, k] of a [B, m, n] value.
Value diagonal_of(Graph& g, Value a) {
  auto t = g.type(a);
  int64_t k = std::min(t.shape[1], t.shape[2]);
  Value sq = slice(g, a, {0, 0, 0}, {t.shape[0], k, k}, {1, 1, 1});
  Shape s3{t.shape[0], k, k};
  Value on = compare(g, iota(g, c10::kLong, s3, 1), iota(g, c10::kLong, s3, 2), "EQ", c10::kLong);
  return reduce(g, select(g, on, sq, constant(g, 0, t.dtype, s3)), {2}, ReduceKind::Sum);
}

}  // namespace

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

}  // namespace

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

Value eye_columns(Graph& g, c10::ScalarType dt, int64_t batch, int64_t m, int64_t cols) {
  Shape s{batch, m, cols};
  return convert(g, compare(g, iota(g, c10::kLong, s, 1), iota(g, c10::kLong, s, 2), "EQ", c10::kLong), dt);
}

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

}  // namespace

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

Value permute_columns(Graph& g, Value v, Value order) {
  const Shape s = g.type(v).shape;
  const Shape ps{s[0], s[2], s[2]};
  Value perm = convert(g, compare(g, iota(g, c10::kLong, ps, 1), broadcast_in_dim(g, order, ps, {0, 2}), "EQ",
                                  c10::kLong), g.type(v).dtype);
  return batched_matmul(g, v, perm);
}

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

Value symmetric_from(Graph& g, Value a, bool lower) {
  const Shape s = g.type(a).shape;
  Value keep = compare(g, iota(g, c10::kLong, s, 1), iota(g, c10::kLong, s, 2), lower ? "GT" : "LT", c10::kLong);
  Value diag = compare(g, iota(g, c10::kLong, s, 1), iota(g, c10::kLong, s, 2), "EQ", c10::kLong);
  Value zero = constant(g, 0, g.type(a).dtype, s);
  Value strict = select(g, keep, a, zero);
  return binary(g, "add", binary(g, "add", strict, batched_transpose(g, strict)), select(g, diag, a, zero));
}

}  // namespace torch_tpu::lower
