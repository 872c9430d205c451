"""Checks one Hugging Face Transformers architecture on tpu against the same model on the CPU.

- Tier 1: the forward pass runs on tpu in the default eager mode; the ops that fell back to
  the CPU are recorded.
- Tier 2: its output (logits, or the last hidden state) matches the CPU float32 model within
  RTOL / ATOL, the same for every model.
- Decoder LMs also: three SGD training steps (loss and every gradient match the CPU's within
  the same tolerance) and greedy generate() of 16 new tokens with the KV cache, which must
  give exactly the CPU's tokens.
- For the architectures marked `compiled` in the catalog: the forward pass (and a decoder's
  training steps) under torch.compile(backend="tpu"), checked the same way.

    python tests/models/harness.py NAME [--no-train] [--no-generate] [--no-compile]

prints one JSON line with the results (scripts/model_coverage.py runs it per model).
"""
import argparse
import copy
import functools
import json
import os
import sys
import time
import traceback

import torch

import torch_tpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from catalog import MODELS, by_name, make_inputs  # noqa: E402

RTOL = ATOL = 1e-4
TRAIN_STEPS, TRAIN_LR = 3, 0.05
NEW_TOKENS = 16


def build(case):
    """The CPU model of `case`: random weights from a fixed seed, float32, no dropout."""
    import transformers

    config = transformers.AutoConfig.for_model(case.name, **case.config)
    for sub in [config] + [getattr(config, k) for k in ("text_config", "vision_config") if hasattr(config, k)]:
        for key, value in list(vars(sub).items()):
            if ("dropout" in key or "pdrop" in key) and isinstance(value, float):
                setattr(sub, key, 0.0)
    torch.manual_seed(0)
    model = getattr(transformers, case.auto_class).from_config(config)
    return model.float().eval()


def main_output(out):
    for key in ("logits", "logits_per_image", "last_hidden_state"):
        value = getattr(out, key, None)
        if value is not None:
            return value
    raise ValueError(f"no logits or hidden state in {type(out).__name__}")


def to(inputs, device):
    return {k: v.to(device) for k, v in inputs.items()}


def max_error(tpu_value, cpu_value):
    """Largest |tpu - cpu| beyond the tolerance's allowance, scaled: <= 1 means within tolerance."""
    diff = (tpu_value.detach().cpu().float() - cpu_value.detach().float()).abs()
    allowed = ATOL + RTOL * cpu_value.detach().float().abs()
    return float((diff / allowed).max()) if diff.numel() else 0.0


class CpuReference:
    """The CPU float32 results the checks compare against, each computed once."""

    def __init__(self, case, model):
        self.case, self.model = case, model

    @functools.cached_property
    def output(self):
        with torch.no_grad():
            return main_output(self.model(**make_inputs(self.case)))

    @functools.cached_property
    def training(self):
        return train_steps(self.model, "cpu", training_inputs(self.case))


def check_forward(case, model, reference, result):
    inputs = make_inputs(case)
    expected = reference.output
    with torch.no_grad():
        tpu_model = copy.deepcopy(model).to("tpu")
        torch_tpu.reset_metrics()
        start = time.perf_counter()
        got = main_output(tpu_model(**to(inputs, "tpu")))
        got_cpu = got.cpu()
        result["forward_seconds"] = round(time.perf_counter() - start, 2)
    result["fallback_ops"] = sorted(torch_tpu.metrics()["cpu_fallbacks"])
    result["tier1"] = got.device.type == "tpu" and got.shape == expected.shape
    result["max_abs_error"] = float((got_cpu - expected).abs().max())
    result["tier2"] = result["tier1"] and torch.allclose(got_cpu, expected, rtol=RTOL, atol=ATOL)


def train_steps(model, device, inputs, compile_model=False):
    """Losses and gradients of TRAIN_STEPS SGD steps on a copy of `model` on `device`."""
    m = copy.deepcopy(model).to(device).train()
    forward = torch.compile(m, backend="tpu") if compile_model else m
    opt = torch.optim.SGD(m.parameters(), lr=TRAIN_LR)
    losses, grads = [], []
    for _ in range(TRAIN_STEPS):
        opt.zero_grad(set_to_none=True)
        loss = forward(**to(inputs, device)).loss
        loss.backward()
        losses.append(loss.detach().cpu())
        grads.append({n: p.grad.detach().cpu() for n, p in m.named_parameters() if p.grad is not None})
        opt.step()
    return losses, grads


