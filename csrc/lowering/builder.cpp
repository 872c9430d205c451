// The shared StableHLO builders every lowering family uses.
#include "lowering/builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <c10/util/BFloat16.h>
#include <c10/util/accumulate.h>
#include <c10/util/Exception.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e4m3fnuz.h>
#include <c10/util/Float8_e5m2.h>
#include <c10/util/Float8_e5m2fnuz.h>
#include <c10/util/Float8_e8m0fnu.h>
#include <c10/util/Half.h>

namespace torch_tpu::lower {

namespace {
std::string hex(uint64_t bits, int digits) {
  static const char* d = "0123456789ABCDEF";
  std::string s = "0x";
  for (int i = digits - 1; i >= 0; --i) s += d[(bits >> (4 * i)) & 0xF];
  return s;
}

// The literal of a scalar in an MLIR dense attribute; floats are written as
// their bit pattern so inf, nan and every value round-trip exactly.
std::string literal(const c10::Scalar& s, c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return s.toBool() ? "true" : "false";
    case c10::kFloat: {
      float f = s.toFloat();
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return hex(b, 8);
    }
    case c10::kDouble: {
      double f = s.toDouble();
      uint64_t b;
      std::memcpy(&b, &f, 8);
      return hex(b, 16);
    }
    case c10::kHalf: return hex(c10::Half(s.toFloat()).x, 4);
    case c10::kBFloat16: return hex(c10::BFloat16(s.toFloat()).x, 4);
    case c10::kFloat8_e5m2: return hex(c10::Float8_e5m2(s.toFloat()).x, 2);
    case c10::kFloat8_e4m3fn: return hex(c10::Float8_e4m3fn(s.toFloat()).x, 2);
    case c10::kFloat8_e5m2fnuz: return hex(c10::Float8_e5m2fnuz(s.toFloat()).x, 2);
    case c10::kFloat8_e4m3fnuz: return hex(c10::Float8_e4m3fnuz(s.toFloat()).x, 2);
    case c10::kFloat8_e8m0fnu: return hex(c10::Float8_e8m0fnu(s.toFloat()).x, 2);
    case c10::kComplexHalf: {  // complex64 in programs, its parts rounded to half
      c10::complex<double> z = s.toComplexDouble();
      return "(" + literal(static_cast<float>(c10::Half(z.real())), c10::kFloat) + ", " +
             literal(static_cast<float>(c10::Half(z.imag())), c10::kFloat) + ")";
    }
    case c10::kComplexFloat:
    case c10::kComplexDouble: {
      auto part = t == c10::kComplexFloat ? c10::kFloat : c10::kDouble;
      c10::complex<double> z = s.toComplexDouble();
      return "(" + literal(z.real(), part) + ", " + literal(z.imag(), part) + ")";
    }
    case c10::kByte: return std::to_string(s.toByte());
    case c10::kUInt16: return std::to_string(static_cast<uint16_t>(s.toLong()));
    case c10::kUInt32: return std::to_string(static_cast<uint32_t>(s.toLong()));
    case c10::kUInt64: return std::to_string(s.isUnsigned() ? s.toUInt64() : static_cast<uint64_t>(s.toLong()));
    default: return std::to_string(s.toLong());
  }
}

std::string lists(const char* name, const std::vector<int64_t>& v) {
  std::string s = std::string(name) + " = [";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string scalar_type(c10::ScalarType t) { return mlir_type(Type{t, {}}); }
}  // namespace

bool is_float(c10::ScalarType t) { return c10::isFloatingType(t); }
bool is_signed_int(c10::ScalarType t) {
  return t == c10::kChar || t == c10::kShort || t == c10::kInt || t == c10::kLong;
}

Value constant(Graph& g, const c10::Scalar& value, c10::ScalarType dtype, const Shape& shape) {
  Type st{dtype, {}};
  Value c = g.add("stablehlo.constant", {}, st,
                  "{value = dense<" + literal(value, dtype) + "> : " + mlir_type(st) + "}");
  return shape.empty() ? c : broadcast_in_dim(g, c, shape, {});
}

Value constant_like(Graph& g, Value like, const c10::Scalar& value) {
  Type t = g.type(like);
  return constant(g, value, t.dtype, t.shape);
}

namespace {

// The float8 types with a mantissa (not e8m0): mantissa bits and the exponent
// of the smallest normal number; {0, 0} for other types.
struct Float8Grid {
  int mantissa_bits, min_exponent;
};
Float8Grid float8_grid(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat8_e5m2: return {2, -14};
    case c10::kFloat8_e5m2fnuz: return {2, -15};
    case c10::kFloat8_e4m3fn: return {3, -6};
    case c10::kFloat8_e4m3fnuz: return {3, -7};
    default: return {0, 0};
  }
}

// A float32 value rounded to the nearest value of the float8 type (ties to
// even), as float32. XLA CPU converts float32 to float8 through float16, so
// rounding twice (2305 became 2048 in e5m2, not 2560; 7.64e-6 became 0, not
// 1.53e-5); PyTorch rounds once. The convert of the rounded value is exact on
// any platform.
Value round_to_float8_grid(Graph& g, Value x, c10::ScalarType dtype) {
  const Shape& shape = g.type(x).shape;
  Float8Grid grid = float8_grid(dtype);
  auto i32 = [&](int64_t v) { return constant(g, v, c10::kInt, shape); };
  auto f32 = [&](double v) { return constant(g, v, c10::kFloat, shape); };
  // Normal numbers: round the bit pattern's mantissa, carrying into the exponent.
  int dropped = 23 - grid.mantissa_bits;
  Value bits = bitcast(g, x, c10::kInt);
  Value last_kept = binary(g, "and", binary(g, "shift_right_logical", bits, i32(dropped)), i32(1));
  Value carried = binary(g, "add", bits, binary(g, "add", i32((int64_t{1} << (dropped - 1)) - 1), last_kept));
  Value normal = bitcast(g, binary(g, "and", carried, i32(~((int64_t{1} << dropped) - 1))), c10::kFloat);
  // Subnormals are multiples of one step; the scalings by powers of two are exact.
  double step = std::ldexp(1.0, grid.min_exponent - grid.mantissa_bits);
  Value subnormal = binary(g, "multiply", unary(g, "round_nearest_even", binary(g, "multiply", x, f32(1 / step))), f32(step));
  Value x_abs = unary(g, "abs", x);
  Value finite = g.add("stablehlo.is_finite", {x}, Type{c10::kBool, shape});
  Value small = compare(g, x_abs, f32(std::ldexp(1.0, grid.min_exponent)), "LT", c10::kFloat);
  Value rounded = select(g, small, subnormal, select(g, finite, normal, x));
  if (dtype != c10::kFloat8_e4m3fn) return rounded;
  // PyTorch saturates to e4m3fn (no infinity: +-448 for what is beyond, inf
  // included); NaN stays NaN. The fnuz types take NaN for what is beyond.
  double max = static_cast<float>(std::numeric_limits<c10::Float8_e4m3fn>::max());
  Value clamped = g.add("stablehlo.clamp", {f32(-max), rounded, f32(max)}, Type{c10::kFloat, shape});
  return select(g, compare(g, rounded, rounded, "EQ", c10::kFloat), clamped, rounded);  // XLA's clamp drops NaN
}

}  // namespace

