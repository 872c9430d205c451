"""Runs PyTorch's OpInfo database on the tpu device against CPU.

One *case* is an (OpInfo, dtype) pair. Its forward check runs every sample
input of the op on CPU and on tpu and compares the results; its backward check
(float32, differentiable ops) compares the gradients of the sample inputs. A
case ends in one status:

- ``pass``: every sample matched;
- ``fallback``: a sample needed an ATen operator with no tpu lowering (the
  sweep runs with the CPU fallback disabled, so that is an error naming it);
- ``unsupported``: a kernel refused the sample's dtype with a clear error (a
  kernel not written for complex values says so rather than computing);
- ``fail``: a sample raised on tpu where CPU did not, or the values differ;
- ``xfail`` / ``skip``: declared in expectations.py, with a reason.

Used by tests/test_opinfo.py (the fast part, in CI) and scripts/op_coverage.py
(the whole sweep, which writes docs/op_coverage.md).
"""
import dataclasses
import re
import time

import torch
from torch.testing._internal.common_methods_invocations import (
    foreach_binary_op_db,
    foreach_other_op_db,
    foreach_pointwise_op_db,
    foreach_reduce_op_db,
    foreach_unary_op_db,
    op_db,
)
from torch.testing._internal.opinfo.definitions.linalg import op_db as linalg_op_db
from torch.testing._internal.opinfo.definitions.special import op_db as special_op_db

from . import expectations

FORWARD_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool)
BACKWARD_DTYPES = (torch.float32,)
# Checked forward and reported apart from the dtypes above.
COMPLEX_DTYPES = (torch.complex64,)

# (rtol, atol) by result dtype; per-op widenings live in expectations.TOLERANCES.
DEFAULT_TOLERANCES = {
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (2e-3, 1e-3),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1e-4, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}

_FALLBACK_RE = re.compile(r"operator '([^']+)' has no tpu lowering")
_UNSUPPORTED_RE = re.compile(r"tpu: (\S+) does not support complex tensors yet")


def all_opinfos():
    """Every OpInfo of the main, linalg, special and foreach databases, once each."""
    seen, ops = set(), []
    foreach = (list(foreach_unary_op_db) + list(foreach_binary_op_db) + list(foreach_pointwise_op_db)
               + list(foreach_reduce_op_db) + list(foreach_other_op_db))
    for op in list(op_db) + list(linalg_op_db) + list(special_op_db) + foreach:
        key = (op.name, op.variant_test_name)
        if key not in seen:
            seen.add(key)
            ops.append(op)
    return ops