def training_error(expected, got):
    """Worst error / tolerance over the losses and gradients of two train_steps() runs."""
    (cpu_losses, cpu_grads), (tpu_losses, tpu_grads) = expected, got
    worst = max(max_error(t, c) for t, c in zip(tpu_losses, cpu_losses))
    for cg, tg in zip(cpu_grads, tpu_grads):
        if cg.keys() != tg.keys():
            raise AssertionError(f"different parameters got gradients: {sorted(cg.keys() ^ tg.keys())[:5]}")
        worst = max([worst] + [max_error(tg[n], cg[n]) for n in cg])
    return worst


def training_inputs(case):
    inputs = make_inputs(case)
    inputs["labels"] = inputs["input_ids"]
    return inputs


def check_training(case, model, reference, result):
    got = train_steps(model, "tpu", training_inputs(case))
    worst = training_error(reference.training, got)
    result["train_losses"] = [round(float(x), 6) for x in got[0]]
    result["train_worst_error"] = round(worst, 3)
    result["train"] = worst <= 1.0


def check_compiled(case, model, reference, result):
    """The forward pass (and for decoders the training steps) under torch.compile(backend="tpu")."""
    torch._dynamo.reset()
    inputs = make_inputs(case)
    expected = reference.output
    before = dict(torch_tpu.metrics()["compile"])
    with torch.no_grad():
        compiled = torch.compile(copy.deepcopy(model).to("tpu"), backend="tpu")
        for _ in range(2):  # captured, then replayed
            got = main_output(compiled(**to(inputs, "tpu"))).cpu()
    ok = torch.allclose(got, expected, rtol=RTOL, atol=ATOL)
    if case.kind == "decoder":
        worst = training_error(reference.training,
                               train_steps(model, "tpu", training_inputs(case), compile_model=True))
        result["compiled_train_worst_error"] = round(worst, 3)
        ok = ok and worst <= 1.0
    after = torch_tpu.metrics()["compile"]
    result["compiled_captures"] = after["captures"] - before["captures"]
    result["compiled_eager_runs"] = after["eager_runs"] - before["eager_runs"]
    result["compiled"] = bool(ok)


def check_generation(case, model, reference, result):
    inputs = make_inputs(case)
    kwargs = dict(max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=None, pad_token_id=0, use_cache=True)
    with torch.no_grad():
        expected = model.generate(**inputs, **kwargs)
        tpu_model = copy.deepcopy(model).to("tpu")
        start = time.perf_counter()
        got = tpu_model.generate(**to(inputs, "tpu"), **kwargs).cpu()
        result["generate_seconds"] = round(time.perf_counter() - start, 2)
    result["generate"] = got.shape == expected.shape and torch.equal(got, expected)
    if not result["generate"]:
        same = (got[:, -NEW_TOKENS:] == expected[:, -NEW_TOKENS:]).all(0) if got.shape == expected.shape else None
        result["generate_first_difference"] = int((~same).nonzero()[0]) if same is not None else -1


def run(name, train=True, generate=True, compiled=True):
    """All checks of one architecture; returns a dict (errors are recorded, not raised)."""
    case = by_name(name)
    result = {"name": name, "family": case.family, "kind": case.kind}
    start = time.perf_counter()
    try:
        model = build(case)
        reference = CpuReference(case, model)
        steps = [("forward", check_forward)]
        if case.kind == "decoder":
            if train:
                steps.append(("train", check_training))
            if generate:
                steps.append(("generate", check_generation))
        if case.compiled and compiled:
            steps.append(("compiled", check_compiled))
        for step, check in steps:
            try:
                check(case, model, reference, result)
            except Exception as e:  # recorded in the report
                result[step if step != "forward" else "tier1"] = False
                result.setdefault("errors", {})[step] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                if os.environ.get("TORCH_TPU_MODEL_TRACEBACK"):
                    traceback.print_exc()
    except Exception as e:
        result["tier1"] = False
        result.setdefault("errors", {})["build"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    result.setdefault("tier2", False)
    result["seconds"] = round(time.perf_counter() - start, 2)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=[m.name for m in MODELS])
    parser.add_argument("--no-train", action="store_true")
    parser.add_argument("--no-generate", action="store_true")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    result = run(args.name, not args.no_train, not args.no_generate, not args.no_compile)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
