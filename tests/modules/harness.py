"""Runs PyTorch's ModuleInfo database (module_db, what PyTorch's test_modules.py runs) on
the tpu device against CPU.

One *case* is a (ModuleInfo, dtype, training) triple. Each of its samples builds the
module on CPU from the sample's constructor arguments (seeded), copies it to tpu the
way users do (`.to("tpu")` before the first forward), and checks:
- forward: the outputs (every tensor in them) match CPU's (a lazy module, whose first
  forward draws its parameters on the device, is compared after loading the CPU
  module's draws);
- backward: the gradients of the inputs and parameters, after a backward of the
  outputs against the same random gradients, match CPU's;
- state_dict: the module's state after the step (running statistics too) matches
  the CPU module's.
"Match": float32 results are close (TOLERANCES); bfloat16 results must be no less
accurate than CPU's bfloat16 results, both measured against the float32 computation
of the same module and inputs (a fixed tolerance between two roundings of long sums
says little).
Each sample ends as passed, failed (it raised on tpu where CPU did not, or a value
differs), fell back (it needed an ATen operator with no tpu lowering, which ran on the
CPU) or skipped (CPU itself refuses it); the case's status is ``fail`` if any sample
failed, else ``fallback`` if any fell back, else ``pass`` (``skip`` when none ran).

Used by tests/test_modules.py (the fast part, in CI) and scripts/module_coverage.py
(every sample in float32 and bfloat16, train and eval; writes docs/module_coverage.md).
"""
import copy
import dataclasses
import time

import torch
from torch.testing._internal.common_modules import module_db

import torch_tpu

TOLERANCES = {torch.float32: (1e-4, 1e-4), torch.bfloat16: (2e-2, 2e-2)}


@dataclasses.dataclass
class Result:
    module: str
    dtype: str
    training: bool
    status: str  # pass, fail, fallback, skip
    reason: str = ""  # the first failing (or falling back) sample's
    passed: int = 0  # samples, by outcome
    failed: int = 0
    fell_back: int = 0
    skipped: int = 0
    seconds: float = 0.0


def modules():
    return list(module_db)


def cases(dtypes=(torch.float32,)):
    """float32 for every module, other dtypes for every module that takes floating inputs
    (module_db lists bfloat16 for few modules, but users run most of them in it)."""
    return [(info, dtype, training) for info in modules() for dtype in dtypes
            if dtype in info.dtypes or (dtype.is_floating_point and torch.float32 in info.dtypes)
            for training in (True, False)]


def case_id(info, dtype, training):
    return f"{info.name}-{str(dtype).replace('torch.', '')}-{'train' if training else 'eval'}"


def _tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _copied(x, device, dtype=None):
    """x with its tensors copied to `device` (floating ones to `dtype` if given), keeping requires_grad."""
    if isinstance(x, torch.Tensor):
        floating = x.is_floating_point()
        t = x.detach().to(device, dtype=dtype if floating and dtype else x.dtype, copy=True)
        return t.requires_grad_(x.requires_grad) if floating else t
    if isinstance(x, (tuple, list)):
        return type(x)(_copied(v, device, dtype) for v in x)
    if isinstance(x, dict):
        return {k: _copied(v, device, dtype) for k, v in x.items()}
    return x


@dataclasses.dataclass
class _Step:
    outputs: list
    input_grads: list
    param_grads: list
    state: list


def _step(module, args, kwargs):
    """Forward; then (floating outputs) backward of the outputs against fixed random weights.
    Returns everything the step produced, on the CPU."""
    torch.manual_seed(1)
    outputs = _tensors(module(*args, **kwargs))
    differentiable = [o for o in outputs if o.requires_grad and o.is_floating_point()]
    if differentiable:
        gen = torch.Generator().manual_seed(2)
        weights = [torch.randn(o.shape, generator=gen).to(o.device, o.dtype) for o in differentiable]
        sum((o * w).sum() for o, w in zip(differentiable, weights)).backward()
    inputs = [t for t in _tensors((args, kwargs)) if t.requires_grad]
    cpu = lambda ts: [t.detach().cpu() if t is not None else None for t in ts]  # noqa: E731
    return _Step(cpu(outputs), cpu([t.grad for t in inputs]), cpu([p.grad for p in module.parameters()]),
                 cpu(list(module.state_dict().values())))