Value convert(Graph& g, Value v, c10::ScalarType dtype) {
  const Type& t = g.type(v);
  if (t.dtype == dtype) return v;
  if (dtype == c10::kComplexHalf) {
    // complex32 is complex64 in programs; a value converted to it keeps only
    // what half precision holds of each part, as a complex32 tensor would.
    Value z = convert(g, v, c10::kComplexFloat);
    auto round = [&](Value part) { return convert(g, convert(g, part, c10::kHalf), c10::kFloat); };
    return g.add("stablehlo.complex", {round(real_part(g, z)), round(imag_part(g, z))}, Type{dtype, t.shape});
  }
  if (dtype == c10::kBool) {
    // PyTorch's bool conversion is "!= 0"; XLA's convert agrees, but be explicit.
    return compare(g, v, constant(g, 0, t.dtype, t.shape), "NE", t.dtype);
  }
  if (c10::isFloatingType(t.dtype) && (dtype == c10::kByte || (c10::isSignedType(dtype) && c10::isIntegralType(dtype, false)))) {
    // Out of range (and NaN), C++ leaves a float's conversion to an integer
    // undefined, and PyTorch gives what x86 does: a conversion to int32 (int64
    // for 64-bit results) that yields the lowest value when out of range,
    // then the low bits. XLA saturates instead; this is the CPU's answer.
    c10::ScalarType wide = c10::elementSize(dtype) == 8 ? c10::kLong : c10::kInt;
    double bound = wide == c10::kLong ? 9223372036854775808.0 : 2147483648.0;
    c10::ScalarType compare_type = c10::elementSize(t.dtype) < 4 ? c10::kFloat : t.dtype;
    Value x = convert(g, v, compare_type);
    Value in_range = g.add("stablehlo.and",
                           {compare(g, x, constant(g, -bound, compare_type, t.shape), "GE", compare_type),
                            compare(g, x, constant(g, bound, compare_type, t.shape), "LT", compare_type)},
                           Type{c10::kBool, t.shape});
    Value lowest = constant(g, wide == c10::kLong ? std::numeric_limits<int64_t>::min()
                                                  : int64_t{std::numeric_limits<int32_t>::min()},
                            wide, t.shape);
    Value r = select(g, in_range, g.add("stablehlo.convert", {v}, Type{wide, t.shape}), lowest);
    return dtype == wide ? r : g.add("stablehlo.convert", {r}, Type{dtype, t.shape});
  }
  if (float8_grid(dtype).mantissa_bits && !float8_grid(t.dtype).mantissa_bits && !c10::isComplexType(t.dtype))
    return g.add("stablehlo.convert", {round_to_float8_grid(g, convert(g, v, c10::kFloat), dtype)}, Type{dtype, t.shape});
  return g.add("stablehlo.convert", {v}, Type{dtype, t.shape});
}

c10::ScalarType complex_part_type(c10::ScalarType complex) {
  return complex == c10::kComplexDouble ? c10::kDouble : c10::kFloat;
}

Value real_part(Graph& g, Value z) {
  const Type& t = g.type(z);
  if (!c10::isComplexType(t.dtype)) return z;
  return g.add("stablehlo.real", {z}, Type{complex_part_type(t.dtype), t.shape});
}

Value imag_part(Graph& g, Value z) {
  const Type& t = g.type(z);
  if (!c10::isComplexType(t.dtype)) return constant_like(g, z, 0);
  return g.add("stablehlo.imag", {z}, Type{complex_part_type(t.dtype), t.shape});
}

Value magnitude(Graph& g, Value v) {
  const Type& t = g.type(v);
  if (!c10::isComplexType(t.dtype)) return unary(g, "abs", v);
  return g.add("stablehlo.abs", {v}, Type{complex_part_type(t.dtype), t.shape});
}

Value conj(Graph& g, Value z) {
  const Type& t = g.type(z);
  if (!c10::isComplexType(t.dtype)) return z;
  return g.add("stablehlo.complex", {real_part(g, z), unary(g, "negate", imag_part(g, z))}, t);
}

Value make_complex(Graph& g, Value re, Value im) {
  const Type& t = g.type(re);
  TORCH_INTERNAL_ASSERT(t == g.type(im) && (t.dtype == c10::kFloat || t.dtype == c10::kDouble));
  return g.add("stablehlo.complex", {re, im}, Type{t.dtype == c10::kDouble ? c10::kComplexDouble : c10::kComplexFloat, t.shape});
}

