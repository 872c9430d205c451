"""Strict vs fused eager vs torch.compile(backend="tpu"), side by side in one run.

    python benchmarks/eager_modes.py [--repeats R] [--only NAME ...] [--chart PNG]

For each workload the same model and optimizer alternate between the modes:
each repeat times a few steady-state steps in strict, in fused and compiled
(the order reverses between repeats), so machine noise hits all alike.
"compiled" runs the forward with the loss and the optimizer step as
torch.compile(backend="tpu") graphs (the backward is AOTAutograd's compiled
graph), with what little is left between them in strict mode, on its own copy
of the model and optimizer (so its peak memory includes the eager copy, and
theirs the compiled one). Prints median
steps/s, the fused/strict and compiled/fused ratios, and the peak device memory of each mode
(live buffers plus each running program's outputs and XLA scratch space)
over the timed steps, with the peak of the first steps beside it.
Then the host cost of recording one op in fused mode, and the first step of
the small GPT in a fresh process with a cold and then a warm disk cache.
The table is also drawn as a PNG (docs/eager_modes.png unless --chart says).
"""
import argparse
import functools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

import torch_tpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart  # noqa: E402
import workloads  # noqa: E402

MODES = ("strict", "fused", "compiled")
# Fused mode needs two iterations to see a loop's period and one more to run
# its steady programs: the early peak is reported beside the steady one.
FIRST_STEPS = 5


def training_steps(make_model, make_batch, lr, loss_fn=workloads.loss_of):
    """The eager training step, and its compiled twin on a second copy of the model and optimizer.

    A compiled optimizer step moves the optimizer's step counters to the device
    (as Dynamo does for CUDA), which would change what the eager step does."""
    steps = {}
    for kind in ("eager", "compiled"):
        torch.manual_seed(0)
        model = make_model().tpu()
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        inputs, targets = make_batch()
        if kind == "eager":
            steps[kind] = functools.partial(workloads.train_step, model, opt, inputs, targets, loss_fn)
        else:
            steps[kind] = functools.partial(workloads.compiled_train_step(model, opt, loss_fn), inputs, targets)
    return steps


def make_mlp():
    return training_steps(workloads.mlp, lambda: workloads.mlp_batch("tpu"), lr=1e-3)


def make_gpt(cfg):
    return lambda: training_steps(lambda: workloads.GPT(cfg), lambda: workloads.gpt_batch(cfg, "tpu"), lr=1e-4)


def make_elementwise():
    torch.manual_seed(0)
    model = workloads.ElementwiseChain(1024).tpu()
    x = torch.randn(8, 256, 1024).tpu().requires_grad_()
    compiled = torch.compile(model, backend="tpu")

    def step(fn):
        x.grad = None
        fn(x).mean().backward()
    return {"eager": lambda: step(model), "compiled": lambda: step(compiled)}


# name -> (builder, steps per timed segment, target fused/strict ratio)
WORKLOADS = {
    "mlp_adamw": (make_mlp, 200, None),
    "gpt_small": (make_gpt(workloads.GPT_SMALL), 20, 1.5),
    "gpt_medium": (make_gpt(workloads.GPT_MEDIUM), 3, 1.0),
    "elementwise": (make_elementwise, 10, 1.5),
}


def timed_segment(step, steps):
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.tpu.synchronize()
    return steps / (time.perf_counter() - start), torch.tpu.max_memory_allocated()


def alternating_segments(steps_of, steps, repeats):
    """({mode: median steps/s}, {mode: peak bytes}) over `repeats` timed segments of `steps`
    steps per mode, the order of the modes reversed every other repeat."""
    rates, peaks = {m: [] for m in MODES}, {m: 0 for m in MODES}
    for r in range(repeats):
        for mode in (MODES if r % 2 == 0 else MODES[::-1]):
            with run_mode(mode):
                rate, peak = timed_segment(steps_of[mode], steps)
            rates[mode].append(rate)
            peaks[mode] = max(peaks[mode], peak)
    return {m: statistics.median(rates[m]) for m in MODES}, peaks


def run_mode(mode):
    """The eager mode a column runs in."""
    return torch_tpu.eager_mode("strict" if mode == "compiled" else mode)


def compare(name, repeats):
    build, steps, target = WORKLOADS[name]
    step_fns = build()
    steps_of = {m: step_fns["compiled" if m == "compiled" else "eager"] for m in MODES}
    warmup_peaks = {}
    for mode in MODES:  # compile and settle every mode before timing
        step = steps_of[mode]
        with run_mode(mode):
            torch.tpu.synchronize()
            torch.tpu.reset_peak_memory_stats()
            for _ in range(FIRST_STEPS):
                step()
            torch.tpu.synchronize()
            warmup_peaks[mode] = torch.tpu.max_memory_allocated()
            workloads.warm_up(step)
    compiles_before = torch_tpu.metrics()["compiles"]
    med, peaks = alternating_segments(steps_of, steps, repeats)
    ratio = med["fused"] / med["strict"]
    verdict = "" if target is None else (" ok" if ratio >= target else f" BELOW target {target}x")
    compiled_ratio = med["compiled"] / med["fused"]
    mem_verdict = "ok" if peaks["fused"] <= peaks["strict"] else "FUSED HIGHER"
    print(f"{name:12s} strict {med['strict']:9.2f} steps/s  fused {med['fused']:9.2f} steps/s  "
          f"compiled {med['compiled']:9.2f} steps/s  fused/strict {ratio:5.2f}x{verdict}  "
          f"compiled/fused {compiled_ratio:5.2f}x{' ok' if compiled_ratio >= 1 else ' BELOW target 1x'}")
    print(f"{'':12s} peak MiB strict {peaks['strict'] / 2**20:8.2f}  fused {peaks['fused'] / 2**20:8.2f}  "
          f"compiled {peaks['compiled'] / 2**20:8.2f}  fused {mem_verdict}  (first {FIRST_STEPS} steps: "
          + ", ".join(f"{m} {warmup_peaks[m] / 2**20:.2f}" for m in MODES) + "); compiles while timing: "
          f"{torch_tpu.metrics()['compiles'] - compiles_before}")
    sys.stdout.flush()
    return med, peaks


