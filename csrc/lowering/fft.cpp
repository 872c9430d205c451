// Fourier transforms as graphs.
#include "lowering/fft.h"

namespace torch_tpu::lower {

namespace {

const char* kFftTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};

}  // namespace

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

Value normalize(Graph& g, Value v, int64_t normalization, int64_t n, bool inverse) {
  double scale = normalization == 1 ? 1.0 / std::sqrt(static_cast<double>(n)) : normalization == 2 ? 1.0 / n : 1.0;
  if (inverse) scale *= n;
  if (scale == 1.0) return v;
  return binary(g, "multiply", v, constant_like(g, v, scale));
}

}  // namespace torch_tpu::lower
