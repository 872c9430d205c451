"""Host time per small elementwise op in strict mode (cache hits), beside PyTorch CPU eager.

    python benchmarks/op_overhead.py [--ops N] [--repeats R]

Prints medians over R repeats of N ops each, their ratio, and the cache counters.
"""
import argparse
import statistics
import time

import torch

import torch_tpu


def per_op_seconds(x, y, ops):
    start = time.perf_counter()
    for _ in range(ops):
        torch.add(x, y)
    return (time.perf_counter() - start) / ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    torch_tpu.set_eager_mode("strict")
    cpu_x, cpu_y = torch.randn(16, 16), torch.randn(16, 16)
    tpu_x, tpu_y = cpu_x.tpu(), cpu_y.tpu()
    per_op_seconds(tpu_x, tpu_y, 100)  # compile and warm up
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()

    tpu_times, cpu_times = [], []
    for _ in range(args.repeats):
        tpu_times.append(per_op_seconds(tpu_x, tpu_y, args.ops))
        torch.tpu.synchronize()
        cpu_times.append(per_op_seconds(cpu_x, cpu_y, args.ops))
    tpu_us = statistics.median(tpu_times) * 1e6
    cpu_us = statistics.median(cpu_times) * 1e6
    m = torch_tpu.metrics()
    print(f"op: torch.add on 16x16 float32, {args.repeats} repeats x {args.ops} ops, medians")
    print(f"tpu strict host time per op: {tpu_us:8.2f} us")
    print(f"cpu eager time per op:       {cpu_us:8.2f} us")
    print(f"ratio tpu/cpu:               {tpu_us / cpu_us:8.2f}")
    print(f"cache: compiles={m['compiles']} hits={m['cache_hits']} misses={m['cache_misses']}"
          f" executions={m['executions']}")


if __name__ == "__main__":
    main()