def recording_cost(ops=4000, repeats=7):
    """Host seconds per deferred op: a chain of small elementwise ops, recorded without running.

    The ops follow a fixed pseudo-random order over ten kinds, so the
    loop-period split rule finds no period to flush on and the whole chain
    stays one pending program.
    """
    x = torch.randn(16, 16).tpu()
    y = torch.randn(16, 16).tpu()
    cx, cy = x.cpu(), y.cpu()
    kinds = (torch.add, torch.mul, torch.sub, torch.maximum, torch.minimum, torch.div,
             lambda a, b: torch.tanh(a), lambda a, b: torch.sigmoid(a), lambda a, b: torch.neg(a),
             lambda a, b: torch.abs(a))
    order = random.Random(0).choices(kinds, k=ops)
    previous_bound = torch_tpu._C._set_fused_max_nodes(100 * ops)
    per_op, cpu_per_op = [], []
    try:
        with torch_tpu.eager_mode("fused"):
            for _ in range(repeats):
                torch.tpu.synchronize()
                flushes = sum(torch_tpu.metrics()["flushes"].values())
                start = time.perf_counter()
                z = x
                for op in order:
                    z = op(z, y)
                elapsed = time.perf_counter() - start
                assert sum(torch_tpu.metrics()["flushes"].values()) == flushes, "the chain flushed early"
                per_op.append(elapsed / ops)
                del z
                torch.tpu.synchronize()
                start = time.perf_counter()
                z = cx
                for op in order:
                    z = op(z, cy)
                cpu_per_op.append((time.perf_counter() - start) / ops)
    finally:
        torch_tpu._C._set_fused_max_nodes(previous_bound)
    us, cpu_us = statistics.median(per_op) * 1e6, statistics.median(cpu_per_op) * 1e6
    print(f"fused host time to record one op (ten elementwise kinds on 16x16, chain of {ops}): {us:.2f} us "
          f"({'ok' if us < 5 else 'ABOVE'} target 5 us); PyTorch CPU eager runs the same ops in {cpu_us:.2f} us each")


FIRST_STEP_CHILD = """
import os, sys, time
start = time.perf_counter()
import torch, torch_tpu
sys.path.insert(0, {bench_dir!r})
import workloads
torch_tpu.set_eager_mode("fused")
torch.manual_seed(0)
cfg = workloads.GPT_SMALL
model = workloads.GPT(cfg).tpu()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
idx, targets = workloads.gpt_batch(cfg, "tpu")
torch.tpu.synchronize()
ready = time.perf_counter()
workloads.train_step(model, opt, idx, targets).item()
done = time.perf_counter()
m = torch_tpu.metrics()
print(done - ready, done - start, m["compiles"], m["disk_cache_hits"])
"""


def first_step_cold_vs_warm():
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache_dir)
        code = FIRST_STEP_CHILD.format(bench_dir=os.path.dirname(os.path.abspath(__file__)))
        results = []
        for label in ("cold", "warm"):
            out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            step_s, total_s, compiles, disk_hits = float(out[0]), float(out[1]), int(out[2]), int(out[3])
            results.append(step_s)
            print(f"gpt_small first step, fresh process, {label} disk cache: {step_s:6.2f} s "
                  f"(process start to step end {total_s:6.2f} s; compiles {compiles}, disk hits {disk_hits})")
        print(f"first step cold/warm: {results[0] / results[1]:.1f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), default=None)
    parser.add_argument("--skip-extras", action="store_true",
                        help="only the side-by-side table (no recording cost, no cold/warm start)")
    parser.add_argument("--chart", default=os.path.join(os.path.dirname(__file__), "..", "docs", "eager_modes.png"),
                        help="where the PNG chart of the table goes ('' for none)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    setting = f"platform {torch.tpu.platform()}, {args.repeats} repeats, medians; torch {torch.__version__}"
    print(setting)
    names = args.only or list(WORKLOADS)
    results = {name: compare(name, args.repeats) for name in names}
    if args.chart:
        speed = {m: [results[n][0][m] / results[n][0]["strict"] for n in names] for m in MODES}
        peak = {m: [results[n][1][m] / results[n][1]["strict"] for n in names] for m in MODES}
        chart.write_bar_chart(args.chart, "Eager modes: benchmarks/eager_modes.py", [
            ("steps/s relative to strict", names, speed, 1.0),
            ("peak device memory relative to strict", names, peak, 1.0),
        ], note=setting)
    if not args.skip_extras:
        recording_cost()
        first_step_cold_vs_warm()


if __name__ == "__main__":
    main()
