"""The fast part of the OpInfo sweep (tests/opinfo): every OpInfo in float32,
forward and backward on its first samples in strict mode, and forward again in
fused mode (deferred, one program per flush); complex64 forward on the first
sample.

A case that gives a different result than CPU fails the test unless
tests/opinfo/expectations.py declares it (with a reason). A case that needs an
operator with no tpu lowering is reported as xfail naming that operator: it is
a coverage gap (counted in docs/op_coverage.md), not a wrong answer. The whole
sweep, every dtype and sample: `python scripts/op_coverage.py`.
"""
import pytest
import torch

import torch_tpu
from opinfo import harness

SAMPLES = {"strict": 2, "fused": 1}

_CASES = [(op, check, mode)
          for op, dtype, check in harness.cases(forward_dtypes=(torch.float32,)) if dtype == torch.float32
          for mode in SAMPLES if mode == "strict" or check == "forward"]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("op,check,eager", _CASES, ids=[f"{harness.op_id(op)}-{check}-{mode}" for op, check, mode in _CASES])
def test_opinfo_float32(op, check, eager):
    # The suite's process allows the CPU fallback (its switch is read once per
    # process), so a missing lowering shows in the metrics rather than as an error.
    torch_tpu.reset_metrics()
    with torch_tpu.eager_mode(eager):
        result = harness.run_case(op, torch.float32, check, max_samples=SAMPLES[eager])
        torch.tpu.synchronize()
    fallbacks = torch_tpu.metrics()["cpu_fallbacks"]
    if result.status == "skip":
        pytest.skip(result.reason)
    if result.status == "xfail":
        pytest.xfail(result.reason)
    if fallbacks or result.status == "fallback":
        pytest.xfail("no tpu lowering for " + ", ".join(sorted(fallbacks) or [result.reason]))
    assert result.status == "pass", result.reason


_COMPLEX_CASES = [(op, dtype) for op, dtype, check in harness.cases(forward_dtypes=(),
                                                                     complex_dtypes=harness.COMPLEX_DTYPES)
                  if check == "forward"]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("op,dtype", _COMPLEX_CASES,
                         ids=[f"{harness.op_id(op)}-{harness.dtype_name(dtype)}" for op, dtype in _COMPLEX_CASES])
def test_opinfo_complex(op, dtype):
    """Complex forward on the first sample: a kernel without a complex lowering
    must say so (xfail); one that computes must match the CPU."""
    torch_tpu.reset_metrics()
    with torch_tpu.eager_mode("strict"):
        result = harness.run_case(op, dtype, "forward", max_samples=1)
    fallbacks = torch_tpu.metrics()["cpu_fallbacks"]
    if result.status == "skip":
        pytest.skip(result.reason)
    if result.status in ("xfail", "unsupported"):
        pytest.xfail(result.reason)
    if fallbacks or result.status == "fallback":
        pytest.xfail("no tpu lowering for " + ", ".join(sorted(fallbacks) or [result.reason]))
    assert result.status == "pass", result.reason
