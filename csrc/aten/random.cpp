// Random fills and samplers: PyTorch's argument checks and bounds, then the
// draws of lowering/random.
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/kernels.h"
#include "aten/op.h"
#include "lowering/random.h"

namespace torch_tpu::aten {

using namespace lower;

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  if (self.is_complex()) {  // as PyTorch: both parts uniform
    at::Tensor parts = at::view_as_real(self);
    uniform_(parts, from, to, gen);
    return self;
  }
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "uniform_ is implemented for floating point dtypes, got ",
              self.scalar_type());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "uniform_", [&] {
    const auto lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
    const auto max = static_cast<double>(std::numeric_limits<scalar_t>::max());
    TORCH_CHECK(from >= lowest && from <= max, "from is out of bounds for ", self.dtype());
    TORCH_CHECK(to >= lowest && to <= max, "to is out of bounds for ", self.dtype());
    TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
    TORCH_CHECK(to - from <= max, "uniform_ expects to-from <= std::numeric_limits<", self.scalar_type(),
                ">::max(), but found to=", to, " and from=", from, " which result in to-from to exceed the limit");
  });
  Op op("aten::uniform_");
  Graph& g = op.g();
  Shape s(self.sizes().begin(), self.sizes().end());
  // Drawn in the target dtype (kept below 1 after rounding), widened for the
  // affine map (double stays double: its bounds may not fit a float).
  auto wide = self.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
  Value u = convert(g, uniform01(g, op.rng_state(gen, self), s, self.scalar_type()), wide);
  Value lo = broadcast_to(g, op.scalar(from, wide), s);
  Value width = broadcast_to(g, op.scalar(to - from, wide), s);
  op.write(self, binary(g, "add", lo, binary(g, "multiply", u, width)));
  op.run();
  return self;
}

at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  int64_t hi;
  if (to.has_value()) {
    hi = *to;
  } else if (self.scalar_type() == c10::kBool) {
    hi = 2;
  } else if (c10::isFloatingType(self.scalar_type())) {
    // Integers exactly representable in the dtype, as PyTorch does.
    int digits = self.scalar_type() == c10::kDouble ? 53 : self.scalar_type() == c10::kFloat ? 24
                 : self.scalar_type() == c10::kHalf ? 11 : 8;
    hi = (int64_t{1} << digits) + 1;
  } else {
    // Up to the dtype's largest value (int64's, for the 64-bit types), as PyTorch.
    AT_DISPATCH_V2(self.scalar_type(), "random_", AT_WRAP([&] {
      uint64_t largest = static_cast<uint64_t>(std::numeric_limits<scalar_t>::max());
      hi = largest >= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                                   : static_cast<int64_t>(largest) + 1;
    }), AT_EXPAND(AT_INTEGRAL_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  }
  TORCH_CHECK(from < hi, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", hi);
  if (to.has_value() && c10::isFloatingType(self.scalar_type())) {
    // Narrowed to bounds that rounding to the dtype cannot cross, as PyTorch does.
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "random_", [&] {
      from = at::native::templates::update_from<scalar_t>(from);
      hi = at::native::templates::update_to<scalar_t>(hi);
      TORCH_CHECK(from < hi, "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from=",
                  from, " >= to=", hi);
    });
  }
  // PyTorch's bounds: an error outside the dtype, a warning past exact floats.
  at::native::templates::check_from_to_in_range(from, hi - 1, self.dtype());
  uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(from);
  Op op("aten::random_");
  Graph& g = op.g();
  Shape s(self.sizes().begin(), self.sizes().end());
  Value r = uniform_below(g, op.rng_state(gen, self), s, range);
  Value v = binary(g, "add", bitcast(g, r, c10::kLong), broadcast_to(g, op.scalar(from, c10::kLong), s));
  op.write(self, v);
  op.run();
  return self;
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from(self, 0, to, gen);
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return random_from(self, 0, std::nullopt, gen);
}

namespace {

void check_float_fill(const char* name, const at::Tensor& self) {
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), name, " is implemented for floating point dtypes, got ",
              self.scalar_type());
}

// Fills self with f(u) for u uniform in [0, 1) (float32).
at::Tensor& fill_from_uniform(const char* name, at::Tensor& self, std::optional<at::Generator> gen,
                              const std::function<Value(Op&, Value)>& f) {
  Op op(name);
  Graph& g = op.g();
  Value u = uniform01(g, op.rng_state(gen, self), shape_of(self), c10::kFloat);
  op.write(self, f(op, u));
  op.run();
  return self;
}

Value scalar_of(Op& op, double v, const Shape& s) { return broadcast_to(op.g(), op.scalar(v, c10::kFloat), s); }
}  // namespace

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {
    // As PyTorch: both parts normal, each with variance std^2 / 2.
    at::Tensor parts = at::view_as_real(self);
    normal_(parts, mean, std / std::sqrt(2.0), gen);
    return self;
  }
  check_float_fill("normal_", self);
  Op op("aten::normal_");
  Graph& g = op.g();
  Shape s = shape_of(self);
  Value z = standard_normal(g, op.rng_state(gen, self), s);
  op.write(self, binary(g, "add", scalar_of(op, mean, s), binary(g, "multiply", z, scalar_of(op, std, s))));
  op.run();
  return self;
}

at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  check_float_fill("log_normal_", self);
  Op op("aten::log_normal_");
  Graph& g = op.g();
  Shape s = shape_of(self);
  Value z = standard_normal(g, op.rng_state(gen, self), s);
  op.write(self, unary(g, "exponential", binary(g, "add", scalar_of(op, mean, s), binary(g, "multiply", z, scalar_of(op, std, s)))));
  op.run();
  return self;
}

