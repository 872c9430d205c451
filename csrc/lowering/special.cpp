// Special functions: see special.h. The approximations follow the Cephes
// Mathematics Library (Stephen L. Moshier), whose coefficient tables PyTorch's
// CPU kernels use too, so results agree to rounding.
#include "lowering/special.h"

#include <cmath>
#include <initializer_list>

namespace torch_tpu::lower::special {

namespace {

// A value with its graph, so formulas read like the math.
struct X {
  Graph* g;
  Value v;
};
X wrap(Graph& g, Value v) { return {&g, v}; }
X lit(const X& like, const c10::Scalar& c) { return {like.g, constant_like(*like.g, like.v, c)}; }
X bin(const char* op, X a, X b) { return {a.g, binary(*a.g, op, a.v, b.v)}; }
X operator+(X a, X b) { return bin("add", a, b); }
X operator-(X a, X b) { return bin("subtract", a, b); }
X operator*(X a, X b) { return bin("multiply", a, b); }
X operator/(X a, X b) { return bin("divide", a, b); }
X operator+(X a, double b) { return a + lit(a, b); }
X operator-(X a, double b) { return a - lit(a, b); }
X operator*(X a, double b) { return a * lit(a, b); }
X operator/(X a, double b) { return a / lit(a, b); }
X operator+(double a, X b) { return lit(b, a) + b; }
X operator-(double a, X b) { return lit(b, a) - b; }
X operator*(double a, X b) { return lit(b, a) * b; }
X operator/(double a, X b) { return lit(b, a) / b; }
X operator-(X a) { return {a.g, unary(*a.g, "negate", a.v)}; }
X fn(const char* op, X a) { return {a.g, unary(*a.g, op, a.v)}; }
X exp(X a) { return fn("exponential", a); }
X log(X a) { return fn("log", a); }
X sqrt(X a) { return fn("sqrt", a); }
X sin(X a) { return fn("sine", a); }
X cos(X a) { return fn("cosine", a); }
X abs(X a) { return fn("abs", a); }
X floor(X a) { return fn("floor", a); }
X chlo_fn(const char* op, X a) { return {a.g, a.g->add(std::string("chlo.") + op, {a.v}, a.g->type(a.v))}; }
X cmp(X a, X b, const char* dir) { return {a.g, compare(*a.g, a.v, b.v, dir, a.g->type(a.v).dtype)}; }
X cmp(X a, double b, const char* dir) { return cmp(a, lit(a, b), dir); }
X operator&&(X a, X b) { return bin("and", a, b); }
X operator||(X a, X b) { return bin("or", a, b); }
X operator!(X a) { return fn("not", a); }
X where(X cond, X a, X b) { return {a.g, select(*a.g, cond.v, a.v, b.v)}; }
X where(X cond, double a, X b) { return where(cond, lit(b, a), b); }
X where(X cond, X a, double b) { return where(cond, a, lit(a, b)); }
X is_nan(X a) { return cmp(a, a, "NE"); }

// Horner's rule: coef[0] is the highest power's coefficient.
X polevl(X x, std::initializer_list<double> coef) {
  X r = lit(x, 0);
  bool first = true;
  for (double c : coef) {
    r = first ? lit(x, c) : r * x + c;
    first = false;
  }
  return r;
}
// The same with an implicit leading coefficient of 1.
X p1evl(X x, std::initializer_list<double> coef) {
  X r = x;
  bool first = true;
  for (double c : coef) {
    r = first ? x + c : r * x + c;
    first = false;
  }
  return r;
}
// Clenshaw's recurrence for a Chebyshev series (Cephes chbevl).
X chbevl(X x, std::initializer_list<double> coef) {
  X b0 = lit(x, 0), b1 = lit(x, 0), b2 = lit(x, 0);
  bool first = true;
  for (double c : coef) {
    if (first) {
      b0 = lit(x, c);
      first = false;
      continue;
    }
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + c;
  }
  return (b0 - b2) * 0.5;
}

}  // namespace

Value polynomial(Graph& g, Polynomial kind, Value xv, Value nv) {
  const Type t = g.type(xv);
  const bool shifted = kind == Polynomial::ShiftedChebyshevT || kind == Polynomial::ShiftedChebyshevU ||
                       kind == Polynomial::ShiftedChebyshevV || kind == Polynomial::ShiftedChebyshevW;
  X x0 = wrap(g, xv);
  X x = shifted ? x0 + x0 - 1.0 : x0;  // shifted Chebyshev: P*(x) = P(2x - 1)
  X n = wrap(g, convert(g, nv, c10::kLong));
  auto base = kind;
  if (shifted) base = static_cast<Polynomial>(static_cast<int>(kind) - 4);

  // P_1; P_0 = 1 for every family.
  X p1 = lit(x, 1);
  switch (base) {
    case Polynomial::ChebyshevT: p1 = x; break;
    case Polynomial::ChebyshevU: p1 = x + x; break;
    case Polynomial::ChebyshevV: p1 = x + x - 1.0; break;
    case Polynomial::ChebyshevW: p1 = x + x + 1.0; break;
    case Polynomial::HermiteH: p1 = x + x; break;
    case Polynomial::HermiteHe: p1 = x; break;
    case Polynomial::LaguerreL: p1 = 1.0 - x; break;
    case Polynomial::LegendreP: p1 = x; break;
    default: break;
  }
  // P_{k+1} from P_{k-1} (p) and P_k (q), for k = 1 .. n - 1, run to the largest n.
  auto next = [base](X k, X x, X p, X q) {
    switch (base) {
      case Polynomial::HermiteH: return (x + x) * q - (k + k) * p;
      case Polynomial::HermiteHe: return x * q - k * p;
      case Polynomial::LaguerreL: return ((k + k + 1.0 - x) * q - k * p) / (k + 1.0);
      case Polynomial::LegendreP: return ((k + k + 1.0) * x * q - k * p) / (k + 1.0);
      default: return (x + x) * q - p;  // every Chebyshev kind
    }
  };
  std::vector<int64_t> all(t.shape.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  Value limit = reduce(g, n.v, all, ReduceKind::Max);
  Value start = constant(g, 1, c10::kLong);
  auto body = [&](Graph& sub, Value k, const std::vector<Value>& v) {
    X x = wrap(sub, v[0]), n = wrap(sub, v[1]), p = wrap(sub, v[2]), q = wrap(sub, v[3]);
    X kk = wrap(sub, broadcast_in_dim(sub, k, t.shape, {}));
    X active = cmp(kk, n, "LT");
    X r = next(wrap(sub, convert(sub, kk.v, t.dtype)), x, p, q);
    return std::vector<Value>{x.v, n.v, where(active, q, p).v, where(active, r, q).v};
  };
  std::vector<Value> out = counted_loop(g, start, limit, {x.v, n.v, constant_like(g, xv, 1), p1.v}, body);
  X r = where(cmp(n, lit(n, 0), "EQ"), 1.0, wrap(g, out[3]));

  // PyTorch's special cases, lowest priority first (each select overrides the ones before).
  X nf = wrap(g, convert(g, n.v, t.dtype));
  X odd = cmp(wrap(g, binary(g, "remainder", n.v, constant_like(g, n.v, 2))), lit(n, 0), "NE");
  X inside = cmp(abs(x), 1.0, "LT");
  X theta = chlo_fn("acos", x);
  switch (base) {
    case Polynomial::ChebyshevT: {
      r = where(cmp(n, lit(n, 6), "GT") && inside, cos(nf * theta), r);
      X at_one = where(cmp(x, 0.0, "GT") || !odd, 1.0, lit(x, -1));
      r = where(cmp(abs(x), 1.0, "EQ"), at_one, r);
      break;
    }
    case Polynomial::ChebyshevU: {
      X s = sin(theta);
      X closed = where(cmp(s, 0.0, "NE"), sin((nf + 1.0) * theta) / s, (nf + 1.0) * cos((nf + 1.0) * theta));
      r = where(cmp(n, lit(n, 8), "GT") && inside, closed, r);
      X at_one = where(cmp(x, 0.0, "GT") || !odd, nf + 1.0, -(nf + 1.0));
      r = where(cmp(abs(x), 1.0, "EQ"), at_one, r);
      break;
    }
    case Polynomial::ChebyshevV: {
      X half = cos(theta * 0.5);
      X odd_sign = where(odd, -(nf + nf + 1.0), nf + nf + 1.0);
      X closed = where(cmp(half, 0.0, "NE"), cos((nf + 0.5) * theta) / half, odd_sign);
      r = where(cmp(n, lit(n, 8), "GT") && inside, closed, r);
      r = where(cmp(abs(x), 1.0, "EQ"), where(cmp(x, 0.0, "GT"), lit(x, 1), odd_sign), r);
      break;
    }
    case Polynomial::ChebyshevW: {
      X half = sin(theta * 0.5);
      X at_minus_one = where(odd, lit(x, -1), 1.0);
      X closed = where(cmp(half, 0.0, "NE"), sin((nf + 0.5) * theta) / half,
                       where(cmp(x, 0.0, "GT"), nf + nf + 1.0, at_minus_one));
      r = where(cmp(n, lit(n, 8), "GT") && inside, closed, r);
      r = where(cmp(abs(x), 1.0, "EQ"), where(cmp(x, 0.0, "GT"), nf + nf + 1.0, at_minus_one), r);
      break;
    }
    case Polynomial::LaguerreL:
      r = where(cmp(abs(x), 0.0, "EQ"), 1.0, r);
      break;
    case Polynomial::LegendreP: {
      X at_one = where(cmp(x, 0.0, "GT") || !odd, 1.0, lit(x, -1));
      r = where(cmp(abs(x), 1.0, "EQ"), at_one, r);
      break;
    }
    default:
      break;
  }
  return where(cmp(n, lit(n, 0), "LT"), 0.0, r).v;
}

}  // namespace torch_tpu::lower::special
