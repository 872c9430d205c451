"""What the device-side range checks of tpu index tensors cost, side by side in one run.

    python benchmarks/index_checks.py [--steps 40] [--repeats 5]

Workloads that index with tpu tensors every step, run in strict and fused mode
with the checks on (the default) and off (`torch_tpu.set_index_checks(False)`,
or TORCH_TPU_CHECK_INDICES=0):

- `embedding_lm`: an embedding + a 2-layer MLP + cross-entropy language-model
  training step (AdamW), token ids drawn on the device, `loss.item()` each step;
- `gather_scatter`: a gather, a scatter_add_ and an index_select over a
  large table each step, its sum read back.

Prints steps/s (the median of `--repeats` timed runs of `--steps` steps, on and
off alternating, after a warm-up that compiles both) and the ratio on / off.
"""
import argparse
import statistics
import time

import torch

import torch_tpu
from workloads import warm_up


def embedding_lm():
    torch.manual_seed(0)
    vocab, dim = 4096, 128
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, dim), torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(),
                                torch.nn.Linear(4 * dim, vocab)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        ids = torch.randint(vocab, (16, 64), device="tpu")
        loss = torch.nn.functional.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()

    return step


def gather_scatter():
    torch.manual_seed(0)
    table = torch.randn(65536, 64, device="tpu")
    acc = torch.zeros(65536, 64, device="tpu")

    def step():
        rows = torch.randint(65536, (8192,), device="tpu")
        picked = table.index_select(0, rows)
        acc.scatter_add_(0, rows[:, None].expand(-1, 64), picked)
        cols = torch.randint(64, (8192, 8), device="tpu")
        return (picked.gather(1, cols).sum() + acc[rows[:128]].sum()).item()

    return step


def timed(step, checks, steps):
    torch_tpu.set_index_checks(checks)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def compare(make, mode, steps, repeats):
    """Steps/s with the checks on and off: the two alternate, after both compiled."""
    torch_tpu.set_eager_mode(mode)
    previous = torch_tpu.set_index_checks(True)
    try:
        step = make()
        for checks in (True, False):
            torch_tpu.set_index_checks(checks)
            warm_up(step)
        on, off = [], []
        for _ in range(repeats):
            on.append(timed(step, True, steps))
            off.append(timed(step, False, steps))
        return steps / statistics.median(on), steps / statistics.median(off)
    finally:
        torch_tpu.set_index_checks(previous)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'workload':16} {'mode':7} {'checks on':>10} {'checks off':>11} {'on/off':>7}   (steps/s, median of {args.repeats})")
    for name, make in (("embedding_lm", embedding_lm), ("gather_scatter", gather_scatter)):
        for mode in ("strict", "fused"):
            on, off = compare(make, mode, args.steps, args.repeats)
            print(f"{name:16} {mode:7} {on:10.1f} {off:11.1f} {on / off:7.2f}", flush=True)


if __name__ == "__main__":
    main()