namespace {

// normal(mean, std) with tensor arguments: a new tensor of their broadcast shape.
// One of mean and std may be a CPU scalar made from a Python number.
at::Tensor normal_tensors(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  auto shape = at::infer_size_dimvector(mean.sizes(), std.sizes());
  auto dt = at::result_type(mean, std);
  TORCH_CHECK(c10::isFloatingType(dt), "normal expects floating point mean and std, got ", dt);
  TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
  // As on CUDA, a synchronous check (it reads the device).
  TORCH_CHECK(std.numel() == 0 || std.min().ge(0).item<bool>(), "normal expects all elements of std >= 0.0");
  const at::Tensor& on_device = mean.device().is_cpu() ? std : mean;
  at::Tensor out = at::empty(shape, on_device.options().dtype(dt));
  Op op("aten::normal");
  Graph& g = op.g();
  Shape s(shape.begin(), shape.end());
  Value z = standard_normal(g, op.rng_state(gen, out), s);
  Value m = broadcast_to(g, convert(g, op.in(mean), c10::kFloat), s);
  Value sd = broadcast_to(g, convert(g, op.in(std), c10::kFloat), s);
  op.write(out, binary(g, "add", m, binary(g, "multiply", z, sd)));
  op.run();
  return out;
}
}  // namespace

at::Tensor normal_tensor_tensor(Dest d, const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return d.deliver(normal_tensors(mean, std, gen));
}
at::Tensor normal_tensor_float(Dest d, const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return d.deliver(normal_tensors(mean, at::scalar_tensor(std, at::TensorOptions().dtype(mean.scalar_type())), gen));
}
at::Tensor normal_float_tensor(Dest d, double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return d.deliver(normal_tensors(at::scalar_tensor(mean, at::TensorOptions().dtype(std.scalar_type())), std, gen));
}


at::Tensor& bernoulli_float_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return fill_from_uniform("aten::bernoulli_", self, gen, [&](Op& op, Value u) {
    return compare(op.g(), u, scalar_of(op, p, shape_of(self)), "LT", c10::kFloat);
  });
}
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  return fill_from_uniform("aten::bernoulli_", self, gen, [&](Op& op, Value u) {
    Value prob = broadcast_to(op.g(), convert(op.g(), op.in(p), c10::kFloat), shape_of(self));
    return compare(op.g(), u, prob, "LT", c10::kFloat);
  });
}
at::Tensor bernoulli(const at::Tensor& self, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return bernoulli_tensor_(out, self, gen);
}

at::Tensor& exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen) {
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  check_float_fill("exponential_", self);
  return fill_from_uniform("aten::exponential_", self, gen, [&](Op& op, Value u) {
    return exponential_from_uniform(op.g(), u, scalar_of(op, lambd, shape_of(self)));
  });
}

at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  return fill_from_uniform("aten::geometric_", self, gen, [&](Op& op, Value u) {
    return geometric_from_uniform(op.g(), u, scalar_of(op, std::log1p(-p), shape_of(self)));
  });
}

at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  check_float_fill("cauchy_", self);
  return fill_from_uniform("aten::cauchy_", self, gen, [&](Op& op, Value u) {
    Shape s = shape_of(self);
    return cauchy_from_uniform(op.g(), u, scalar_of(op, median, s), scalar_of(op, sigma, s));
  });
}

at::Tensor multinomial(const at::Tensor& self, int64_t n, bool replacement, std::optional<at::Generator> gen) {
  TORCH_CHECK(self.dim() == 1 || self.dim() == 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "multinomial only supports floating-point dtypes for input, got: ",
              self.scalar_type());
  int64_t categories = self.size(-1);
  TORCH_CHECK(n > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(replacement || n <= categories, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  int64_t rows = self.dim() == 1 ? 1 : self.size(0);
  at::Tensor out = at::empty(self.dim() == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{rows, n},
                             self.options().dtype(c10::kLong));
  Op op("aten::multinomial");
  Graph& g = op.g();
  Value p = reshape(g, convert(g, op.in(self), c10::kFloat), {rows, categories});
  Value r = lower::multinomial(g, op.rng_state(gen, out), p, n, replacement);
  op.write(out, reshape(g, r, shape_of(out)));
  op.run();
  return out;
}

at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  // Every value 0..n-1 must be exact in the result's dtype, as PyTorch checks.
  auto dt = out.scalar_type();
  if (c10::isIntegralType(dt, /*includeBool=*/false)) {
    AT_DISPATCH_INTEGRAL_TYPES(dt, "randperm", [&] {
      TORCH_CHECK(n <= 1 || n - 1 <= static_cast<int64_t>(std::numeric_limits<scalar_t>::max()),
                  "n is too large for result tensor type: '", out.toString(), "'");
    });
  }
  TORCH_CHECK(dt != at::kHalf || n <= (int64_t{1} << 11) + 1, "n cannot be greater than 2049 for Half type.");
  TORCH_CHECK(dt != at::kFloat || n <= (int64_t{1} << 24) + 1, "n cannot be greater than 2^24+1 for Float type.");
  TORCH_CHECK(dt != at::kDouble || n <= (int64_t{1} << 53) + 1, "n cannot be greater than 2^53+1 for Double type.");
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  Op op("aten::randperm");
  Graph& g = op.g();
  op.write(out, random_permutation(g, op.rng_state(gen, out), n));
  op.run();
  return out;
}

}  // namespace torch_tpu::aten