Value bitcast(Graph& g, Value v, c10::ScalarType dtype) {
  Type t = g.type(v);
  if (t.dtype == dtype) return v;
  // XLA cannot bitcast predicates; bool bytes are 0/1 uint8 bytes.
  if (t.dtype == c10::kBool) return bitcast(g, convert(g, v, c10::kByte), dtype);
  if (dtype == c10::kBool) return convert(g, bitcast(g, v, c10::kByte), c10::kBool);
  // XLA cannot bitcast complex values either; their bytes are (real, imag)
  // pairs, of halves for complex32 (which programs compute in complex64).
  auto stored_part_type = [](c10::ScalarType complex) {
    return complex == c10::kComplexHalf ? c10::kHalf : complex_part_type(complex);
  };
  if (c10::isComplexType(t.dtype)) {
    TORCH_CHECK(t.shape.size() == 1, "tpu: reinterpreting element sizes needs a flat value");
    Shape pairs{t.shape[0], 1};
    auto part = [&](Value p) { return reshape(g, convert(g, p, stored_part_type(t.dtype)), pairs); };
    Value parts = concat(g, {part(real_part(g, v)), part(imag_part(g, v))}, 1);
    return bitcast(g, reshape(g, parts, {2 * t.shape[0]}), dtype);
  }
  if (c10::isComplexType(dtype)) {
    Value flat = bitcast(g, v, stored_part_type(dtype));
    int64_t n = g.type(flat).shape[0];
    TORCH_CHECK(n % 2 == 0, "tpu: storage of ", t.shape[0], " ", t.dtype, " elements cannot be read as ", dtype);
    Value pairs = reshape(g, flat, {n / 2, 2});
    auto part = [&](int64_t k) {
      return convert(g, reshape(g, slice(g, pairs, {0, k}, {n / 2, k + 1}, {1, 1}), {n / 2}), complex_part_type(dtype));
    };
    return g.add("stablehlo.complex", {part(0), part(1)}, Type{dtype, {n / 2}});
  }
  size_t from = c10::elementSize(t.dtype), to = c10::elementSize(dtype);
  if (from == to) return g.add("stablehlo.bitcast_convert", {v}, Type{dtype, t.shape});
  TORCH_CHECK(t.shape.size() == 1, "tpu: reinterpreting element sizes needs a flat value");
  if (from > to) {
    int64_t r = from / to;
    Value parts = g.add("stablehlo.bitcast_convert", {v}, Type{dtype, {t.shape[0], r}});
    return reshape(g, parts, {t.shape[0] * r});
  }
  int64_t r = to / from;
  TORCH_CHECK(t.shape[0] % r == 0, "tpu: storage of ", t.shape[0], " ", t.dtype, " elements cannot be read as ", dtype);
  Value grouped = reshape(g, v, {t.shape[0] / r, r});
  return g.add("stablehlo.bitcast_convert", {grouped}, Type{dtype, {t.shape[0] / r}});
}

Value transpose(Graph& g, Value v, const std::vector<int64_t>& perm) {
  const Type& t = g.type(v);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == (int64_t)i;
  if (identity) return v;
  Shape s;
  for (int64_t p : perm) s.push_back(t.shape[p]);
  return g.add("stablehlo.transpose", {v}, Type{t.dtype, s}, "{permutation = " + i64_array(perm) + "}");
}

Value broadcast_in_dim(Graph& g, Value v, const Shape& shape, const std::vector<int64_t>& dims) {
  const Type& t = g.type(v);
  if (t.shape == shape) return v;
  return g.add("stablehlo.broadcast_in_dim", {v}, Type{t.dtype, shape},
               "{broadcast_dimensions = " + i64_array(dims) + "}");
}

Value broadcast_to(Graph& g, Value v, const Shape& shape) {
  Type t = g.type(v);
  if (t.shape == shape) return v;
  TORCH_INTERNAL_ASSERT(t.shape.size() <= shape.size(), "broadcast to fewer dims");
  size_t lead = shape.size() - t.shape.size();
  std::vector<int64_t> dims;
  Shape squeezed;
  bool need_reshape = false;
  // Size-1 dims that grow are dropped first: broadcast_in_dim requires equal or 1.
  for (size_t i = 0; i < t.shape.size(); ++i) {
    int64_t want = shape[lead + i];
    if (t.shape[i] == want) {
      dims.push_back(lead + i);
      squeezed.push_back(want);
    } else {
      TORCH_INTERNAL_ASSERT(t.shape[i] == 1, "not broadcastable");
      need_reshape = true;
    }
  }
  if (need_reshape) v = reshape(g, v, squeezed);
  return broadcast_in_dim(g, v, shape, dims);
}

Value slice(Graph& g, Value v, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
            const std::vector<int64_t>& strides) {
  const Type& t = g.type(v);
  Shape s;
  bool identity = true;
  for (size_t i = 0; i < start.size(); ++i) {
    int64_t n = limit[i] > start[i] ? (limit[i] - start[i] + strides[i] - 1) / strides[i] : 0;
    s.push_back(n);
    identity &= start[i] == 0 && limit[i] == t.shape[i] && strides[i] == 1;
  }
  if (identity) return v;
  return g.add("stablehlo.slice", {v}, Type{t.dtype, s},
               "{start_indices = " + i64_array(start) + ", limit_indices = " + i64_array(limit) +
                   ", strides = " + i64_array(strides) + "}");
}

Value slice_of_growing(Graph& g, Value v, int64_t start, int64_t limit) {
  return g.add("stablehlo.slice", {v}, Type{g.type(v).dtype, {limit - start}},
               "{start_indices = " + i64_array({start}) + ", limit_indices = " + i64_array({limit}) +
                   ", strides = " + i64_array({1}) + "}");
}

Value slice_dim(Graph& g, Value v, int64_t dim, int64_t start, int64_t limit, int64_t step) {
  const Type& t = g.type(v);
  std::vector<int64_t> st(t.shape.size(), 0), li = t.shape, sd(t.shape.size(), 1);
  st[dim] = start;
  li[dim] = limit;
  sd[dim] = step;
  return slice(g, v, st, li, sd);
}

Value concat(Graph& g, const std::vector<Value>& vs, int64_t dim) {
  if (vs.size() == 1) return vs[0];
  Type t = g.type(vs[0]);
  t.shape[dim] = 0;
  for (Value v : vs) t.shape[dim] += g.type(v).shape[dim];
  return g.add("stablehlo.concatenate", vs, t, "{dimension = " + std::to_string(dim) + " : i64}");
}

Value iota(Graph& g, c10::ScalarType dtype, const Shape& shape, int64_t dim) {
  return g.add("stablehlo.iota", {}, Type{dtype, shape},
               "{iota_dimension = " + std::to_string(dim) + " : i64}");
}

Value unary(Graph& g, const char* op, Value v) {
  const Type& t = g.type(v);
  std::string_view name(op);
  // Rounding takes floats only: an integer is already whole.
  if (c10::isIntegralType(t.dtype, /*includeBool=*/true) &&
      (name == "floor" || name == "ceil" || name == "round_nearest_even" || name == "round_nearest_afz"))
    return v;
  // StableHLO's abs and sign take signless integers only; unsigned values are their own abs.
  if (c10::isIntegralType(t.dtype, false) && !is_signed_int(t.dtype)) {
    if (name == "abs") return v;
    if (name == "sign") return convert(g, compare(g, v, constant(g, 0, t.dtype, t.shape), "NE", t.dtype), t.dtype);
  }
  return g.add(std::string("stablehlo.") + op, {v}, t);
}

Value binary(Graph& g, const char* op, Value a, Value b) {
  TORCH_INTERNAL_ASSERT(g.type(a) == g.type(b), "binary operands differ: ", op);
  return g.add(std::string("stablehlo.") + op, {a, b}, g.type(a));
}

