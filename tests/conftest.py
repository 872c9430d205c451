"""Shared helpers for the tpu-vs-CPU test suite.

Every test compares the tpu device against CPU PyTorch running the same code:

- `mode` is a fixture over the eager modes; a test that takes it runs once per
  mode inside `with torch_tpu.eager_mode(name):`. It is not autouse: tests that
  do not depend on the schedule (device queries, subprocesses) run once.
  `@run_modes("debug")` narrows a test to some modes.
- `make_tensor` makes seeded CPU inputs of any of the six dtypes we cover;
  `make_input` / `make_pair` also build non-contiguous layouts (transposed,
  sliced with a step and an offset, expanded) as the *same view* of a base on
  both devices, so the tpu side exercises its own view machinery.
- `assert_close_cpu` checks device, dtype, shape, values (and optionally strides).
"""
import os
import subprocess
import sys

import pytest

# Compile counts are part of what the suite checks: no test may hit programs a
# previous run left on disk. The disk cache has its own tests (test_fused.py).
os.environ["TORCH_TPU_CACHE_DIR"] = ""

import torch  # noqa: E402

import torch_tpu  # noqa: E402

MODES = ("debug", "strict", "fused")

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
HALF_DTYPES = (torch.bfloat16, torch.float16)
INT_DTYPES = (torch.int32, torch.int64)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + (torch.bool,)

# (rtol, atol) per kind of computation. Integer and bool results compare exactly.
_TOLERANCES = {
    "elementwise": {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (1e-3, 1e-3)},
    "reduction": {torch.float32: (1e-4, 1e-4), torch.bfloat16: (2e-2, 2e-2), torch.float16: (2e-3, 2e-3)},
    "matmul": {torch.float32: (1e-4, 1e-4), torch.bfloat16: (3e-2, 3e-2), torch.float16: (3e-3, 3e-3)},
}


def tolerances(dtype, kind="elementwise"):
    """(rtol, atol) for results of `dtype` computed by an op of `kind`."""
    return _TOLERANCES[kind].get(dtype, (0.0, 0.0))


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


# --------------------------------------------------------------------------- modes


@pytest.fixture(params=MODES)
def mode(request):
    """Runs the test body in one eager mode; errors of async work surface before the mode is restored."""
    with torch_tpu.eager_mode(request.param):
        yield request.param
        torch.tpu.synchronize()


def run_modes(*modes):
    """Decorator: run a test that takes `mode` only in `modes` (default: all)."""
    return pytest.mark.parametrize("mode", list(modes or MODES), indirect=True)


# --------------------------------------------------------------------------- inputs


def make_tensor(shape, dtype=torch.float32, *, seed=0, low=None, high=None):
    """A seeded CPU tensor. Floats: randn (or uniform in [low, high)); ints: randint in [low, high)
    (default [-8, 8)); bool: fair coin."""
    shape = tuple(shape)
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        lo = -8 if low is None else int(low)
        hi = 8 if high is None else int(high)
        return torch.randint(lo, hi, shape, generator=g, dtype=dtype)
    if low is not None or high is not None:
        lo = -1.0 if low is None else low
        hi = 1.0 if high is None else high
        return (torch.rand(shape, generator=g) * (hi - lo) + lo).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def make_scalar(dtype=torch.float32, seed=0, **kw):
    """A 0-d tensor."""
    return make_tensor((), dtype, seed=seed, **kw)


def make_empty(dtype=torch.float32, shape=(0, 3)):
    """A tensor with no elements."""
    return make_tensor(shape, dtype)


LAYOUTS = ("contiguous", "transposed", "sliced", "expanded")


def layout_applies(layout, shape):
    """Whether `layout` can produce a tensor of `shape` that really is non-contiguous."""
    shape = tuple(shape)
    if layout == "contiguous":
        return True
    if layout == "transposed":
        return len(shape) >= 2 and shape[-1] > 1 and shape[-2] > 1
    if layout == "sliced":
        return len(shape) >= 1 and shape[-1] > 1
    if layout == "expanded":
        return len(shape) >= 1 and shape[0] > 1
    raise ValueError(layout)