def op_id(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


@dataclasses.dataclass
class Result:
    op: str
    dtype: str
    check: str  # "forward" or "backward"
    status: str  # pass, fail, fallback, xfail, skip, unsupported
    reason: str = ""
    samples: int = 0
    seconds: float = 0.0


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _to_tpu(t, requires_grad=False):
    if not isinstance(t, torch.Tensor):
        return t
    out = t.detach().to("tpu")
    return out.requires_grad_(True) if requires_grad and t.requires_grad else out


def _sample_to_tpu(op, sample, keep_grad, factory=False):
    """The sample with its tensors on tpu; `factory`: the op makes a tensor from no tensor inputs."""
    if op_id(op) in expectations.HOST_ARGUMENT_OPS:  # only the input moves
        moved = sample.transform(lambda t: t)
        moved.input = sample.transform(lambda t: _to_tpu(t, keep_grad)).input
    else:
        moved = sample.transform(lambda t: _to_tpu(t, keep_grad))
    if isinstance(moved.kwargs.get("device"), (str, torch.device)):  # factory functions
        moved.kwargs["device"] = "tpu"
    elif factory and "device" not in moved.kwargs and not _tensors([sample.input, sample.args, sample.kwargs]):
        # A factory sample that leaves the device to its default (arange(1, 3, 1)):
        # the tpu run asks for tpu explicitly, as OpInfo's device tests do.
        moved.kwargs["device"] = "tpu"
    return moved


def _tensors(x):
    """Tensors nested in x (tensor, list/tuple, dict), in order."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _compare(tpu_out, cpu_out, tol, exact_values):
    """tol(dtype) gives (rtol, atol) for a result of that dtype."""
    if isinstance(cpu_out, (list, tuple)):
        assert isinstance(tpu_out, (list, tuple)) and len(tpu_out) == len(cpu_out), "output structure differs"
        for t, c in zip(tpu_out, cpu_out):
            _compare(t, c, tol, exact_values)
        return
    if not isinstance(cpu_out, torch.Tensor):
        if isinstance(cpu_out, float) and isinstance(tpu_out, float):
            rtol, atol = tol(torch.float32)
            torch.testing.assert_close(tpu_out, cpu_out, rtol=rtol, atol=atol, equal_nan=True)
        else:
            assert tpu_out == cpu_out, f"{tpu_out!r} != {cpu_out!r}"
        return
    assert isinstance(tpu_out, torch.Tensor), f"expected a tensor, got {type(tpu_out).__name__}"
    assert tpu_out.device.type == "tpu", f"result on {tpu_out.device}"
    assert tpu_out.dtype == cpu_out.dtype, f"dtype {tpu_out.dtype} != {cpu_out.dtype}"
    assert tpu_out.shape == cpu_out.shape, f"shape {tuple(tpu_out.shape)} != {tuple(cpu_out.shape)}"
    if not exact_values:
        return
    rtol, atol = tol(cpu_out.dtype)
    torch.testing.assert_close(tpu_out.detach().cpu(), cpu_out.detach(), rtol=rtol, atol=atol, equal_nan=True)


def _tolerance(op):
    """(rtol, atol) by result dtype for `op`: its declared widening, else the default."""
    wide = expectations.TOLERANCES.get(op_id(op), {})
    return lambda dtype: wide.get(dtype) or DEFAULT_TOLERANCES.get(dtype, (0, 0))


def _classify_error(e):
    m = _FALLBACK_RE.search(str(e))
    if m:
        return "fallback", m.group(1)
    m = _UNSUPPORTED_RE.search(str(e))
    if m:
        return "unsupported", f"{m.group(1)} has no complex lowering"
    lines = str(e).strip().splitlines()
    first = lines[0] if lines else ""
    # assert_close's worst differences say how far off a value is.
    worst = [ln.strip().rstrip(".") for ln in lines if ln.strip().startswith("Greatest")]
    return "fail", f"{type(e).__name__}: {first[:200]}" + (" (" + "; ".join(worst) + ")" if worst else "")


def _random(name, sample):
    """Whether the sample's result is random (then only dtype and shape are compared)."""
    return name in expectations.RANDOM_OPS or sample.kwargs.get("dropout_p", 0) > 0


def _samples(op, dtype, requires_grad, max_samples):
    gen = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
    for i, s in enumerate(gen):
        if max_samples is not None and i >= max_samples:
            return
        yield s


def _outputs(op, sample):
    return op(sample.input, *sample.args, **sample.kwargs)


def _selected_values(op, sample, out):
    """For ops whose index outputs are unspecified among equal elements (an
    unstable sort), the input's values at those indices, after checking that the
    indices are distinct where they must be; values and shapes stay as they are."""
    name = op_id(op)
    spec = expectations.TIE_ORDER_OPS[name]
    dim = sample.args[spec["dim_arg"]] if len(sample.args) > spec["dim_arg"] else sample.kwargs.get("dim", -1)
    source = sample.input.detach()
    indices = out if name == "argsort" else out[1]
    assert isinstance(indices, torch.Tensor) and indices.dtype == torch.int64, "indices are not an int64 tensor"
    host = indices.detach().cpu()
    reduces = "keepdim_arg" in spec
    if source.dim() == 0:
        picked = source.expand(host.shape).clone()
    else:
        keepdim = (sample.args[spec["keepdim_arg"]] if len(sample.args) > spec["keepdim_arg"]
                   else sample.kwargs.get("keepdim", False)) if reduces else True
        along = host if keepdim else host.unsqueeze(dim)
        if not reduces and host.numel():
            ordered = along.sort(dim).values
            assert (ordered.diff(dim=dim) != 0).all(), f"{name} returned repeated indices"
        picked = source.gather(dim, along)
        if not keepdim:
            picked = picked.squeeze(dim)
    picked = picked.to(indices.device)  # compared like any output of that device
    if name == "argsort":
        return picked
    return (out[0], picked)


def _column_signs(vectors):
    """+1 or -1 per column: the sign of its largest-magnitude entry."""
    if vectors.shape[-2] == 0:
        return torch.ones(vectors.shape[:-2] + vectors.shape[-1:], dtype=vectors.dtype)
    pick = vectors.abs().argmax(dim=-2, keepdim=True)
    signs = vectors.gather(-2, pick).squeeze(-2).sign()
    return torch.where(signs == 0, torch.ones_like(signs), signs)


def _gauge_fixed(op, out):
    """A decomposition's outputs with the sign (and complement) freedom removed."""
    layout = expectations.GAUGE_OPS[op_id(op)]
    device = out[0].device
    host = [t.detach().cpu() for t in out]
    if layout == "eigh":
        values, vectors = host
        fixed = (values, vectors * _column_signs(vectors).unsqueeze(-2)) if vectors.numel() else host
    else:
        u, s, v = host
        if u.numel() == 0:
            fixed = host
        else:
            vh = v.mT if layout == "svd_v" else v
            k = s.shape[-1]
            signs = _column_signs(u[..., :k])
            u2, vh2 = u[..., k:], vh[..., k:, :]
            fixed = (u[..., :k] * signs.unsqueeze(-2), u2 @ u2.mT, s, vh[..., :k, :] * signs.unsqueeze(-1),
                     vh2.mT @ vh2)
    return tuple(t.to(device) for t in fixed)


def differentiable(op, dtype):
    return op.supports_autograd and dtype in op.supported_backward_dtypes("cpu")


def _grads(op, sample):
    """Gradients of the sample's inputs that require them (None where unused), or None if nothing to differentiate."""
    out = sample.output_process_fn_grad(_outputs(op, sample))
    outs = [t for t in _tensors(out) if t.requires_grad]
    inputs = [t for t in _tensors([sample.input, list(sample.args), sample.kwargs]) if t.requires_grad]
    if not outs or not inputs:
        return None
    # A fixed, non-uniform cotangent per output, so every output element matters.
    cot = [torch.linspace(-1, 1, t.numel(), dtype=t.dtype).reshape(t.shape).to(t.device) for t in outs]
    return torch.autograd.grad(outs, inputs, cot, allow_unused=True)


def _compare_grads(actual, expected, tol, exact):
    for a, e in zip(actual, expected):
        if e is None:
            continue
        assert a is not None, "a gradient is missing"
        _compare(a, e, tol, exact)


def _run(op, dtype, check, max_samples):
    """Runs every sample on CPU and on tpu (forward outputs or input gradients) and compares."""
    name, dname = op_id(op), dtype_name(dtype)
    declared = expectations.lookup(name, dname, check)
    if declared is not None:
        return Result(name, dname, check, declared[0], declared[1])
    backward = check == "backward"
    compute = _grads if backward else _outputs
    compare = _compare_grads if backward else _compare
    start = time.perf_counter()
    tol = _tolerance(op)
    n = 0
    for sample in _samples(op, dtype, backward, max_samples):
        try:
            expected = compute(op, sample)
        except Exception:
            continue  # CPU rejects the sample too: nothing to compare
        if backward and expected is None:
            continue
        n += 1
        try:
            actual = compute(op, _sample_to_tpu(op, sample, backward, factory=isinstance(expected, torch.Tensor)))
            if not backward and name in expectations.TIE_ORDER_OPS:
                actual, expected = _selected_values(op, sample, actual), _selected_values(op, sample, expected)
            if not backward and name in expectations.GAUGE_OPS:
                actual, expected = _gauge_fixed(op, actual), _gauge_fixed(op, expected)
            compare(actual, expected, tol, not _random(name, sample))
        except Exception as e:
            status, reason = _classify_error(e)
            return Result(name, dname, check, status, reason, n, time.perf_counter() - start)
    return Result(name, dname, check, "pass", "", n, time.perf_counter() - start)


def cases(ops=None, forward_dtypes=FORWARD_DTYPES, complex_dtypes=()):
    """(op, dtype, check) triples of every case the sweep runs."""
    for op in ops if ops is not None else all_opinfos():
        supported = op.supported_dtypes("cpu")
        for dtype in forward_dtypes + tuple(complex_dtypes):
            if dtype in supported:
                yield op, dtype, "forward"
        for dtype in BACKWARD_DTYPES:
            if dtype in supported and differentiable(op, dtype):
                yield op, dtype, "backward"


def run_case(op, dtype, check, max_samples=None):
    """The forward or backward check of one (op, dtype) case."""
    return _run(op, dtype, check, max_samples)