namespace {
Shape broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    TORCH_CHECK(x == y || x == 1 || y == 1, "tpu: shapes are not broadcastable");
    out[i] = x == 1 ? y : x;
  }
  return out;
}
}  // namespace

Value binary_bc(Graph& g, const char* op, Value a, Value b, c10::ScalarType dtype) {
  Shape s = broadcast_shapes(g.type(a).shape, g.type(b).shape);
  a = broadcast_to(g, convert(g, a, dtype), s);
  b = broadcast_to(g, convert(g, b, dtype), s);
  return binary(g, op, a, b);
}

Value compare(Graph& g, Value a, Value b, const char* direction, c10::ScalarType dtype) {
  Shape s = broadcast_shapes(g.type(a).shape, g.type(b).shape);
  a = broadcast_to(g, convert(g, a, dtype), s);
  b = broadcast_to(g, convert(g, b, dtype), s);
  // The comparison type is explicit: XLA's constant folder read an unannotated
  // i64 compare as unsigned (0 <= -1 came out true on 1x1 shapes).
  const char* kind = is_float(dtype) || c10::isComplexType(dtype) ? "FLOAT" : is_signed_int(dtype) ? "SIGNED" : "UNSIGNED";
  return g.add("stablehlo.compare", {a, b}, Type{c10::kBool, s},
               std::string("{compare_type = #stablehlo<comparison_type ") + kind +
                   ">, comparison_direction = #stablehlo<comparison_direction " + direction + ">}");
}

Value select(Graph& g, Value pred, Value on_true, Value on_false) {
  Shape s = broadcast_shapes(broadcast_shapes(g.type(pred).shape, g.type(on_true).shape),
                             g.type(on_false).shape);
  pred = broadcast_to(g, pred, s);
  on_true = broadcast_to(g, on_true, s);
  on_false = broadcast_to(g, on_false, s);
  return g.add("stablehlo.select", {pred, on_true, on_false}, g.type(on_true));
}

