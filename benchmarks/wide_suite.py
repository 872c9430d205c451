"""Fused mode on workloads it was not tuned for: strict, fused and compiled, side by side in one run.

    python benchmarks/wide_suite.py [--repeats R] [--only NAME ...] [--no-first-steps] [--out docs/benchmarks.md]

Workloads: GPTs of several widths, depths, batch and context sizes; a CNN with BatchNorm; an
LSTM language model; a top-2 mixture of experts; a UNet-style block with GroupNorm and
upsampling; an EmbeddingBag recommender; and the inference forward passes of a GPT and the
CNN. Training steps use AdamW and read the loss every step (`loss.item()`, as a training loop
that logs it does); an inference step reads its predictions (`argmax(-1).cpu()`).

For each workload and mode (strict, fused, compiled = torch.compile(backend="tpu") of the loss
and of the optimizer step, or of the model for inference): steps/s, the median over R timed
segments that alternate between the modes (so machine noise hits all alike), each about half a
second long after warm-up steps (workloads.warm_up: until the programs are compiled and
optimized); the peak device memory over the timed steps; and the time of
the first 5 steps in a fresh process from a cold and then a warm disk cache (model built and on
the device before the clock starts). Prints the table and writes it, with the setting and the
command, to docs/benchmarks.md (or --out).
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

import torch_tpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as w  # noqa: E402
from eager_modes import MODES, alternating_segments, run_mode, timed_segment, training_steps  # noqa: E402

SEGMENT_SECONDS = 0.5
FIRST_STEPS = 5


def gpt(layers, width, seq, batch, vocab=1024, heads=4):
    cfg = w.GPTConfig(layers=layers, width=width, seq=seq, batch=batch, vocab=vocab, heads=heads)
    return dict(model=lambda: w.GPT(cfg), batch=lambda: w.gpt_batch(cfg, "tpu"), loss=w.loss_of, lr=1e-4)


# name -> what the workload builds: model, batch (inputs, targets), loss (training) or
# infer=True (a forward pass under no_grad, in eval mode).
WORKLOADS = {
    "gpt_w128_d2": gpt(layers=2, width=128, seq=64, batch=8),
    "gpt_w192_d3": gpt(layers=3, width=192, seq=64, batch=4, heads=6),
    "gpt_w256_d6_ctx128": gpt(layers=6, width=256, seq=128, batch=4, vocab=2048, heads=8),
    "gpt_w512_d2_b16": gpt(layers=2, width=512, seq=32, batch=16, vocab=4096, heads=8),
    "gpt_w128_d8": gpt(layers=8, width=128, seq=64, batch=4),
    "cnn_batchnorm": dict(model=w.ConvNet, batch=lambda: w.image_batch("tpu"), loss=w.loss_of, lr=1e-3),
    "lstm_lm": dict(model=w.LSTMTagger, batch=lambda: w.token_batch("tpu"), loss=w.loss_of, lr=1e-3),
    "moe_top2": dict(model=w.MoEModel, batch=lambda: w.token_batch("tpu", batch=8, seq=64), loss=w.loss_of,
                     lr=1e-3),
    "unet_groupnorm": dict(model=w.UNetBlock, batch=lambda: w.denoise_batch("tpu"), loss=w.mse_loss_of, lr=1e-3),
    "recsys_embbag": dict(model=w.Recommender, batch=lambda: w.recommender_batch("tpu"), loss=w.bce_loss_of,
                          lr=1e-3),
    "infer_gpt_w256": dict(gpt(layers=6, width=256, seq=128, batch=4, vocab=2048, heads=8), infer=True),
    "infer_cnn_b64": dict(model=w.ConvNet, batch=lambda: w.image_batch("tpu", batch=64), infer=True),
}


def make_steps(name):
    """{"eager": step, "compiled": step} on two copies of the model (and optimizer)."""
    spec = WORKLOADS[name]
    if not spec.get("infer"):
        steps = training_steps(spec["model"], spec["batch"], spec["lr"], spec["loss"])
        return {kind: (lambda step=step: step().item()) for kind, step in steps.items()}
    steps = {}
    for kind in ("eager", "compiled"):
        torch.manual_seed(0)
        model = spec["model"]().tpu().eval()
        inputs, _ = spec["batch"]()
        forward = torch.compile(model, backend="tpu") if kind == "compiled" else model

        def step(forward=forward, inputs=inputs):
            with torch.no_grad():
                return forward(inputs).argmax(-1).cpu()
        steps[kind] = step
    return steps


def steady_state(name, repeats):
    """({mode: median steps/s}, {mode: peak bytes over the timed steps})."""
    # Each workload's optimizer is a new instance of code Dynamo has compiled before:
    # without a reset, the later workloads' steps would pass its recompile limit.
    torch._dynamo.reset()
    step_fns = make_steps(name)
    steps_of = {m: step_fns["compiled" if m == "compiled" else "eager"] for m in MODES}
    seconds_per_step = {}
    for mode in MODES:
        with run_mode(mode):
            w.warm_up(steps_of[mode])
            rate, _ = timed_segment(steps_of[mode], 2)
            seconds_per_step[mode] = 1 / rate
    steps = max(2, int(SEGMENT_SECONDS / statistics.median(seconds_per_step.values())))
    return alternating_segments(steps_of, steps, repeats)


FIRST_STEPS_CHILD = """
import sys, time, warnings
warnings.simplefilter("ignore")
import torch, torch_tpu
sys.path.insert(0, {bench_dir!r})
import wide_suite
mode = {mode!r}
torch_tpu.set_eager_mode("strict" if mode == "compiled" else mode)
step = wide_suite.make_steps({name!r})["compiled" if mode == "compiled" else "eager"]
torch.tpu.synchronize()
start = time.perf_counter()
for _ in range({steps}):
    step()
