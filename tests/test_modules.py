"""The fast part of the ModuleInfo sweep (tests/modules): every module of PyTorch's
module_db in float32, training and eval, on its first sample: forward, backward and
state_dict against CPU, in the default (fused) mode.

A module that needs an operator with no tpu lowering is reported as xfail naming the
operator (a coverage gap, counted in docs/module_coverage.md); a different result
fails. The whole sweep (every sample, float32 and bfloat16): `python scripts/module_coverage.py`.
"""
import pytest

from modules import harness

_CASES = harness.cases()


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("info,dtype,training", _CASES, ids=[harness.case_id(*c) for c in _CASES])
def test_module_float32(info, dtype, training):
    result = harness.run_case(info, dtype, training, max_samples=1)
    if result.status == "skip":
        pytest.skip(result.reason or "CPU refuses the sample")
    if result.status == "fallback":
        pytest.xfail("no tpu lowering for " + result.reason)
    assert result.status == "pass", result.reason