namespace {
// One line of a region body: "%name = stablehlo.compare(a, b)" on operands of type `ty`.
std::string region_compare(const char* name, const char* a, const char* b, const char* dir, const std::string& ty) {
  return std::string("      ") + name + " = \"stablehlo.compare\"(" + a + ", " + b +
         ") {comparison_direction = #stablehlo<comparison_direction " + dir + ">} : (" + ty + ", " + ty + ") -> " +
         scalar_type(c10::kBool) + "\n";
}
// "%name = stablehlo.<op>(a, b)" on booleans (and, or, xor).
std::string region_logic(const char* name, const char* op, const char* a, const char* b) {
  std::string bt = scalar_type(c10::kBool);
  return std::string("      ") + name + " = \"stablehlo." + op + "\"(" + a + ", " + b + ") : (" + bt + ", " + bt +
         ") -> " + bt + "\n";
}

// The combiner of (value, index) pairs that keeps the max (or min): NaN wins,
// ties go to the lower index (or the higher one).
std::string arg_select_region(c10::ScalarType dt, bool is_max, bool ties_to_last = false) {
  std::string vt = scalar_type(dt), it = scalar_type(c10::kLong), bt = scalar_type(c10::kBool);
  auto cmp = region_compare;
  auto bin = region_logic;
  auto sel = [&](const char* name, const char* a, const char* b, const std::string& ty) {
    return std::string("      ") + name + " = \"stablehlo.select\"(%pick, " + a + ", " + b + ") : (" + bt + ", " + ty +
           ", " + ty + ") -> " + ty + "\n";
  };
  std::string region = "({\n    ^bb0(%av: " + vt + ", %ai: " + it + ", %bv: " + vt + ", %bi: " + it + "):\n";
  region += cmp("%better", "%av", "%bv", is_max ? "GT" : "LT", vt);
  region += cmp("%same", "%av", "%bv", "EQ", vt);
  // "first" is the index that wins a tie.
  region += cmp("%first", "%ai", "%bi", ties_to_last ? "GT" : "LT", it);
  region += bin("%tie", "and", "%same", "%first");
  region += bin("%win", "or", "%better", "%tie");
  if (is_float(dt)) {
    region += cmp("%anan", "%av", "%av", "NE", vt);
    region += cmp("%bnan", "%bv", "%bv", "NE", vt);
    // a wins if it is NaN and b is not, or (neither is NaN and a wins); b NaN -> b.
    region += "      %bok = \"stablehlo.not\"(%bnan) : (" + bt + ") -> " + bt + "\n";
    region += bin("%anan_only", "and", "%anan", "%bok");
    region += bin("%both_nan", "and", "%anan", "%bnan");
    region += bin("%nan_tie", "and", "%both_nan", "%first");
    region += bin("%plain", "and", "%win", "%bok");
    region += bin("%p1", "or", "%plain", "%anan_only");
    region += bin("%pick", "or", "%p1", "%nan_tie");
  } else {
    region += bin("%pick", "or", "%win", "%win");
  }
  region += sel("%rv", "%av", "%bv", vt);
  region += sel("%ri", "%ai", "%bi", it);
  region += "      \"stablehlo.return\"(%rv, %ri) : (" + vt + ", " + it + ") -> ()\n    })";
  return region;
}

// The identity of a max (or min) reduction of dtype `dt`.
c10::Scalar extreme_init(c10::ScalarType dt, bool is_max) {
  if (is_float(dt))
    return is_max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  auto extreme = [is_max](auto zero) {
    using T = decltype(zero);
    return c10::Scalar(is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
  };
  switch (dt) {
    case c10::kBool: return c10::Scalar(!is_max);
    case c10::kByte: return extreme(uint8_t{});
    case c10::kChar: return extreme(int8_t{});
    case c10::kShort: return extreme(int16_t{});
    case c10::kInt: return extreme(int32_t{});
    case c10::kUInt16: return extreme(uint16_t{});
    case c10::kUInt32: return extreme(uint32_t{});
    case c10::kUInt64: return extreme(uint64_t{});
    default: return extreme(int64_t{});
  }
}

// The combiner region and identity of a reduction of `kind` over `dt`.
struct Reducer {
  std::string region;
  c10::Scalar init;
};
Reducer reducer(c10::ScalarType dt, ReduceKind kind, bool explicit_nan = true) {
  const char* op = nullptr;
  c10::Scalar init;
  switch (kind) {
    case ReduceKind::Sum: op = "add"; init = 0; break;
    case ReduceKind::Prod: op = "multiply"; init = 1; break;
    case ReduceKind::And: op = "and"; init = true; break;
    case ReduceKind::Or: op = "or"; init = false; break;
    case ReduceKind::Xor: op = "xor"; init = 0; break;
    case ReduceKind::Max: op = "maximum"; init = extreme_init(dt, true); break;
    case ReduceKind::Min: op = "minimum"; init = extreme_init(dt, false); break;
  }
  std::string st = scalar_type(dt);
  std::string region = std::string("({\n    ^bb0(%lhs: ") + st + ", %rhs: " + st + "):\n      %r = \"stablehlo." +
                       op + "\"(%lhs, %rhs) : (" + st + ", " + st + ") -> " + st + "\n";
  std::string result = "%r";
  if (explicit_nan && is_float(dt) && (kind == ReduceKind::Max || kind == ReduceKind::Min)) {
    // PyTorch's max/min propagate NaN; make that explicit rather than rely on the backend.
    std::string bt = scalar_type(c10::kBool);
    region += "      %lnan = \"stablehlo.compare\"(%lhs, %lhs) {comparison_direction = #stablehlo<comparison_direction NE>} : (" +
              st + ", " + st + ") -> " + bt + "\n";
    region += "      %rnan = \"stablehlo.compare\"(%rhs, %rhs) {comparison_direction = #stablehlo<comparison_direction NE>} : (" +
              st + ", " + st + ") -> " + bt + "\n";
    region += "      %r1 = \"stablehlo.select\"(%rnan, %rhs, %r) : (" + bt + ", " + st + ", " + st + ") -> " + st + "\n";
    region += "      %r2 = \"stablehlo.select\"(%lnan, %lhs, %r1) : (" + bt + ", " + st + ", " + st + ") -> " + st + "\n";
    result = "%r2";
  }
  region += "      \"stablehlo.return\"(" + result + ") : (" + st + ") -> ()\n    })";
  return {region, init};
}
}  // namespace

std::string reduce_region(c10::ScalarType dt, ReduceKind kind, bool explicit_nan) {
  return reducer(dt, kind, explicit_nan).region;
}

c10::Scalar reduce_identity(c10::ScalarType dt, ReduceKind kind) { return reducer(dt, kind).init; }

namespace {
// Reduces the last dimension of v away. A float32 sum over a row of moderate
// length, with other dimensions kept, runs as a product with a vector of ones
// when `row_sum_as_dot`: XLA's CPU backend splits a row sum of a computed
// value into windowed partial sums (its tree-reduction rewriter) that run
// about 3x slower than the matrix-vector product, and at HIGHEST precision
// the product accumulates in full f32 on every backend. (Float64 stays a
// reduction: TPUs have no f64 products.)
// Rows shorter than the lower bound stay reductions (not measured to gain);
// the upper bound keeps the product's sequential accumulation short.
constexpr int64_t kRowSumAsDotMin = 64, kRowSumAsDotMax = 65536;
Value reduce_last_dim(Graph& g, Value v, ReduceKind kind, bool row_sum_as_dot) {
  const Type& t = g.type(v);
  c10::ScalarType dt = t.dtype;
  int64_t last = static_cast<int64_t>(t.shape.size()) - 1;
  int64_t row = t.shape.back();
  if (row_sum_as_dot && kind == ReduceKind::Sum && dt == c10::kFloat && last >= 1 &&
      row >= kRowSumAsDotMin && row <= kRowSumAsDotMax)
    return dot_general(g, v, constant(g, 1, dt, {row}), {}, {}, {last}, {0}, dt, DotPrecision::Highest);
  Reducer red = reducer(dt, kind);
  Shape out(t.shape.begin(), t.shape.end() - 1);
  return g.add("stablehlo.reduce", {v, constant(g, red.init, dt)}, Type{dt, out},
               "{dimensions = " + i64_array({last}) + "}", red.region);
}

// XLA's CPU backend sums a float32 value of at least 32K elements through its
// reduction library (YNNPACK), which reads the value stored and sums leading
// dimensions fast, unless the value is computed by an op it would rather fuse
// into the sum: a multiply (a weight gradient's dy * x) or a convert. Such a
// sum over a dimension longer than 32 it splits into windowed partial sums
// that compute the producer inside: 4.3 ms for a column sum of a computed
// [8,256,1024] value in fused mode, 0.5 ms through the library.
constexpr int64_t kLibrarySumMinElements = 32 * 1024, kSplitSumMinDim = 33;

bool computed_by_fusing_op(const Graph& g, Value v) {
  // Reshapes and transposes fold into the sum's dimensions: look through them.
  for (int node = g.producer(v); node >= 0; node = g.producer(g.operands(g.node(node))[0])) {
    const ir::Symbol& op = g.node(node).op;
    if (op == "stablehlo.multiply" || op == "stablehlo.convert") return true;
    if (!(op == "stablehlo.reshape" || op == "stablehlo.transpose")) return false;
  }
  return false;
}

// Whether the CPU backend would split a float32 sum of v over `dims` (not all trailing).
bool sum_would_split(const Graph& g, Value v, const std::vector<int64_t>& dims) {
  const Type& t = g.type(v);
  return t.dtype == c10::kFloat && c10::multiply_integers(t.shape) >= kLibrarySumMinElements &&
         std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return t.shape[d] >= kSplitSumMinDim; }) &&
         computed_by_fusing_op(g, v);
}

// v unchanged, through a reduce_precision to float32's own format: an exact
// identity the CPU backend treats as any other producer, so a sum of it goes
// to the library. Other backends fuse it away.
Value summed_by_library(Graph& g, Value v) {
  return g.add("stablehlo.reduce_precision", {v}, g.type(v), "{exponent_bits = 8 : i32, mantissa_bits = 23 : i32}");
}
}  // namespace

