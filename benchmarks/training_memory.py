"""Device memory across training steps of the quickstart MLP: it must return to one level each step.

    python benchmarks/training_memory.py [--steps N]

Prints memory_allocated() after each of a few sampled steps, the distinct
levels seen after warm-up, the peak, and steps per second.
"""
import argparse
import time
import warnings

import torch
import torch.nn as nn

import torch_tpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).tpu()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32).tpu()
    y = torch.randint(0, 10, (16,)).tpu()

    levels = []
    start = None
    for step in range(args.steps):
        if step == 10:
            torch.tpu.synchronize()
            start = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        levels.append(torch.tpu.memory_allocated())
    torch.tpu.synchronize()
    elapsed = time.perf_counter() - start
    after_warmup = levels[10:]
    for step in [0, 1, 2, 10, args.steps // 2, args.steps - 1]:
        print(f"step {step:5d}: memory_allocated = {levels[step]:,} bytes")
    print(f"distinct levels after step 10: {sorted(set(after_warmup))}")
    print(f"max_memory_allocated = {torch.tpu.max_memory_allocated():,} bytes")
    print(f"steady state: {'yes' if len(set(after_warmup)) == 1 else 'NO'}; "
          f"{(args.steps - 10) / elapsed:.1f} steps/s; compiles={torch_tpu.metrics()['compiles']}")


if __name__ == "__main__":
    main()
