// Fourier transforms as graphs: stablehlo.fft along one dimension at a time,
// and PyTorch's normalization modes.
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower {

enum FftType { kFft, kIfft, kRfft, kIrfft };

// One stablehlo.fft along dimension `dim` of v, whose result has `length`
// elements there (the onesided length n/2+1 for kRfft; n for kIrfft, which
// reads n/2+1 elements).
Value fft_along(Graph& g, Value v, int64_t dim, FftType type, int64_t length);

// PyTorch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n. XLA's inverse
// transforms already divide by n, so they pass `inverse` to be multiplied back.
Value normalize(Graph& g, Value v, int64_t normalization, int64_t n, bool inverse);

}  // namespace torch_tpu::lower
