"""The fast part of the model coverage harness (the whole sweep: scripts/model_coverage.py).

One architecture of each family, in the default eager mode: Tier 1 and Tier 2 for each,
with no CPU fallback, and for a dense and a mixture-of-experts decoder LM also the
training steps and (for Llama) greedy generation with the KV cache; Llama, BERT and ViT
also under torch.compile(backend="tpu").
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = [("llama", True, True), ("mixtral", True, False), ("bert", False, False), ("t5", False, False),
         ("vit", False, False), ("whisper", False, False)]


@pytest.mark.parametrize("name,train,generate", CASES, ids=[c[0] for c in CASES])
def test_model_matches_cpu(name, train, generate):
    result = harness.run(name, train=train, generate=generate)
    assert "errors" not in result, result["errors"]
    assert result["tier1"] and result["fallback_ops"] == [], result
    assert result["tier2"], f"max abs error {result['max_abs_error']}"
    if train:
        assert result["train"], f"worst error / tolerance {result['train_worst_error']}"
    if generate:
        assert result["generate"], result
    if "compiled" in result:  # the catalog's torch.compile cases
        assert result["compiled"] and result["compiled_eager_runs"] == 0, result
