"""Table-driven comparison of ATen ops on tpu against CPU PyTorch.

Each `Op` is a function of tensors that returns a tensor (or a tuple of them); it
runs identically on CPU inputs and on equal tpu inputs. Values, dtype and shape
must match; for float dtypes the gradients of every floating input (after a
backward of a random upstream gradient) must match too. The elementwise,
reduction, matmul and softmax families also run on non-contiguous inputs
(transposed, sliced with a step, expanded), taken as views of a tpu base so the
backward goes through the view as well.

When CPU itself rejects a case because the dtype is not implemented there, the
case is skipped; when CPU raises for another reason, tpu must raise the same
exception type.
"""
from typing import Callable, NamedTuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import (ALL_DTYPES, FLOAT_DTYPES, HALF_DTYPES, INT_DTYPES, assert_close_cpu, dtype_id,
                      layout_applies, layout_recipe, make_tensor, tolerances)

NUM = FLOAT_DTYPES + INT_DTYPES
INT_BOOL = INT_DTYPES + (torch.bool,)
F32 = (torch.float32,)


class Op(NamedTuple):
    name: str
    fn: Callable
    dtypes: tuple
    shapes: tuple  # one entry per case: the shapes of the op's tensor inputs
    kind: str = "elementwise"  # picks tolerances (see conftest.tolerances)
    grad: bool = True  # check gradients for float dtypes
    layouts: bool = False  # also run on non-contiguous inputs
    int_range: tuple = (-8, 8)  # [low, high) of integer inputs


# --------------------------------------------------------------------------- helpers used by op functions


def idx(like, values):
    """A constant int64 tensor on `like`'s device (indices, targets)."""
    return torch.tensor(values, dtype=torch.int64, device=like.device)


def pos(x):
    """Strictly positive values of x's dtype (divisors, log/sqrt arguments)."""
    return x.abs() + (0.5 if x.dtype.is_floating_point else 1)


def nonzero(x):
    """x with zeros replaced by one, keeping signs (divisors for floor/trunc/remainder)."""
    return torch.where(x == 0, torch.ones_like(x), x)


def fixed_mask(x, shape=None):
    """A data-independent boolean mask of x's shape (or `shape`) on x's device."""
    shape = x.shape if shape is None else shape
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, device=x.device) % 3 == 0).reshape(shape)


def fill_value(dtype):
    return True if dtype == torch.bool else (7 if not dtype.is_floating_point else -1.5)


def ints_or(x, for_int, for_float):
    return for_float if x.dtype.is_floating_point else for_int


# --------------------------------------------------------------------------- shapes

UNARY = (((3, 5),), ((),), ((0, 4),), ((2, 3, 4),))
UNARY_FEW = (((3, 5),), ((),), ((0, 4),))
BINARY = (((4, 5), (4, 5)), ((4, 1), (1, 5)), ((2, 3, 4), (4,)), ((), (3, 4)), ((), ()), ((0, 3), (3,)))
BINARY_FEW = (((4, 5), (4, 5)), ((4, 1), (1, 5)), ((), (3, 4)))
FULL_RED = (((3, 4, 5),), ((),), ((0, 4),))
FULL_RED_NONEMPTY = (((3, 4, 5),), ((),))
DIM_RED = (((3, 4, 5),), ((0, 4, 5),))
DIM_RED_ONE = (((3, 4, 5),),)

# --------------------------------------------------------------------------- the table