def _compare(got, expected, reference, dtype, what):
    """tpu's results against CPU's. float32: close. Lower precision: no less accurate than
    CPU's results in that dtype, measured against the float32 computation of the same
    module and inputs (|tpu - f32| <= 2 |cpu - f32| + |f32| / 256 in the 2-norm over the
    finite values; non-finite ones must be where CPU's are)."""
    rtol, atol = TOLERANCES.get(dtype, (1e-4, 1e-4))
    if len(got) != len(expected):
        raise AssertionError(f"{what}: {len(got)} tensors, CPU gives {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        if (g is None) != (e is None):
            raise AssertionError(f"{what}[{i}]: {'no' if g is None else 'a'} gradient, CPU has "
                                 f"{'one' if g is None else 'none'}")
        if g is None:
            continue
        if reference is None or not e.is_floating_point():
            torch.testing.assert_close(g, e, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}[{i}]: {m}")
            continue
        if g.shape != e.shape or g.dtype != e.dtype:
            raise AssertionError(f"{what}[{i}]: {g.dtype}{list(g.shape)}, CPU gives {e.dtype}{list(e.shape)}")
        # Non-finite values (log of a negative, 0/0) must be where CPU has them; the
        # accuracy is measured on the rest.
        finite = e.isfinite()
        if not torch.equal(g.isfinite(), finite) or not torch.equal(g[~finite].isnan(), e[~finite].isnan()):
            raise AssertionError(f"{what}[{i}]: non-finite values differ from CPU's")
        r = reference[i].double()[finite]
        ours, theirs = (g.double()[finite] - r).norm().item(), (e.double()[finite] - r).norm().item()
        if not ours <= 2 * theirs + r.norm().item() / 256 + 1e-6:
            raise AssertionError(f"{what}[{i}]: off the float32 result by {ours:.3g}, CPU's by {theirs:.3g}")


def _run_sample(info, sample, dtype, training):
    """Raises on a mismatch; returns "skip" when CPU refuses the sample."""
    c_args, c_kwargs = sample.constructor_input.args, sample.constructor_input.kwargs
    f_args, f_kwargs = sample.forward_input.args, sample.forward_input.kwargs
    try:
        torch.manual_seed(0)
        cpu = info.module_cls(*c_args, **c_kwargs).to(dtype)
        cpu.train(training)
        tpu = copy.deepcopy(cpu).to("tpu")
        # Lower precision is judged against the same module and inputs in float32.
        f32 = copy.deepcopy(cpu).float() if dtype != torch.float32 else None
        expected = _step(cpu, *_copied((f_args, f_kwargs), "cpu"))
        reference = _step(f32, *_copied((f_args, f_kwargs), "cpu", torch.float32)) if f32 is not None else None
    except Exception:  # noqa: BLE001 - CPU refuses the sample: nothing to compare
        return "skip"
    t_args, t_kwargs = _copied((f_args, f_kwargs), "tpu")
    if info.is_lazy:
        # Its first forward makes the parameters, drawn from the tpu generator: then the
        # module gets the CPU module's draws (the CPU module's state before its step).
        torch.manual_seed(1)
        tpu(*_copied(t_args, "tpu"), **_copied(t_kwargs, "tpu"))
        torch.manual_seed(0)
        fresh = info.module_cls(*c_args, **c_kwargs).to(dtype)
        fresh.train(training)
        torch.manual_seed(1)  # as _step draws
        fresh(*_copied(f_args, "cpu"), **_copied(f_kwargs, "cpu"))
        tpu.load_state_dict(fresh.state_dict())
    got = _step(tpu, t_args, t_kwargs)
    for what in ("outputs", "input_grads", "param_grads", "state"):
        _compare(getattr(got, what), getattr(expected, what), reference and getattr(reference, what), dtype, what)
    return "pass"


def run_case(info, dtype, training, max_samples=None):
    start = time.perf_counter()
    result = Result(info.name, str(dtype).replace("torch.", ""), training, "skip")
    try:
        samples = info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True, training=training)
    except Exception as e:  # noqa: BLE001
        result.reason = f"no samples: {e}"
        return result
    for i, sample in enumerate(samples[:max_samples] if max_samples else samples):
        torch_tpu.reset_metrics()
        try:
            status, error = _run_sample(info, sample, dtype, training), None
        except Exception as e:  # noqa: BLE001 - reported as the case's reason
            status, error = "fail", f"{type(e).__name__}: {e}"
        fallbacks = torch_tpu.metrics()["cpu_fallbacks"]
        if status != "skip" and fallbacks:
            status, error = "fallback", ", ".join(sorted(fallbacks))
        result.passed += status == "pass"
        result.failed += status == "fail"
        result.fell_back += status == "fallback"
        result.skipped += status == "skip"
        if error and not result.reason:
            result.reason = f"sample {i} ({sample.desc or 'default'}): {error}"[:400]
    result.status = ("fail" if result.failed else "fallback" if result.fell_back else
                     "pass" if result.passed else "skip")
    if result.status == "fallback" and result.reason:
        result.reason = result.reason.split(": ", 1)[1]
    result.seconds = time.perf_counter() - start
    return result