Value reduce(Graph& g, Value v, const std::vector<int64_t>& dims, ReduceKind kind) {
  Type t = g.type(v);
  if (dims.empty()) return v;
  // The plugin's reduction library (YNNPACK) indexes at most 8 dimensions and
  // corrupts memory beyond (a sum over the last of 12 dimensions crashed the
  // process). A higher rank is reduced as the rows of a [kept, reduced] matrix
  // made behind an optimization barrier, which XLA's simplifier cannot fold
  // back into the reduce as it folds a plain reshape.
  constexpr size_t kLibraryMaxRank = 8;
  bool high_rank = t.shape.size() > kLibraryMaxRank;
  if (!high_rank && dims.size() == 1 && dims[0] == static_cast<int64_t>(t.shape.size()) - 1)
    return reduce_last_dim(g, v, kind, true);
  // XLA's CPU reduction emitter is fast on one trailing dimension and
  // several times slower on several dimensions or leading ones (a "column"
  // reduction, e.g. a bias gradient). So: merge neighbouring dimensions that
  // are both reduced or both kept (a free reshape), move the reduced groups
  // last, merge them into one, and reduce that.
  std::vector<char> is_reduced(t.shape.size(), 0);
  for (int64_t d : dims) is_reduced[d] = 1;
  Shape groups, out;
  std::vector<char> group_reduced;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (!is_reduced[d]) out.push_back(t.shape[d]);
    if (!groups.empty() && group_reduced.back() == is_reduced[d]) {
      groups.back() *= t.shape[d];
    } else {
      groups.push_back(t.shape[d]);
      group_reduced.push_back(is_reduced[d]);
    }
  }
  std::vector<int64_t> perm, last;
  Shape merged;
  int64_t reduced = 1;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (group_reduced[i]) {
      last.push_back(static_cast<int64_t>(i));
      reduced *= groups[i];
    } else {
      perm.push_back(static_cast<int64_t>(i));
      merged.push_back(groups[i]);
    }
  }
  perm.insert(perm.end(), last.begin(), last.end());
  merged.push_back(reduced);
  bool moved_by_transpose = !std::is_sorted(perm.begin(), perm.end());
  if (moved_by_transpose && kind == ReduceKind::Sum && sum_would_split(g, v, dims)) v = summed_by_library(g, v);
  Value moved = reshape(g, transpose(g, reshape(g, v, groups), perm), merged);
  if (high_rank) {
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < merged.size(); ++i) rows *= merged[i];
    moved = reshape(g, moved, {rows, reduced});
    moved = g.add("stablehlo.optimization_barrier", {moved}, g.type(moved));
  }
  // A product with ones over a transposed value is a column-vector product,
  // which the CPU backend runs several times slower than the reduction.
  return reshape(g, reduce_last_dim(g, moved, kind, !moved_by_transpose), out);
}

std::pair<Value, Value> arg_reduce(Graph& g, Value v, int64_t dim, bool is_max) {
  Type t = g.type(v);
  c10::ScalarType dt = t.dtype;
  std::string region = arg_select_region(dt, is_max);
  Shape out;
  for (size_t i = 0; i < t.shape.size(); ++i)
    if ((int64_t)i != dim) out.push_back(t.shape[i]);
  Value idx = iota(g, c10::kLong, t.shape, dim);
  c10::Scalar init = extreme_init(dt, is_max);
  auto outs = g.add_multi("stablehlo.reduce", {v, idx, constant(g, init, dt), constant(g, 0, c10::kLong)},
                          {Type{dt, out}, Type{c10::kLong, out}}, "{dimensions = " + i64_array({dim}) + "}", region);
  return {outs[0], outs[1]};
}

std::pair<Value, Value> sort_with_indices(Graph& g, Value v, int64_t dim, bool descending) {
  Type t = g.type(v);
  std::string vt = scalar_type(t.dtype), it = scalar_type(c10::kLong), bt = scalar_type(c10::kBool);
  auto cmp = [&](const char* name, const char* a, const char* b, const char* dir) {
    return region_compare(name, a, b, dir, vt);
  };
  auto bin = region_logic;
  std::string region = "({\n    ^bb0(%a: " + vt + ", %b: " + vt + ", %ai: " + it + ", %bi: " + it + "):\n";
  // "a goes before b": ascending a < b with NaN last; descending a > b with NaN first.
  const char* first = descending ? "%b" : "%a";
  const char* second = descending ? "%a" : "%b";
  region += cmp("%lt", first, second, "LT");
  if (is_float(t.dtype)) {
    region += cmp("%fnan", first, first, "NE");
    region += cmp("%snan", second, second, "NE");
    region += "      %fok = \"stablehlo.not\"(%fnan) : (" + bt + ") -> " + bt + "\n";
    region += bin("%nan_order", "and", "%fok", "%snan");
    region += bin("%r", "or", "%lt", "%nan_order");
  } else {
    region += bin("%r", "or", "%lt", "%lt");
  }
  region += "      \"stablehlo.return\"(%r) : (" + bt + ") -> ()\n    })";
  Value idx = iota(g, c10::kLong, t.shape, dim);
  auto outs = g.add_multi("stablehlo.sort", {v, idx}, {t, Type{c10::kLong, t.shape}},
                          "{dimension = " + std::to_string(dim) + " : i64, is_stable = true}", region);
  return {outs[0], outs[1]};
}

std::string padding_attr(const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  std::string s = "dense<[";
  for (size_t i = 0; i < lo.size(); ++i)
    s += std::string(i ? ", " : "") + "[" + std::to_string(lo[i]) + ", " + std::to_string(hi[i]) + "]";
  return s + "]> : tensor<" + std::to_string(lo.size()) + "x2xi64>";
}

