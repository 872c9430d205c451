// Special functions of torch.special with no StableHLO or CHLO op, written
// with the builder: Cephes-style rational and Chebyshev approximations (as
// PyTorch's CPU kernels use) and loops for the orthogonal polynomials. Every
// function takes and returns values of one floating dtype (the caller computes
// half types in float32).
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower::special {

Value i0(Graph& g, Value x);
Value i0e(Graph& g, Value x);
// calc_i1 (torch.special.i1): float32 uses Cephes' shorter tables.
Value i1(Graph& g, Value x);
// modified_bessel_i1: the full tables in every dtype.
Value modified_bessel_i1(Graph& g, Value x);
Value ndtri(Graph& g, Value p);
Value log_ndtr(Graph& g, Value x);
Value erfcx(Graph& g, Value x);
Value bessel_j0(Graph& g, Value x);
Value bessel_j1(Graph& g, Value x);
Value bessel_y0(Graph& g, Value x);
Value bessel_y1(Graph& g, Value x);
// Modified Bessel functions of the second kind; `scaled` multiplies by exp(x).
Value modified_bessel_k0(Graph& g, Value x, bool scaled);
Value modified_bessel_k1(Graph& g, Value x, bool scaled);
Value spherical_bessel_j0(Graph& g, Value x);
Value airy_ai(Graph& g, Value x);

enum class Polynomial {
  ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW,
  ShiftedChebyshevT, ShiftedChebyshevU, ShiftedChebyshevV, ShiftedChebyshevW,
  HermiteH, HermiteHe, LaguerreL, LegendreP,
};
// P_n(x) with n truncated to an integer, elementwise (x and n share shape and
// dtype). The recurrence runs on the device up to the largest n.
Value polynomial(Graph& g, Polynomial kind, Value x, Value n);

}  // namespace torch_tpu::lower::special