torch.tpu.synchronize()
m = torch_tpu.metrics()
print("RESULT", time.perf_counter() - start, m["compiles"], m["disk_cache_hits"])
"""


def first_steps(name, mode):
    """Seconds of the first steps in a fresh process: (cold disk cache, warm disk cache)."""
    code = FIRST_STEPS_CHILD.format(bench_dir=os.path.dirname(os.path.abspath(__file__)), name=name, mode=mode,
                                    steps=FIRST_STEPS)
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache_dir)
        times = []
        for _ in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{name} {mode}: the first-steps child failed:\n{r.stderr[-3000:]}")
            words = r.stdout.split()
            times.append(float(words[words.index("RESULT") + 1]))
    return tuple(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), default=None)
    parser.add_argument("--no-first-steps", action="store_true", help="skip the cold/warm fresh-process runs")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "benchmarks.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    setting = (f"platform {torch.tpu.platform()} ({torch.tpu.get_device_name()}), torch {torch.__version__}, "
               f"{os.cpu_count()} CPU cores; {args.repeats} repeats, medians; {datetime.date.today()}")
    print(setting)
    rows = []
    for name in args.only or list(WORKLOADS):
        rates, peaks = steady_state(name, args.repeats)
        starts = {} if args.no_first_steps else {m: first_steps(name, m) for m in MODES}
        rows.append((name, rates, peaks, starts))
        print(row_text(rows[-1]))
        sys.stdout.flush()
    write_report(args, setting, rows)


def row_text(row):
    name, rates, peaks, starts = row
    mib = {m: peaks[m] / 2**20 for m in MODES}
    text = (f"{name:20s} steps/s " + "  ".join(f"{m} {rates[m]:8.2f}" for m in MODES)
            + f"  fused/strict {rates['fused'] / rates['strict']:5.2f}x"
            + f"  fused/compiled {rates['fused'] / rates['compiled']:5.2f}x\n"
            + f"{'':20s} peak MiB " + "  ".join(f"{m} {mib[m]:8.2f}" for m in MODES)
            + f"  fused/strict {mib['fused'] / mib['strict']:5.2f}")
    if starts:
        text += (f"\n{'':20s} first {FIRST_STEPS} steps, cold/warm s: "
                 + "  ".join(f"{m} {starts[m][0]:.2f}/{starts[m][1]:.2f}" for m in MODES))
    return text


def geometric_mean(values):
    product = 1.0
    for v in values:
        product *= v
    return product ** (1 / len(values))


def write_report(args, setting, rows):
    lines = ["# Eager modes on a wide suite of workloads", "",
             "Written by `python benchmarks/wide_suite.py" + (f" --repeats {args.repeats}" if args.repeats != 3 else "")
             + (" --only " + " ".join(args.only) if args.only else "")
             + (" --no-first-steps" if args.no_first_steps else "") + "` (see its docstring for what is measured).",
             "", f"Setting: {setting}.", "",
             "| workload | steps/s strict / fused / compiled | fused/strict | fused/compiled "
             "| peak MiB strict / fused / compiled | fused peak/strict "
             f"| first {FIRST_STEPS} steps, s, cold / warm disk cache: strict; fused; compiled |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, rates, peaks, starts in rows:
        mib = {m: peaks[m] / 2**20 for m in MODES}
        first = "; ".join(f"{starts[m][0]:.2f} / {starts[m][1]:.2f}" for m in MODES) if starts else "not run"
        lines.append(f"| {name} | " + " / ".join(f"{rates[m]:.2f}" for m in MODES)
                     + f" | {rates['fused'] / rates['strict']:.2f}x | {rates['fused'] / rates['compiled']:.2f}x | "
                     + " / ".join(f"{mib[m]:.2f}" for m in MODES) + f" | {mib['fused'] / mib['strict']:.2f} | {first} |")
    training = [r for r in rows if not WORKLOADS[r[0]].get("infer")]
    if training:
        ratios = [r[1]["fused"] / r[1]["strict"] for r in training]
        lines += ["", f"Training workloads: fused/strict geometric mean {geometric_mean(ratios):.2f}x, "
                      f"lowest {min(ratios):.2f}x ({training[ratios.index(min(ratios))][0]}); "
                      f"fused peak above strict on {sum(r[2]['fused'] > r[2]['strict'] for r in rows)} "
                      f"of {len(rows)} workloads."]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {os.path.relpath(args.out)}")


if __name__ == "__main__":
    main()
