// Elementwise arithmetic with PyTorch's semantics as graphs: predicates, the
// four operations with promotion-free operands, NaN-propagating extremes,
// log-add-exp, Python-style remainder and floor division, gcd, activations'
// closed forms.
#pragma once

#include "lowering/builder.h"

namespace torch_tpu::lower {

Value is_nan(Graph& g, Value x);

Value is_zero(Graph& g, Value x);

Value is_negative(Graph& g, Value x);

Value mul(Graph& g, Value a, Value b);

Value add(Graph& g, Value a, Value b);

Value sub(Graph& g, Value a, Value b);

Value div(Graph& g, Value a, Value b);

// The sign bit (true for -0.0 and negative NaNs too, like std::signbit).
Value sign_bit(Graph& g, Value x);

// Python's modulo: the remainder takes the divisor's sign.
Value python_remainder(Graph& g, Value a, Value b);

// floor(a / b) as PyTorch's div_floor computes it.
Value floor_divide_values(Graph& g, Value a, Value b);

// The larger / smaller of two values, NaN if either is (XLA's CPU maximum
// returns the first operand when only the second is NaN).
Value max_propagating_nan(Graph& g, Value a, Value b);
Value min_propagating_nan(Graph& g, Value a, Value b);

// log(exp(a) + exp(b)) without overflow, real or complex (PyTorch's CPU
// formula: the larger real part plus log1p(exp(min - max)); NaN anywhere in a
// complex operand makes both parts NaN; equal infinities are handled apart).
Value log_add_exp(Graph& g, Value a, Value b);

// Euclid's algorithm on the device, until every remainder is zero.
Value gcd_values(Graph& g, Value a, Value b);

Value hardsigmoid_value(Graph& g, Value x);

Value in_open_range(Graph& g, Value x, double lo, double hi);

Value softplus_value(Graph& g, Value x);

Value real_sign(Graph& g, Value x);

// A one-operand CHLO op (erf, lgamma, digamma, ...): same type out as in.
Value chlo(Graph& g, const char* name, Value x);
// A two-operand CHLO op (next_after, zeta, polygamma): the first operand's type out.
Value chlo(Graph& g, const char* name, Value a, Value b);

// 1 where v holds an inf or NaN (v - v is NaN exactly there), as bool.
Value not_finite(Graph& g, Value v);

}  // namespace torch_tpu::lower