OPS = [
    # ---- binary arithmetic
    Op("add", lambda a, b: a + b, ALL_DTYPES, BINARY, layouts=True),
    Op("add_alpha", lambda a, b: torch.add(a, b, alpha=ints_or(a, 3, 2.5)), NUM, BINARY_FEW),
    Op("sub", lambda a, b: a - b, NUM, BINARY, layouts=True),
    Op("sub_alpha", lambda a, b: torch.sub(a, b, alpha=ints_or(a, 2, 0.5)), NUM, BINARY_FEW),
    Op("mul", lambda a, b: a * b, ALL_DTYPES, BINARY, layouts=True),
    Op("div", lambda a, b: a / pos(b), NUM, BINARY, layouts=True),
    Op("div_trunc", lambda a, b: torch.div(a, nonzero(b), rounding_mode="trunc"), NUM, BINARY),
    Op("div_floor", lambda a, b: torch.div(a, nonzero(b), rounding_mode="floor"), NUM, BINARY),
    Op("floor_divide", lambda a, b: a // nonzero(b), NUM, BINARY_FEW),
    Op("remainder", lambda a, b: torch.remainder(a, nonzero(b)), NUM, BINARY),
    Op("fmod", lambda a, b: torch.fmod(a, nonzero(b)), NUM, BINARY_FEW),
    Op("pow", lambda a, b: pos(a).pow(b) if a.is_floating_point() else a.pow(b.abs() % 4), NUM, BINARY,
       layouts=True),
    Op("maximum", torch.maximum, NUM, BINARY_FEW),
    Op("minimum", torch.minimum, NUM, BINARY_FEW),
    # ---- with Python scalars and 0-d CPU tensors
    Op("add_int_scalar", lambda a: a + 2, NUM, UNARY, layouts=True),
    Op("add_float_scalar", lambda a: a + 2.5, NUM, UNARY),
    Op("add_scalar_alpha", lambda a: torch.add(a, 2, alpha=3), NUM, UNARY_FEW),
    Op("rsub_scalar", lambda a: 3 - a, NUM, UNARY_FEW),
    Op("mul_scalar", lambda a: a * -1.5, NUM, UNARY, layouts=True),
    Op("mul_bool_scalar", lambda a: a * True, ALL_DTYPES, UNARY_FEW),
    Op("div_scalar", lambda a: a / 4, NUM, UNARY),
    Op("rdiv_scalar", lambda a: 2 / pos(a), NUM, UNARY_FEW),
    Op("remainder_scalar", lambda a: a % 3, NUM, UNARY_FEW),
    Op("floordiv_scalar", lambda a: a // 3, NUM, UNARY_FEW),
    Op("pow_scalar_2", lambda a: a ** 2, NUM, UNARY, layouts=True),
    Op("pow_scalar_3", lambda a: a.pow(3), NUM, UNARY_FEW),
    Op("pow_scalar_half", lambda a: pos(a) ** 0.5, FLOAT_DTYPES, UNARY_FEW),
    Op("pow_scalar_neg", lambda a: pos(a) ** -1.5, FLOAT_DTYPES, UNARY_FEW),
    Op("rpow_scalar", lambda a: 2 ** ints_or(a, a.abs(), a), NUM, UNARY_FEW),
    Op("mul_cpu_0d", lambda a: a * torch.tensor(1.5), FLOAT_DTYPES, UNARY_FEW),
    Op("add_cpu_0d_int", lambda a: a + torch.tensor(3), NUM, UNARY_FEW),
    # ---- comparisons and logic
    *[Op(n, f, ALL_DTYPES, BINARY_FEW, layouts=True) for n, f in [
        ("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le), ("gt", torch.gt), ("ge", torch.ge)]],
    *[Op(n, f, NUM, UNARY_FEW) for n, f in [
        ("eq_scalar", lambda a: a == 1), ("gt_scalar", lambda a: a > 0), ("le_float_scalar", lambda a: a <= 0.5),
        ("ne_scalar", lambda a: a != 0)]],
    Op("logical_and", torch.logical_and, ALL_DTYPES, BINARY_FEW),
    Op("logical_or", torch.logical_or, ALL_DTYPES, BINARY_FEW),
    Op("logical_xor", torch.logical_xor, ALL_DTYPES, BINARY_FEW),
    Op("logical_not", torch.logical_not, ALL_DTYPES, UNARY_FEW),
    Op("bitwise_and", torch.bitwise_and, INT_BOOL, BINARY_FEW),
    Op("bitwise_or", torch.bitwise_or, INT_BOOL, BINARY_FEW),
    Op("bitwise_xor", torch.bitwise_xor, INT_BOOL, BINARY_FEW),
    Op("bitwise_not", torch.bitwise_not, INT_BOOL, UNARY_FEW),
    Op("bitwise_and_scalar", lambda a: a & 5, INT_DTYPES, UNARY_FEW),
    Op("shift_left", lambda a, b: a << (b.abs() % 4), INT_DTYPES, BINARY_FEW),
    Op("shift_right", lambda a, b: a >> (b.abs() % 4), INT_DTYPES, BINARY_FEW),
    # ---- unary math
    Op("abs", torch.abs, NUM, UNARY, layouts=True),
    Op("neg", torch.neg, NUM, UNARY, layouts=True),
    Op("exp", torch.exp, FLOAT_DTYPES, UNARY, layouts=True),
    Op("exp_int", torch.exp, INT_DTYPES, UNARY_FEW),
    Op("log", lambda a: torch.log(pos(a)), NUM, UNARY),
    Op("log1p", lambda a: torch.log1p(a.abs()), FLOAT_DTYPES, UNARY),
    Op("expm1", torch.expm1, FLOAT_DTYPES, UNARY),
    Op("sqrt", lambda a: torch.sqrt(pos(a)), NUM, UNARY, layouts=True),
    Op("rsqrt", lambda a: torch.rsqrt(pos(a)), FLOAT_DTYPES, UNARY),
    Op("sin", torch.sin, FLOAT_DTYPES, UNARY),
    Op("cos", torch.cos, FLOAT_DTYPES, UNARY),
    Op("tanh", torch.tanh, FLOAT_DTYPES, UNARY, layouts=True),
    Op("sigmoid", torch.sigmoid, FLOAT_DTYPES, UNARY),
    Op("erf", torch.erf, FLOAT_DTYPES, UNARY),
    Op("floor", lambda a: torch.floor(a * 3), NUM, UNARY),
    Op("ceil", lambda a: torch.ceil(a * 3), NUM, UNARY),
    Op("round", lambda a: torch.round(a * 3), NUM, UNARY),
    Op("round_half_even", lambda a: torch.round(a.floor() + 0.5), FLOAT_DTYPES, UNARY_FEW),
    Op("round_decimals", lambda a: torch.round(a, decimals=1), F32, UNARY_FEW),
    Op("trunc", lambda a: torch.trunc(a * 3), NUM, UNARY),
    Op("sign", torch.sign, NUM, UNARY),
    Op("reciprocal", lambda a: torch.reciprocal(pos(a)), FLOAT_DTYPES, UNARY),
    Op("square", torch.square, NUM, UNARY_FEW),
    # ---- activations
    Op("relu", F.relu, NUM, UNARY, layouts=True),
    Op("gelu", F.gelu, FLOAT_DTYPES, UNARY),
    Op("gelu_tanh", lambda a: F.gelu(a, approximate="tanh"), FLOAT_DTYPES, UNARY),
    Op("silu", F.silu, FLOAT_DTYPES, UNARY, layouts=True),
    Op("leaky_relu", lambda a: F.leaky_relu(a, 0.1), FLOAT_DTYPES, UNARY),
    Op("elu", F.elu, FLOAT_DTYPES, UNARY),
    Op("elu_alpha", lambda a: F.elu(a, alpha=0.5), FLOAT_DTYPES, UNARY_FEW),
    Op("softplus", F.softplus, FLOAT_DTYPES, UNARY),
    Op("softplus_beta", lambda a: F.softplus(a, beta=2.0, threshold=1.0), FLOAT_DTYPES, UNARY_FEW),
    Op("hardtanh", F.hardtanh, FLOAT_DTYPES, UNARY),
    Op("hardtanh_bounds", lambda a: F.hardtanh(a, -0.5, 0.7), FLOAT_DTYPES, UNARY_FEW),
    Op("relu6", lambda a: F.relu6(a * 4), FLOAT_DTYPES, UNARY_FEW),
    # ---- where / clamp
    Op("where", lambda a, b: torch.where(a > b, a, b), ALL_DTYPES, BINARY_FEW, layouts=True),
    Op("where_scalar", lambda a: torch.where(a > 0, a, 0), NUM, UNARY_FEW),
    Op("where_three", lambda c, a, b: torch.where(c > 0, a, b), NUM, (((3, 1), (1, 4), (3, 4)), ((), (2, 3), ()))),
    Op("clamp", lambda a: a.clamp(ints_or(a, -3, -0.5), ints_or(a, 4, 0.7)), NUM, UNARY, layouts=True),
    Op("clamp_min", lambda a: a.clamp(min=ints_or(a, -1, -0.2)), NUM, UNARY_FEW),
    Op("clamp_max", lambda a: a.clamp(max=ints_or(a, 2, 0.3)), NUM, UNARY_FEW),
    Op("clamp_tensor", lambda a, lo: a.clamp(lo, lo + 2), NUM, BINARY_FEW),
    Op("clamp_tensor_min", lambda a, lo: torch.clamp(a, min=lo), NUM, BINARY_FEW),
    Op("clamp_tensor_max", lambda a, hi: torch.clamp(a, max=hi), NUM, BINARY_FEW),
    # ---- full reductions
    Op("sum", lambda a: a.sum(), ALL_DTYPES, FULL_RED, "reduction", layouts=True),
    Op("sum_dtype", lambda a: a.sum(dtype=torch.float32), ALL_DTYPES, FULL_RED, "reduction"),
    Op("mean", lambda a: a.mean(), FLOAT_DTYPES, FULL_RED, "reduction", layouts=True),
    Op("prod", lambda a: a.prod(), NUM, (((2, 3, 2),), ((),), ((0, 3),)), "reduction", int_range=(-2, 3)),
    Op("amax", lambda a: a.amax(), NUM, FULL_RED_NONEMPTY, "reduction"),
    Op("amin", lambda a: a.amin(), NUM, FULL_RED_NONEMPTY, "reduction"),
    Op("max_full", lambda a: a.max(), NUM, FULL_RED_NONEMPTY, "reduction", layouts=True),
    Op("min_full", lambda a: a.min(), NUM, FULL_RED_NONEMPTY, "reduction"),
    Op("argmax_full", lambda a: a.argmax(), NUM, FULL_RED_NONEMPTY, "reduction"),
    Op("argmin_full", lambda a: a.argmin(), NUM, FULL_RED_NONEMPTY, "reduction"),
    Op("any_full", lambda a: a.any(), ALL_DTYPES, FULL_RED, "reduction"),
    Op("all_full", lambda a: a.all(), ALL_DTYPES, FULL_RED, "reduction"),
    Op("var_full", lambda a: a.var(), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("std_full", lambda a: a.std(), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("norm_full", lambda a: a.norm(), FLOAT_DTYPES, FULL_RED, "reduction"),
    # ---- reductions over dims
    Op("sum_dim", lambda a: a.sum(1), ALL_DTYPES, DIM_RED, "reduction", layouts=True),
    Op("sum_dims_keepdim", lambda a: a.sum((0, 2), keepdim=True), ALL_DTYPES, DIM_RED, "reduction", layouts=True),
    Op("sum_neg_dim", lambda a: a.sum(-1), NUM, DIM_RED, "reduction"),
    Op("sum_dim_dtype", lambda a: a.sum(1, dtype=torch.float32), ALL_DTYPES, DIM_RED, "reduction"),
    Op("mean_dim", lambda a: a.mean(1), FLOAT_DTYPES, DIM_RED, "reduction", layouts=True),
    Op("mean_dims_keepdim", lambda a: a.mean((0, -1), keepdim=True), FLOAT_DTYPES, DIM_RED, "reduction"),
    Op("mean_dtype", lambda a: a.mean(-1, dtype=torch.float32), FLOAT_DTYPES, DIM_RED, "reduction"),
    Op("amax_dim", lambda a: a.amax(1), NUM, DIM_RED, "reduction", layouts=True),
    Op("amax_dims", lambda a: a.amax((0, 2)), NUM, DIM_RED_ONE, "reduction"),
    Op("amin_dim_keepdim", lambda a: a.amin(-1, keepdim=True), NUM, DIM_RED, "reduction"),
    Op("max_dim", lambda a: tuple(a.max(1)), NUM, DIM_RED, "reduction", layouts=True),
    Op("max_dim_keepdim", lambda a: tuple(a.max(-1, keepdim=True)), NUM, DIM_RED, "reduction"),
    Op("min_dim", lambda a: tuple(a.min(0)), NUM, DIM_RED_ONE, "reduction", layouts=True),
    Op("argmax_dim", lambda a: a.argmax(1), NUM, DIM_RED, "reduction", layouts=True),
    Op("argmax_keepdim", lambda a: a.argmax(-1, keepdim=True), NUM, DIM_RED, "reduction"),
    Op("argmin_dim", lambda a: a.argmin(0), NUM, DIM_RED_ONE, "reduction"),
    Op("var_dim", lambda a: a.var(1), FLOAT_DTYPES, DIM_RED, "reduction", layouts=True),
    Op("var_correction0", lambda a: a.var((0, 2), correction=0), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("var_unbiased_false", lambda a: a.var(-1, unbiased=False, keepdim=True), FLOAT_DTYPES, DIM_RED_ONE,
       "reduction"),
    Op("std_dim", lambda a: a.std(1), FLOAT_DTYPES, DIM_RED, "reduction", layouts=True),
    Op("std_correction2", lambda a: a.std(-1, correction=2), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("std_unbiased_false", lambda a: torch.std(a, 0, unbiased=False), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("norm_p2_dim", lambda a: a.norm(2, dim=1), FLOAT_DTYPES, DIM_RED, "reduction", layouts=True),
    Op("norm_p1_dim", lambda a: a.norm(1, dim=-1, keepdim=True), FLOAT_DTYPES, DIM_RED, "reduction"),
    Op("norm_inf_dims", lambda a: a.norm(float("inf"), dim=(0, 2)), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("vector_norm_inf", lambda a: torch.linalg.vector_norm(a, float("inf"), dim=1), FLOAT_DTYPES, DIM_RED_ONE,
       "reduction"),
    Op("any_dim", lambda a: a.any(1), ALL_DTYPES, DIM_RED, "reduction"),
    Op("all_dim_keepdim", lambda a: a.all(-1, keepdim=True), ALL_DTYPES, DIM_RED, "reduction"),
    Op("prod_dim", lambda a: a.prod(1), NUM, (((3, 4, 2),), ((0, 4, 2),)), "reduction", int_range=(-2, 3),
       layouts=True),
    Op("prod_dim_keepdim", lambda a: a.prod(-1, keepdim=True), NUM, (((3, 4, 2),),), "reduction",
       int_range=(-2, 3)),
    Op("prod_dtype", lambda a: a.prod(0, dtype=torch.float32), NUM, (((3, 4, 2),),), "reduction",
       int_range=(-2, 3)),
    Op("logsumexp", lambda a: torch.logsumexp(a, 1), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    # ---- matmul family
    Op("mm", torch.mm, FLOAT_DTYPES, (((4, 6), (6, 3)), ((4, 1), (1, 3)), ((0, 6), (6, 3)), ((4, 0), (0, 3))),
       "matmul", layouts=True),
    Op("bmm", torch.bmm, FLOAT_DTYPES, (((2, 4, 6), (2, 6, 3)),), "matmul", layouts=True),
    Op("addmm", lambda c, a, b: torch.addmm(c, a, b), FLOAT_DTYPES, (((3,), (4, 6), (6, 3)), ((4, 3), (4, 6), (6, 3))),
       "matmul"),
    Op("addmm_alpha_beta", lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), FLOAT_DTYPES,
       (((4, 3), (4, 6), (6, 3)),), "matmul"),
    Op("matmul", torch.matmul, FLOAT_DTYPES,
       (((2, 1, 4, 6), (3, 6, 5)), ((2, 4, 6), (6, 3)), ((6,), (6, 3)), ((4, 6), (6,)), ((6,), (6,)),
        ((5, 6), (2, 6, 3))), "matmul", layouts=True),
    Op("matmul_op", lambda a, b: a @ b.transpose(-1, -2), FLOAT_DTYPES, (((2, 4, 6), (2, 3, 6)),), "matmul"),
    Op("linear", F.linear, FLOAT_DTYPES, (((5, 6), (3, 6), (3,)), ((2, 5, 6), (3, 6), (3,))), "matmul"),
    Op("linear_no_bias", F.linear, FLOAT_DTYPES, (((5, 6), (3, 6)), ((2, 5, 6), (3, 6))), "matmul", layouts=True),
    # ---- shape and indexing ops
    Op("cat0", lambda a, b: torch.cat([a, b], 0), ALL_DTYPES, (((2, 3), (4, 3)), ((2, 3), (0, 3)))),
    Op("cat1", lambda a, b: torch.cat([a, b], 1), ALL_DTYPES, (((2, 3), (2, 5)),), layouts=True),
    Op("cat_three_neg_dim", lambda a, b, c: torch.cat([a, b, c], -1), FLOAT_DTYPES, (((2, 2, 1), (2, 2, 3), (2, 2, 2)),)),
    Op("stack0", lambda a, b: torch.stack([a, b]), ALL_DTYPES, (((2, 3), (2, 3)), ((), ()))),
    Op("stack_last", lambda a, b: torch.stack([a, b], -1), ALL_DTYPES, (((2, 3), (2, 3)),)),
    Op("split_int", lambda a: a.split(2, dim=1), ALL_DTYPES, (((3, 5),),)),
    Op("split_sizes", lambda a: a.split([1, 3, 1], dim=1), ALL_DTYPES, (((3, 5),),)),
    Op("chunk", lambda a: a.chunk(3, dim=0), ALL_DTYPES, (((7, 2),),)),
    Op("flatten", lambda a: a.flatten(1), ALL_DTYPES, (((2, 3, 4),),), layouts=True),
    Op("flatten_all", lambda a: a.flatten(), ALL_DTYPES, (((2, 3, 4),), ((),))),
    Op("index_select", lambda a: a.index_select(1, idx(a, [0, 3, 3, 1])), ALL_DTYPES, (((3, 4),),), layouts=True),
    Op("index_select0", lambda a: a.index_select(0, idx(a, [2, 0])), ALL_DTYPES, (((3, 4),),)),
    Op("gather", lambda a: a.gather(1, idx(a, [[0, 1], [3, 3], [2, 0]])), ALL_DTYPES, (((3, 4),),), layouts=True),
    Op("gather0", lambda a: torch.gather(a, 0, idx(a, [[1, 0, 2, 2]])), ALL_DTYPES, (((3, 4),),)),
    Op("embedding", lambda w: F.embedding(idx(w, [[1, 2, 1], [4, 0, 3]]), w), FLOAT_DTYPES, (((5, 3),),)),
    Op("embedding_padding", lambda w: F.embedding(idx(w, [1, 0, 1]), w, padding_idx=0), FLOAT_DTYPES, (((5, 3),),)),
    Op("masked_fill", lambda a: a.masked_fill(fixed_mask(a), fill_value(a.dtype)), ALL_DTYPES,
       (((3, 4),), ((),), ((0, 2),)), layouts=True),
    Op("masked_fill_broadcast_mask", lambda a: a.masked_fill(fixed_mask(a, (4,)), fill_value(a.dtype)), ALL_DTYPES,
       (((3, 4),),)),
    Op("masked_fill_0d", lambda a: a.masked_fill(fixed_mask(a), torch.tensor(fill_value(a.dtype), dtype=a.dtype,
                                                                                device=a.device)),
       ALL_DTYPES, (((3, 4),),)),
    Op("masked_fill_cpu_0d", lambda a: a.masked_fill(fixed_mask(a), torch.tensor(fill_value(a.dtype), dtype=a.dtype)),
       ALL_DTYPES, (((3, 4),),)),
    Op("masked_fill_data_mask", lambda a, b: a.masked_fill(b > 0, 0), NUM, BINARY_FEW),
    # ---- softmax, normalization
    *[Op(f"softmax_dim{d}", (lambda d: lambda a: torch.softmax(a, d))(d), FLOAT_DTYPES, DIM_RED_ONE, "reduction",
         layouts=True) for d in (0, 1, -1)],
    *[Op(f"log_softmax_dim{d}", (lambda d: lambda a: F.log_softmax(a, d))(d), FLOAT_DTYPES, DIM_RED_ONE,
         "reduction", layouts=True) for d in (0, -1)],
    Op("softmax_to_f32", lambda a: torch.softmax(a, -1, dtype=torch.float32), FLOAT_DTYPES, DIM_RED_ONE, "reduction"),
    Op("softmax_0d", lambda a: torch.softmax(a, 0), FLOAT_DTYPES, (((),),), "reduction"),
    Op("layer_norm_affine", lambda x, w, b: F.layer_norm(x, (5,), w, b), FLOAT_DTYPES, (((3, 4, 5), (5,), (5,)),),
       "reduction", layouts=True),
    Op("layer_norm_plain", lambda x: F.layer_norm(x, (5,)), FLOAT_DTYPES, (((3, 4, 5),),), "reduction"),
    Op("layer_norm_2d", lambda x, w, b: F.layer_norm(x, (4, 5), w, b, eps=1e-3), FLOAT_DTYPES,
       (((2, 4, 5), (4, 5), (4, 5)),), "reduction"),
    Op("layer_norm_weight_only", lambda x, w: F.layer_norm(x, (5,), w), FLOAT_DTYPES, (((3, 5), (5,)),), "reduction"),
    # ---- losses (targets are constants; weights are not differentiated, as on CPU)
    *[Op(f"cross_entropy_{r}", (lambda r: lambda x: F.cross_entropy(x, idx(x, [0, 5, 2, 2]), reduction=r))(r),
         FLOAT_DTYPES, (((4, 6),),), "reduction") for r in ("mean", "sum", "none")],
    Op("cross_entropy_ignore_index", lambda x: F.cross_entropy(x, idx(x, [0, 5, 2, 2]), ignore_index=2),
       FLOAT_DTYPES, (((4, 6),),), "reduction"),
    Op("cross_entropy_ignore_index_sum", lambda x: F.cross_entropy(x, idx(x, [0, -100, 2, 1]), reduction="sum"),
       FLOAT_DTYPES, (((4, 6),),), "reduction"),
    Op("cross_entropy_label_smoothing", lambda x: F.cross_entropy(x, idx(x, [0, 5, 2, 2]), label_smoothing=0.1),
       FLOAT_DTYPES, (((4, 6),),), "reduction"),
    Op("cross_entropy_smoothing_ignore_none",
       lambda x: F.cross_entropy(x, idx(x, [0, 5, 2, 3]), label_smoothing=0.2, ignore_index=5, reduction="none"),
       FLOAT_DTYPES, (((4, 6),),), "reduction"),
    Op("cross_entropy_weight", lambda x, w: F.cross_entropy(x, idx(x, [0, 5, 2, 2]), weight=pos(w).detach()),
       FLOAT_DTYPES, (((4, 6), (6,)),), "reduction"),
    Op("cross_entropy_probs", lambda x, t: F.cross_entropy(x, torch.softmax(t, 1).detach()), FLOAT_DTYPES,
       (((4, 6), (4, 6)),), "reduction"),
    Op("cross_entropy_spatial", lambda x: F.cross_entropy(x, idx(x, [[0, 5, 1], [2, 2, 4]])), FLOAT_DTYPES,
       (((2, 6, 3),),), "reduction"),
    *[Op(f"nll_loss_{r}", (lambda r: lambda x: F.nll_loss(F.log_softmax(x, 1), idx(x, [1, 0, 4, 4]), reduction=r))(r),
         FLOAT_DTYPES, (((4, 6),),), "reduction") for r in ("mean", "sum", "none")],
    Op("nll_loss_weight", lambda x, w: F.nll_loss(x, idx(x, [1, 0, 4, 4]), weight=pos(w).detach()), FLOAT_DTYPES,
       (((4, 6), (6,)),), "reduction"),
    Op("nll_loss_ignore_index", lambda x: F.nll_loss(x, idx(x, [1, 0, 4, 4]), ignore_index=4), FLOAT_DTYPES,
       (((4, 6),),), "reduction"),
    *[Op(f"mse_loss_{r}", (lambda r: lambda a, b: F.mse_loss(a, b, reduction=r))(r), FLOAT_DTYPES,
         (((4, 6), (4, 6)), ((), ())), "reduction") for r in ("mean", "sum", "none")],
]

OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate op names in the table"


def _shape_id(shapes):
    return "_".join("x".join(map(str, s)) if s else "0d" for s in shapes)


# Edge shapes (0-d, empty, 3-d) are mostly dtype-independent: the secondary dtypes run only the
# first two shape cases of each op (the main one and, for binary ops, broadcasting).
SECONDARY_DTYPES = (torch.bfloat16, torch.float16, torch.int32)


def _cases():
    for op in OPS:
        for dtype in op.dtypes:
            for shapes in (op.shapes[:2] if dtype in SECONDARY_DTYPES else op.shapes):
                yield pytest.param(op.name, dtype, shapes, id=f"{op.name}-{dtype_id(dtype)}-{_shape_id(shapes)}")


def _layout_cases():
    for op in OPS:
        if not op.layouts:
            continue
        shapes = op.shapes[0]
        dtype = torch.float32 if torch.float32 in op.dtypes else op.dtypes[0]
        for layout in ("transposed", "sliced", "expanded"):
            if any(layout_applies(layout, s) for s in shapes):
                yield pytest.param(op.name, dtype, shapes, layout, id=f"{op.name}-{dtype_id(dtype)}-{layout}")


# --------------------------------------------------------------------------- runner


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _cpu_unsupported(err):
    text = str(err)
    return "not implemented for" in text or "not supported" in text.lower()


def run_op(op, dtype, shapes, layout="contiguous"):
    """Runs op on CPU and tpu inputs of `shapes` (each in `layout` where it applies) and compares
    outputs and, for float dtypes, input gradients."""
    grad = op.grad and dtype.is_floating_point
    cpu_leaves, tpu_leaves, cpu_in, tpu_in = [], [], [], []
    for i, shape in enumerate(shapes):
        lay = layout if layout_applies(layout, shape) else "contiguous"
        base_shape, view = layout_recipe(shape, lay)
        lo, hi = op.int_range if not dtype.is_floating_point else (None, None)
        base = make_tensor(base_shape, dtype, seed=17 * i + 1, low=lo, high=hi)
        c_leaf = base.clone().requires_grad_(grad)
        t_leaf = base.to("tpu").requires_grad_(grad)
        cpu_leaves.append(c_leaf)
        tpu_leaves.append(t_leaf)
        cpu_in.append(view(c_leaf))
        tpu_in.append(view(t_leaf))

    try:
        cpu_out = op.fn(*cpu_in)
    except (RuntimeError, NotImplementedError) as err:
        if _cpu_unsupported(err):
            pytest.skip(f"CPU PyTorch does not support this case: {err}")
        with pytest.raises(type(err)):
            op.fn(*tpu_in)
            torch.tpu.synchronize()
        return
    tpu_out = op.fn(*tpu_in)
    assert_close_cpu(tpu_out, cpu_out, kind=op.kind)

    if not grad:
        return
    pairs = [(c, t) for c, t in zip(_flat(cpu_out), _flat(tpu_out)) if c.requires_grad]
    if not pairs:
        return
    g = torch.Generator().manual_seed(99)
    cpu_loss, tpu_loss = 0, 0
    for c, t in pairs:
        up = torch.randn(c.shape, generator=g).to(c.dtype)
        cpu_loss = cpu_loss + (c * up).sum()
        tpu_loss = tpu_loss + (t * up.to("tpu")).sum()
    try:
        cpu_loss.backward()
    except RuntimeError as err:
        if "not implemented" not in str(err):
            raise
        return  # CPU has no derivative for this op either
    tpu_loss.backward()
    for i, (c, t) in enumerate(zip(cpu_leaves, tpu_leaves)):
        if c.grad is None:
            assert t.grad is None, f"input {i}: tpu has a gradient where CPU has none"
            continue
        assert t.grad is not None, f"input {i}: tpu has no gradient"
        rtol, atol = tolerances(dtype, "matmul" if op.kind == "matmul" else "reduction")
        assert_close_cpu(t.grad, c.grad, rtol, atol, msg=f"grad of input {i}: ")


@pytest.mark.parametrize("name, dtype, shapes", list(_cases()))
def test_op(mode, name, dtype, shapes):
    run_op(OPS_BY_NAME[name], dtype, shapes)


@pytest.mark.parametrize("name, dtype, shapes, layout", list(_layout_cases()))
def test_op_non_contiguous(mode, name, dtype, shapes, layout):
    run_op(OPS_BY_NAME[name], dtype, shapes, layout)


# --------------------------------------------------------------------------- ties and special values


@pytest.mark.parametrize("fn", [lambda a: tuple(a.max(1)), lambda a: tuple(a.min(1)), lambda a: a.argmax(1),
                                lambda a: a.argmin(-1), lambda a: a.argmax(), lambda a: a.amax(1),
                                lambda a: a.max()], ids=["max", "min", "argmax", "argmin", "argmax_full", "amax",
                                                         "max_full"])
@pytest.mark.parametrize("values", ["ties", "nan", "inf"])
def test_reduction_ties_and_specials(mode, fn, values):
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, -7.0, 5.0]])
    if values == "nan":
        x[0, 2] = float("nan")
        x[2, 0] = float("nan")
    if values == "inf":
        x[0, 1] = float("inf")
        x[2, 2] = -float("inf")
    assert_close_cpu(fn(x.tpu()), fn(x))


@pytest.mark.parametrize("fn", [torch.exp, torch.log, torch.sqrt, torch.tanh, torch.sigmoid, torch.abs, torch.sign,
                                torch.floor, torch.reciprocal, F.relu, lambda a: a * 0, lambda a: a / 0],
                         ids=["exp", "log", "sqrt", "tanh", "sigmoid", "abs", "sign", "floor", "reciprocal", "relu",
                              "mul0", "div0"])
def test_unary_special_values(mode, fn):
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 1e-30, 88.0, -100.0])
    assert_close_cpu(fn(x.tpu()), fn(x))


# --------------------------------------------------------------------------- creation


def _fill(dtype):
    return True if dtype == torch.bool else (3 if not dtype.is_floating_point else 2.5)


CREATION = {
    "zeros": lambda dev, dt: torch.zeros(2, 3, dtype=dt, device=dev),
    "zeros_0d": lambda dev, dt: torch.zeros((), dtype=dt, device=dev),
    "zeros_empty": lambda dev, dt: torch.zeros(0, 3, dtype=dt, device=dev),
    "ones": lambda dev, dt: torch.ones(4, dtype=dt, device=dev),
    "full": lambda dev, dt: torch.full((2, 2), _fill(dt), dtype=dt, device=dev),
    "full_inferred": lambda dev, dt: torch.full((3,), _fill(dt), device=dev),
    "zeros_like": lambda dev, dt: torch.zeros_like(torch.ones(2, 3, device=dev), dtype=dt),
    "ones_like": lambda dev, dt: torch.ones_like(torch.zeros(3, dtype=dt, device=dev)),
    "full_like": lambda dev, dt: torch.full_like(torch.zeros(2, 2, dtype=dt, device=dev), _fill(dt)),
    "new_zeros": lambda dev, dt: torch.ones(1, dtype=dt, device=dev).new_zeros(2, 3),
    "new_ones": lambda dev, dt: torch.zeros(1, device=dev).new_ones((3,), dtype=dt),
    "new_full": lambda dev, dt: torch.zeros(1, dtype=dt, device=dev).new_full((2,), _fill(dt)),
    "tensor_literal": lambda dev, dt: torch.tensor([[1, 0], [3, 4]], dtype=dt, device=dev),
    "eye": lambda dev, dt: torch.eye(3, dtype=dt, device=dev),
    "eye_rect": lambda dev, dt: torch.eye(3, 4, dtype=dt, device=dev),
    "arange_dtype": lambda dev, dt: torch.arange(6, dtype=dt, device=dev) if dt != torch.bool else torch.ones(
        2, dtype=dt, device=dev),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation(mode, name, dtype):
    assert_close_cpu(CREATION[name]("tpu", dtype), CREATION[name]("cpu", dtype), check_stride=True)


EMPTY_CREATION = {
    "empty": lambda dev, dt: torch.empty(2, 3, dtype=dt, device=dev),
    "empty_0d": lambda dev, dt: torch.empty((), dtype=dt, device=dev),
    "empty_zero": lambda dev, dt: torch.empty(0, 5, dtype=dt, device=dev),
    "empty_like": lambda dev, dt: torch.empty_like(torch.zeros(3, 2, device=dev), dtype=dt),
    "empty_like_transposed": lambda dev, dt: torch.empty_like(torch.zeros(3, 2, dtype=dt, device=dev).t()),
    "new_empty": lambda dev, dt: torch.zeros(1, dtype=dt, device=dev).new_empty(4, 1),
    "empty_strided": lambda dev, dt: torch.empty_strided((2, 3), (1, 2), dtype=dt, device=dev),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("name", sorted(EMPTY_CREATION))
def test_empty_creation_metadata(name, dtype):
    t, c = EMPTY_CREATION[name]("tpu", dtype), EMPTY_CREATION[name]("cpu", dtype)
    assert t.device.type == "tpu"
    assert (t.dtype, t.shape, t.stride()) == (c.dtype, c.shape, c.stride())
    t.fill_(_fill(dtype))  # usable storage of the right size
    assert_close_cpu(t, c.fill_(_fill(dtype)), check_stride=True)


@pytest.mark.parametrize("args, kwargs", [
    ((10,), {}), ((2, 11, 3), {}), ((5, -3, -2), {}), ((0,), {}), ((0.5, 3.2, 0.25), {}), ((0, 1, 0.1), {}),
    ((-1.0, 1.0, 0.5), {}), ((10,), {"dtype": torch.float32}), ((1, 9, 2), {"dtype": torch.int32}),
    ((4,), {"dtype": torch.bfloat16}), ((0.0, 2.0, 0.5), {"dtype": torch.float16}),
], ids=lambda v: repr(v).replace(" ", ""))
def test_arange(mode, args, kwargs):
    assert_close_cpu(torch.arange(*args, device="tpu", **kwargs), torch.arange(*args, **kwargs))


def test_linspace_and_scalar_tensor(mode):
    assert_close_cpu(torch.linspace(0, 1, 7, device="tpu"), torch.linspace(0, 1, 7))
    assert_close_cpu(torch.scalar_tensor(3.5, device="tpu"), torch.scalar_tensor(3.5))


# --------------------------------------------------------------------------- conversion and copies


def _conversion_source(dtype):
    if dtype == torch.bool:
        return make_tensor((3, 7), dtype, seed=5)
    if dtype.is_floating_point:
        return (make_tensor((3, 7), torch.float32, seed=5) * 6).to(dtype)
    return make_tensor((3, 7), dtype, seed=5, low=-100, high=100)


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src", ALL_DTYPES, ids=dtype_id)
def test_to_dtype(mode, src, dst):
    x = _conversion_source(src)
    t = x.tpu()
    assert_close_cpu(t.to(dst), x.to(dst), rtol=0, atol=0)
    assert_close_cpu(t.t().to(dst), x.t().to(dst), rtol=0, atol=0, check_stride=True)


@pytest.mark.parametrize("dst", FLOAT_DTYPES + (torch.bool,), ids=dtype_id)
@pytest.mark.parametrize("src", FLOAT_DTYPES, ids=dtype_id)
def test_to_dtype_special_values(mode, src, dst):
    x = torch.tensor([0.0, -0.0, 1.0, float("inf"), -float("inf"), float("nan"), 1e-8, 70000.0, -3.4e38, 0.1])
    x = x.to(src)
    assert_close_cpu(x.tpu().to(dst), x.to(dst), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_float_to_int_truncates(mode, dtype):
    x = torch.tensor([-2.7, -1.5, -0.5, 0.5, 1.5, 2.7, 100.9]).to(dtype)
    for dst in INT_DTYPES:
        assert_close_cpu(x.tpu().to(dst), x.to(dst))


ROUND_TRIP_SHAPES = {"2d": (3, 4), "0d": (), "empty": (0, 3), "3d": (2, 3, 4)}


@pytest.mark.parametrize("shape, layout", [
    pytest.param(shape, layout, id=f"{sid}-{layout}")
    for sid, shape in ROUND_TRIP_SHAPES.items()
    for layout in ("contiguous", "transposed", "sliced", "expanded") if layout_applies(layout, shape)])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_round_trip(mode, dtype, shape, layout):
    base_shape, view = layout_recipe(shape, layout)
    x = view(make_tensor(base_shape, dtype, seed=8))  # a non-contiguous CPU source
    t = x.to("tpu")
    assert_close_cpu(t, x)
    back = t.cpu()
    assert back.device.type == "cpu" and back.dtype == dtype
    torch.testing.assert_close(back, x, rtol=0, atol=0)
    torch.testing.assert_close(x.to("tpu", non_blocking=True).to("cpu", non_blocking=True), x, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_tpu_to_tpu_copy(mode, dtype):
    x = make_tensor((3, 4), dtype, seed=9)
    t = x.tpu()
    copies = [t.clone(), t.to("tpu", copy=True), torch.empty_like(t).copy_(t), t.detach().clone(),
              t.t().contiguous().t()]
    for c in copies:
        assert c.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
        assert_close_cpu(c, x)
    assert t.to("tpu") is t  # no copy when nothing changes
    copies[0].zero_() if dtype != torch.bool else copies[0].fill_(False)
    assert_close_cpu(t, x)  # the source is untouched


def test_tolist_and_item(mode):
    x = torch.tensor([[1.5, -2.0], [3.0, 0.25]])
    t = x.tpu()
    assert t.tolist() == x.tolist()
    assert t[1, 0].item() == 3.0
    assert t.sum().item() == pytest.approx(x.sum().item())
    assert torch.tensor(7, device="tpu").item() == 7
    assert bool(torch.tensor(True, device="tpu")) is True


# --------------------------------------------------------------------------- mixed devices

MIXED = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: torch.mul(a, b),
    "mm": lambda a, b: a @ b,
    "cat": lambda a, b: torch.cat([a, b]),
    "where": lambda a, b: torch.where(a > 0, a, b),
    "index_select": lambda a, b: a.index_select(0, b[0].long().abs() % 3),
    "copy_into_view": lambda a, b: a.add_(b),
}


@pytest.mark.parametrize("order", ["tpu_first", "cpu_first"])
@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_devices_raise(name, order):
    a, b = make_tensor((3, 3), seed=1), make_tensor((3, 3), seed=2)
    a, b = (a.tpu(), b) if order == "tpu_first" else (a, b.tpu())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        MIXED[name](a, b)
        torch.tpu.synchronize()


def test_cpu_0d_tensor_mixes_like_a_scalar(mode):
    x = make_tensor((3, 4), seed=3)
    s = torch.tensor(2.5)
    for fn in [lambda a: a * s, lambda a: s + a, lambda a: torch.where(a > 0, a, s)]:
        assert_close_cpu(fn(x.tpu()), fn(x))


# --------------------------------------------------------------------------- random sampling


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_rand_range_and_shape(mode, dtype):
    torch.tpu.manual_seed(0)
    r = torch.rand(40, 50, dtype=dtype, device="tpu")
    assert r.is_tpu and r.dtype == dtype and r.shape == (40, 50)
    c = r.float().cpu()
    assert c.min() >= 0 and c.max() < 1
    assert abs(c.mean().item() - 0.5) < 0.03
    assert abs(c.std().item() - (1 / 12) ** 0.5) < 0.03
    assert c.unique().numel() > 100


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_randn_moments(mode, dtype):
    torch.tpu.manual_seed(1)
    r = torch.randn(20000, dtype=dtype, device="tpu")
    assert r.is_tpu and r.dtype == dtype
    c = r.float().cpu()
    assert abs(c.mean().item()) < 0.04 and abs(c.std().item() - 1) < 0.04
    assert torch.isfinite(c).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_normal_and_uniform_in_place(mode, dtype):
    torch.tpu.manual_seed(2)
    n = torch.empty(20000, dtype=dtype, device="tpu").normal_(mean=2.0, std=3.0).float().cpu()
    assert abs(n.mean().item() - 2.0) < 0.12 and abs(n.std().item() - 3.0) < 0.12
    u = torch.empty(20000, dtype=dtype, device="tpu").uniform_(-2.0, 5.0).float().cpu()
    assert u.min() >= -2.0 and u.max() <= 5.0
    assert abs(u.mean().item() - 1.5) < 0.1
    base = torch.zeros(6, 8, device="tpu")
    base[:, ::2].uniform_(1.0, 2.0)  # in place on a non-contiguous view
    b = base.cpu()
    assert (b[:, ::2] >= 1).all() and (b[:, 1::2] == 0).all()


@pytest.mark.parametrize("sampler", ["rand", "randn", "normal_", "uniform_", "rand_like"])
def test_same_seed_same_numbers(mode, sampler):
    draw = {
        "rand": lambda: torch.rand(3, 7, device="tpu"),
        "randn": lambda: torch.randn(3, 7, device="tpu"),
        "normal_": lambda: torch.empty(21, device="tpu").normal_(),
        "uniform_": lambda: torch.empty(21, device="tpu").uniform_(),
        "rand_like": lambda: torch.rand_like(torch.zeros(5, device="tpu")),
    }[sampler]
    torch.tpu.manual_seed(42)
    a, b = draw().cpu(), draw().cpu()
    torch.tpu.manual_seed(42)
    assert torch.equal(draw().cpu(), a)
    assert torch.equal(draw().cpu(), b)
    assert not torch.equal(a, b)
    torch.tpu.manual_seed(43)
    assert not torch.equal(draw().cpu(), a)


def test_random_ops_have_no_grad_surprises(mode):
    x = torch.randn(4, 4, device="tpu", requires_grad=True)
    assert x.requires_grad and x.is_leaf
    (x * 2).sum().backward()
    assert_close_cpu(x.grad, torch.full((4, 4), 2.0))


# --------------------------------------------------------------------------- dropout


@pytest.mark.parametrize("p", [0.1, 0.25, 0.5])
def test_dropout_train(mode, p):
    torch.tpu.manual_seed(3)
    x_cpu = make_tensor((100, 80), seed=4, low=0.5, high=2.0)
    x = x_cpu.tpu().requires_grad_()
    y = F.dropout(x, p, training=True)
    assert y.is_tpu and y.shape == x.shape and y.dtype == x.dtype
    yc = y.detach().cpu()
    kept = yc != 0
    torch.testing.assert_close(yc[kept], x_cpu[kept] / (1 - p))
    assert abs((~kept).float().mean().item() - p) < 0.03
    y.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), kept.float() / (1 - p))


@pytest.mark.parametrize("module", [False, True], ids=["functional", "module"])
def test_dropout_eval_is_identity(mode, module):
    x = make_tensor((8, 9), seed=5).tpu()
    if module:
        d = nn.Dropout(0.5).tpu().eval()
        y = d(x)
    else:
        y = F.dropout(x, 0.5, training=False)
    assert_close_cpu(y, x.cpu(), rtol=0, atol=0)


def test_dropout_edge_probabilities(mode):
    x = make_tensor((50,), seed=6).tpu()
    assert_close_cpu(F.dropout(x, 0.0, training=True), x.cpu())
    assert_close_cpu(F.dropout(x, 1.0, training=True), torch.zeros(50))


def test_dropout_reproducible_with_seed(mode):
    x = torch.ones(200, device="tpu")
    torch.tpu.manual_seed(11)
    a = F.dropout(x, 0.3).cpu()
    torch.tpu.manual_seed(11)
    b = F.dropout(x, 0.3).cpu()
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_dropout_half(mode, dtype):
    torch.tpu.manual_seed(12)
    y = F.dropout(torch.ones(4000, dtype=dtype, device="tpu"), 0.2).cpu()
    assert y.dtype == dtype
    assert set(y.unique().float().tolist()) <= {0.0, torch.tensor(1 / 0.8, dtype=dtype).item()}
    assert abs((y == 0).float().mean().item() - 0.2) < 0.03
