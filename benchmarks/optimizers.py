"""Optimizer steps on tpu: for-loop, foreach and fused=True, side by side in one run.

    python benchmarks/optimizers.py [--repeats R] [--steps S] [--width W] [--layers L]

For Adam, AdamW, SGD (momentum) and Adagrad: a step of an MLP (L linear layers of
width W, batch 32) in fused mode — forward, backward, optimizer step, synchronize —
timed after warm-up; medians over R repeats of S steps, each implementation's time
as a ratio to foreach (PyTorch's default), and the programs one step runs.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn

import torch_tpu
from workloads import warm_up

IMPLEMENTATIONS = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
OPTIMIZERS = {"Adam": {"lr": 1e-3}, "AdamW": {"lr": 1e-3, "weight_decay": 0.01},
              "SGD": {"lr": 0.01, "momentum": 0.9}, "Adagrad": {"lr": 0.01}}


def make_step(name, implementation, args):
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(args.width, args.width) for _ in range(args.layers)]).tpu()
    optimizer = getattr(torch.optim, name)(model.parameters(), **OPTIMIZERS[name], **IMPLEMENTATIONS[implementation])
    x = torch.randn(32, args.width, device="tpu")

    def step():
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
        torch.tpu.synchronize()

    return step


def seconds_per_step(step, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=8)
    args = parser.parse_args()
    print(f"MLP {args.layers} x Linear({args.width}, {args.width}), batch 32, fused mode; "
          f"medians of {args.repeats} repeats of {args.steps} steps")
    print(f"{'optimizer':10} {'implementation':15} {'ms/step':>8} {'vs foreach':>10} {'programs/step':>13} "
          f"{'cpu fallbacks':>13}")
    for name in OPTIMIZERS:
        steps = {impl: make_step(name, impl, args) for impl in IMPLEMENTATIONS}
        for step in steps.values():
            warm_up(step)
        times = {impl: [] for impl in IMPLEMENTATIONS}
        for _ in range(args.repeats):  # interleaved, so machine noise falls on all alike
            for impl, step in steps.items():
                times[impl].append(seconds_per_step(step, args.steps))
        foreach = statistics.median(times["foreach"])
        for impl, step in steps.items():
            torch_tpu.reset_metrics()
            step()
            m = torch_tpu.metrics()
            median = statistics.median(times[impl])
            print(f"{name:10} {impl:15} {median * 1e3:8.2f} {median / foreach:9.2f}x {m['executions']:13d} "
                  f"{sum(m['cpu_fallbacks'].values()):13d}")


if __name__ == "__main__":
    main()