namespace {
// reduce_window's attributes; `out` receives the result shape.
std::string window_attrs(const Shape& in, const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                         const std::vector<int64_t>& dilation, const std::vector<int64_t>& pad_lo,
                         const std::vector<int64_t>& pad_hi, Shape& out) {
  out.resize(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = (in[i] + pad_lo[i] + pad_hi[i] - (dilation[i] * (window[i] - 1) + 1)) / strides[i] + 1;
  return "{padding = " + padding_attr(pad_lo, pad_hi) + ", window_dilations = " + i64_array(dilation) +
         ", window_dimensions = " + i64_array(window) + ", window_strides = " + i64_array(strides) + "}";
}
}  // namespace

Value reduce_window(Graph& g, Value v, ReduceKind kind, const std::vector<int64_t>& window,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilation,
                    const std::vector<int64_t>& pad_lo, const std::vector<int64_t>& pad_hi) {
  Type t = g.type(v);
  Reducer red = reducer(t.dtype, kind);
  Shape out;
  std::string attrs = window_attrs(t.shape, window, strides, dilation, pad_lo, pad_hi, out);
  return g.add("stablehlo.reduce_window", {v, constant(g, red.init, t.dtype)}, Type{t.dtype, out}, attrs, red.region);
}

std::pair<Value, Value> reduce_window_argmax(Graph& g, Value v, Value index, const std::vector<int64_t>& window,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& dilation,
                                             const std::vector<int64_t>& pad_lo,
                                             const std::vector<int64_t>& pad_hi, bool is_max, bool ties_to_last) {
  Type t = g.type(v);
  Shape out;
  std::string attrs = window_attrs(t.shape, window, strides, dilation, pad_lo, pad_hi, out);
  auto outs = g.add_multi("stablehlo.reduce_window",
                          // The padding's index loses every tie with a real element.
                          {v, index, constant(g, extreme_init(t.dtype, is_max), t.dtype),
                           constant(g, ties_to_last ? std::numeric_limits<int64_t>::min()
                                                    : std::numeric_limits<int64_t>::max(), c10::kLong)},
                          {Type{t.dtype, out}, Type{c10::kLong, out}}, attrs,
                          arg_select_region(t.dtype, is_max, ties_to_last));
  return {outs[0], outs[1]};
}

Value cumulative(Graph& g, Value v, int64_t dim, ReduceKind kind) {
  size_t n = g.type(v).shape.size();
  std::vector<int64_t> window(n, 1), ones(n, 1), lo(n, 0), hi(n, 0);
  window[dim] = g.type(v).shape[dim];
  lo[dim] = window[dim] - 1;
  return reduce_window(g, v, kind, window, ones, ones, lo, hi);
}

std::pair<Value, Value> cumulative_arg(Graph& g, Value v, int64_t dim, bool is_max) {
  size_t n = g.type(v).shape.size();
  std::vector<int64_t> window(n, 1), ones(n, 1), lo(n, 0), hi(n, 0);
  window[dim] = g.type(v).shape[dim];
  lo[dim] = window[dim] - 1;
  return reduce_window_argmax(g, v, iota(g, c10::kLong, g.type(v).shape, dim), window, ones, ones, lo, hi, is_max,
                              true);
}

Value cumulative_logsumexp(Graph& g, Value v, int64_t dim) {
  Type t = g.type(v);
  size_t n = t.shape.size();
  std::string st = scalar_type(t.dtype), bt = scalar_type(c10::kBool);
  auto line = [&](const std::string& name, const std::string& op, const std::string& args, int arity) {
    std::string types = st;
    for (int i = 1; i < arity; ++i) types += ", " + st;
    return "      " + name + " = \"stablehlo." + op + "\"(" + args + ") : (" + types + ") -> " + st + "\n";
  };
  // max + log1p(exp(min - max)); when both are the same infinity (min - max is
  // NaN) the sum is that infinity, not NaN.
  std::string region = "({\n    ^bb0(%a: " + st + ", %b: " + st + "):\n";
  region += line("%hi", "maximum", "%a, %b", 2);
  region += line("%lo", "minimum", "%a, %b", 2);
  region += line("%d", "subtract", "%lo, %hi", 2);
  region += line("%e", "exponential", "%d", 1);
  region += line("%l", "log_plus_one", "%e", 1);
  region += line("%s", "add", "%hi, %l", 2);
  region += region_compare("%same_infinity", "%d", "%d", "NE", st);
  region += "      %r0 = \"stablehlo.select\"(%same_infinity, %hi, %s) : (" + bt + ", " + st + ", " + st + ") -> " + st + "\n";
  // A NaN on either side stays (maximum would drop a NaN second operand).
  region += region_compare("%a_nan", "%a", "%a", "NE", st);
  region += region_compare("%b_nan", "%b", "%b", "NE", st);
  region += "      %r1 = \"stablehlo.select\"(%a_nan, %a, %r0) : (" + bt + ", " + st + ", " + st + ") -> " + st + "\n";
  region += "      %r = \"stablehlo.select\"(%b_nan, %b, %r1) : (" + bt + ", " + st + ", " + st + ") -> " + st + "\n";
  region += "      \"stablehlo.return\"(%r) : (" + st + ") -> ()\n    })";
  std::vector<int64_t> window(n, 1), ones(n, 1), lo(n, 0), hi(n, 0);
  window[dim] = t.shape[dim];
  lo[dim] = window[dim] - 1;
  Shape out;
  std::string attrs = window_attrs(t.shape, window, ones, ones, lo, hi, out);
  return g.add("stablehlo.reduce_window", {v, constant(g, -std::numeric_limits<double>::infinity(), t.dtype)}, t, attrs,
               region);
}

Value pad(Graph& g, Value v, const c10::Scalar& value, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
          const std::vector<int64_t>& interior) {
  Type t = g.type(v);
  Shape out(t.shape.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = lo[i] + hi[i] + t.shape[i] + std::max<int64_t>(t.shape[i] - 1, 0) * interior[i];
  return g.add("stablehlo.pad", {v, constant(g, value, t.dtype)}, Type{t.dtype, out},
               "{edge_padding_high = " + i64_array(hi) + ", edge_padding_low = " + i64_array(lo) +
                   ", interior_padding = " + i64_array(interior) + "}");
}

Value reverse(Graph& g, Value v, const std::vector<int64_t>& dims) {
  if (dims.empty()) return v;
  return g.add("stablehlo.reverse", {v}, g.type(v), "{dimensions = " + i64_array(dims) + "}");
}

Value dot_general(Graph& g, Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                  const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                  const std::vector<int64_t>& rhs_contract, c10::ScalarType out_dtype, DotPrecision precision) {
  const Type& a = g.type(lhs);
  const Type& b = g.type(rhs);
  Shape s;
  for (int64_t d : lhs_batch) s.push_back(a.shape[d]);
  auto free_dims = [&](const Type& t, const std::vector<int64_t>& batch, const std::vector<int64_t>& con) {
    for (size_t i = 0; i < t.shape.size(); ++i) {
      int64_t d = i;
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(con.begin(), con.end(), d) == con.end())
        s.push_back(t.shape[i]);
    }
  };
  free_dims(a, lhs_batch, lhs_contract);
  free_dims(b, rhs_batch, rhs_contract);
  std::string dn = "#stablehlo.dot<";
  std::vector<std::string> parts;
  if (!lhs_batch.empty()) {
    parts.push_back(lists("lhs_batching_dimensions", lhs_batch));
    parts.push_back(lists("rhs_batching_dimensions", rhs_batch));
  }
  parts.push_back(lists("lhs_contracting_dimensions", lhs_contract));
  parts.push_back(lists("rhs_contracting_dimensions", rhs_contract));
  for (size_t i = 0; i < parts.size(); ++i) dn += (i ? ", " : "") + parts[i];
  dn += ">";
  std::string attrs = "{dot_dimension_numbers = " + dn;
  if (precision == DotPrecision::Highest)
    attrs += ", precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>]";
  return g.add("stablehlo.dot_general", {lhs, rhs}, Type{out_dtype, s}, attrs + "}");
}

Value gather_flat(Graph& g, Value flat, Value indices) {
  const Type& it = g.type(indices);
  Type out{g.type(flat).dtype, it.shape};
  int64_t rank = it.shape.size();
  return g.add("stablehlo.gather", {flat, indices}, out,
               "{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], "
               "index_vector_dim = " + std::to_string(rank) + ">, indices_are_sorted = false, slice_sizes = " +
                   i64_array({1}) + "}");
}

namespace {
// Every dim of a rank-`rank` value but `dim`.
std::vector<int64_t> dims_but(int64_t rank, int64_t dim) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) dims.push_back(d);
  return dims;
}
}  // namespace