def layout_recipe(shape, layout):
    """(base_shape, view_fn) such that view_fn(contiguous tensor of base_shape) has `shape` and `layout`."""
    shape = tuple(shape)
    if layout == "contiguous":
        return shape, lambda b: b
    if layout == "transposed":
        base = shape[:-2] + (shape[-1], shape[-2])
        return base, lambda b: b.transpose(-1, -2)
    if layout == "sliced":
        n = shape[-1]
        base = shape[:-1] + (2 * n + 1,)
        return base, lambda b: b[..., 1::2]  # step 2 and a storage offset of 1
    if layout == "expanded":
        base = (1,) + shape[1:]
        return base, lambda b: b.expand(shape)
    raise ValueError(layout)


def make_input(shape, dtype=torch.float32, layout="contiguous", *, seed=0, **kw):
    """(cpu_base, view_fn): apply view_fn to the base on each device (or to a leaf made from it)."""
    base_shape, view = layout_recipe(shape, layout)
    base = make_tensor(base_shape, dtype, seed=seed, **kw)
    return base, view


def make_pair(shape, dtype=torch.float32, layout="contiguous", *, seed=0, **kw):
    """(cpu, tpu) tensors with equal values, built as the same view of equal bases."""
    base, view = make_input(shape, dtype, layout, seed=seed, **kw)
    cpu, tpu = view(base), view(base.to("tpu"))
    if layout != "contiguous":
        assert not cpu.is_contiguous() or cpu.numel() <= 1
    return cpu, tpu


def to_tpu(obj):
    """Moves tensors (nested in lists/tuples/dicts) to tpu; leaves other values alone."""
    if isinstance(obj, torch.Tensor):
        return obj.to("tpu")
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_tpu(o) for o in obj)
    if isinstance(obj, dict):
        return {k: to_tpu(v) for k, v in obj.items()}
    return obj


# --------------------------------------------------------------------------- comparison


def assert_close_cpu(tpu_result, cpu_result, rtol=None, atol=None, *, check_stride=False, equal_nan=True,
                     kind="elementwise", msg=""):
    """The tpu result equals the CPU result: device tpu, same dtype and shape, close values.

    Tuples/lists (e.g. max(dim) -> (values, indices)) compare element by element;
    Python scalars compare as numbers. Tolerances default from the CPU dtype and `kind`.
    """
    if isinstance(cpu_result, (tuple, list)):
        assert isinstance(tpu_result, (tuple, list)), f"{msg}expected a sequence, got {type(tpu_result)}"
        assert len(tpu_result) == len(cpu_result), msg
        for i, (t, c) in enumerate(zip(tpu_result, cpu_result)):
            assert_close_cpu(t, c, rtol, atol, check_stride=check_stride, equal_nan=equal_nan, kind=kind,
                             msg=f"{msg}[{i}] ")
        return
    if not isinstance(cpu_result, torch.Tensor):
        assert not isinstance(tpu_result, torch.Tensor), msg
        if isinstance(cpu_result, float):
            r, a = (rtol, atol) if rtol is not None else tolerances(torch.float32, kind)
            assert tpu_result == pytest.approx(cpu_result, rel=r, abs=a, nan_ok=equal_nan), msg
        else:
            assert tpu_result == cpu_result, msg
        return
    assert isinstance(tpu_result, torch.Tensor), f"{msg}expected a tensor, got {type(tpu_result)}"
    assert tpu_result.device.type == "tpu", f"{msg}result is on {tpu_result.device}"
    assert tpu_result.dtype == cpu_result.dtype, f"{msg}dtype {tpu_result.dtype} != {cpu_result.dtype}"
    assert tpu_result.shape == cpu_result.shape, f"{msg}shape {tuple(tpu_result.shape)} != {tuple(cpu_result.shape)}"
    if check_stride:
        assert tpu_result.stride() == cpu_result.stride(), f"{msg}stride {tpu_result.stride()} != {cpu_result.stride()}"
    if rtol is None or atol is None:
        dr, da = tolerances(cpu_result.dtype, kind)
        rtol = dr if rtol is None else rtol
        atol = da if atol is None else atol
    torch.testing.assert_close(tpu_result.detach().cpu(), cpu_result.detach(), rtol=rtol, atol=atol,
                               equal_nan=equal_nan, msg=(lambda m: f"{msg}{m}") if msg else None)


# --------------------------------------------------------------------------- subprocesses


def run_python(code, timeout=300, **env):
    """Runs `code` in a fresh interpreter (this venv) with extra environment variables.

    A value of None removes the variable from the child's environment.
    """
    child_env = dict(os.environ)
    for k, v in env.items():
        if v is None:
            child_env.pop(k, None)
        else:
            child_env[k] = v
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env,
                          timeout=timeout)