Value gather_along(Graph& g, Value v, int64_t dim, Value indices) {
  const Type& t = g.type(v);
  int64_t n = g.type(indices).shape[0];
  Shape out = t.shape, slice_sizes = t.shape;
  out[dim] = n;
  slice_sizes[dim] = 1;
  int64_t rank = t.shape.size();
  return g.add("stablehlo.gather", {v, reshape(g, indices, {n, 1})}, Type{t.dtype, out},
               "{dimension_numbers = #stablehlo.gather<" + lists("offset_dims", dims_but(rank, dim)) +
                   ", collapsed_slice_dims = [" + std::to_string(dim) + "], start_index_map = [" +
                   std::to_string(dim) + "], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = " +
                   i64_array(slice_sizes) + "}");
}

Value scatter_add_along(Graph& g, Value v, int64_t dim, Value indices, Value updates) {
  const Type& t = g.type(v);
  int64_t n = g.type(indices).shape[0];
  int64_t rank = t.shape.size();
  return g.add("stablehlo.scatter", {v, reshape(g, indices, {n, 1}), updates}, t,
               "{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<" +
                   lists("update_window_dims", dims_but(rank, dim)) + ", inserted_window_dims = [" + std::to_string(dim) +
                   "], scatter_dims_to_operand_dims = [" + std::to_string(dim) +
                   "], index_vector_dim = 1>, unique_indices = false}",
               reducer(t.dtype, ReduceKind::Sum).region);
}

namespace {
Value scatter_with(Graph& g, Value flat, Value indices, Value updates, const std::string& region) {
  int64_t rank = g.type(indices).shape.size();
  return g.add("stablehlo.scatter", {flat, indices, updates}, g.type(flat),
               "{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<"
               "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = " +
                   std::to_string(rank) + ">, unique_indices = false}",
               region);
}
}  // namespace

Value scatter_flat(Graph& g, Value flat, Value indices, Value updates, bool add) {
  if (add) return scatter_flat(g, flat, indices, updates, ReduceKind::Sum);
  std::string st = scalar_type(g.type(flat).dtype);
  return scatter_with(g, flat, indices, updates,
                      "({\n    ^bb0(%lhs: " + st + ", %rhs: " + st + "):\n      \"stablehlo.return\"(%rhs) : (" + st +
                          ") -> ()\n    })");
}

Value scatter_flat(Graph& g, Value flat, Value indices, Value updates, ReduceKind combine) {
  return scatter_with(g, flat, indices, updates, reducer(g.type(flat).dtype, combine).region);
}

Value dynamic_update_slice(Graph& g, Value operand, Value update, const std::vector<int64_t>& start) {
  std::vector<Value> starts;
  for (int64_t s : start) starts.push_back(constant(g, s, c10::kLong));
  return dynamic_update_slice(g, operand, update, starts);
}

Value dynamic_update_slice(Graph& g, Value operand, Value update, const std::vector<Value>& start) {
  std::vector<Value> ops = {operand, update};
  ops.insert(ops.end(), start.begin(), start.end());
  return g.add("stablehlo.dynamic_update_slice", ops, g.type(operand));
}

Value dynamic_slice(Graph& g, Value operand, const std::vector<Value>& start, const Shape& sizes) {
  std::vector<Value> ops = {operand};
  ops.insert(ops.end(), start.begin(), start.end());
  return g.add("stablehlo.dynamic_slice", ops, Type{g.type(operand).dtype, sizes},
               "{slice_sizes = " + i64_array(sizes) + "}");
}

namespace {
std::string region_of(const Graph& g, const std::vector<Type>& params, const RegionFn& build,
                      std::vector<Type>* result_types) {
  Graph sub = g.nested();
  std::vector<Value> args;
  for (auto& t : params) args.push_back(sub.param(t));
  std::vector<Value> outs = build(sub, args);
  result_types->clear();
  for (Value v : outs) result_types->push_back(sub.type(v));
  sub.set_outputs(outs);
  return sub.to_region();
}
}  // namespace

std::vector<Value> while_loop(Graph& g, const std::vector<Value>& carried, const RegionFn& cond, const RegionFn& body) {
  std::vector<Type> types;
  for (Value v : carried) types.push_back(g.type(v));
  std::vector<Type> cond_types, body_types;
  std::string cond_region = region_of(g, types, cond, &cond_types);
  std::string body_region = region_of(g, types, body, &body_types);
  const Type predicate_type{c10::kBool, {}};
  TORCH_CHECK(cond_types.size() == 1 && cond_types[0] == predicate_type,
              "while_loop: the condition must be one 0-d bool");
  TORCH_CHECK(body_types == types, "while_loop: the body must return values of the carried types");
  return g.add_multi("stablehlo.while", carried, types, {}, "(" + cond_region + ", " + body_region + ")");
}

std::vector<Value> counted_loop(Graph& g, Value start, Value limit, const std::vector<Value>& carried,
                                const CountedBodyFn& body) {
  const Type index_type{c10::kLong, {}};
  TORCH_CHECK(g.type(start) == index_type && g.type(limit) == index_type,
              "counted_loop: start and limit must be 0-d int64");
  std::vector<Value> state{start, limit};
  state.insert(state.end(), carried.begin(), carried.end());
  auto cond = [](Graph& sub, const std::vector<Value>& v) {
    return std::vector<Value>{compare(sub, v[0], v[1], "LT", c10::kLong)};
  };
  auto step = [&](Graph& sub, const std::vector<Value>& v) {
    std::vector<Value> next = body(sub, v[0], std::vector<Value>(v.begin() + 2, v.end()));
    next.insert(next.begin(), {binary(sub, "add", v[0], constant(sub, 1, c10::kLong)), v[1]});
    return next;
  };
  std::vector<Value> out = while_loop(g, state, cond, step);
  return std::vector<Value>(out.begin() + 2, out.end());
}

}  // namespace torch_tpu::lower
