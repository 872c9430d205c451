"""What LLVM's optimization level costs and buys on the XLA CPU plugin, side by side in one run.

    python benchmarks/compile_level.py [--configs level3 level1 level0 tiered] [--repeats 2] [--only NAME ...]

Each (workload, configuration) runs in a fresh process with a fresh disk cache.
"levelN" sets XLA_FLAGS=--xla_backend_optimization_level=N (a flag set there
overrides what torch_tpu compiles with, and turns its two tiers off; 3 is XLA's
default); "tiered" is torch_tpu's default: level 1, and level 0 first for small
programs until they recur (csrc/exec/exec.cpp); "xla:FLAGS" is "tiered" with
XLA_FLAGS=FLAGS, e.g. "xla:--xla_cpu_use_fusion_emitters=true" (XLA's MLIR
fusion emitters in both tiers; torch_tpu's quick tier uses the classic ones).
Configurations alternate order between repeats. For each: the seconds spent compiling, the wall time of the
first steps (compiles included) and the median steady-state step time.
Ratios are against the first configuration listed.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import sys, time, statistics
sys.path.insert(0, {bench_dir!r})
import torch, torch.nn as nn, torch.nn.functional as F
import torch_tpu, workloads

def gpt(cfg):
    torch.manual_seed(0)
    model = workloads.GPT(cfg).tpu()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs, targets = workloads.gpt_batch(cfg, "tpu")
    return lambda: workloads.train_step(model, opt, inputs, targets)

def cnn():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).tpu()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(16, 3, 32, 32).tpu(), torch.randint(0, 10, (16,)).tpu()
    return lambda: workloads.train_step(model, opt, x, y)

def elementwise():
    torch.manual_seed(0)
    model = workloads.ElementwiseChain(1024).tpu()
    x = torch.randn(8, 256, 1024).tpu().requires_grad_()
    def step():
        x.grad = None
        model(x).mean().backward()
    return step

def mlp():
    torch.manual_seed(0)
    model = workloads.mlp().tpu()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = workloads.mlp_batch("tpu")
    return lambda: workloads.train_step(model, opt, x, y)

def small_programs():
    # A sweep of small, distinct programs (what a test suite or an op sweep runs):
    # every step is a new set of shapes, so every step compiles.
    counter = [0]
    def step():
        counter[0] += 1
        n = 5 + counter[0]
        x = torch.randn(n, 7, device="tpu")
        idx = torch.randint(0, n, (5,), device="tpu")
        y = x.index_select(0, idx).softmax(1) + x[:5].sin()
        x.index_copy_(0, idx, y.cos())
        z = torch.cumsum(x, 0).topk(2, dim=1).values.sum()
        z.item()
    return step

WORKLOADS = {{"gpt_small": lambda: gpt(workloads.GPT_SMALL), "gpt_medium": lambda: gpt(workloads.GPT_MEDIUM),
              "cnn": cnn, "elementwise": elementwise, "mlp": mlp, "small_programs": small_programs}}
step = WORKLOADS[{name!r}]()
first = {first}
start = time.perf_counter()
for _ in range(first):
    step()
torch.tpu.synchronize()
first_s = time.perf_counter() - start
times = []
for _ in range({steady}):
    t = time.perf_counter()
    step()
    torch.tpu.synchronize()
    times.append(time.perf_counter() - t)
print(torch_tpu.metrics()["compile_seconds"], first_s, statistics.median(times))
"""

# name -> (first steps, steady steps timed one by one)
WORKLOADS = {
    "gpt_small": (5, 20),
    "gpt_medium": (5, 5),
    "cnn": (5, 20),
    "elementwise": (5, 10),
    "mlp": (20, 50),
    "small_programs": (20, 10),
}


def run(name, config):
    first, steady = WORKLOADS[name]
    code = CHILD.format(bench_dir=BENCH_DIR, name=name, first=first, steady=steady)
    with tempfile.TemporaryDirectory() as cache_dir:
        env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache_dir)
        env.pop("XLA_FLAGS", None)
        if config.startswith("level"):
            env["XLA_FLAGS"] = f"--xla_backend_optimization_level={config[len('level'):]}"
        elif config.startswith("xla:"):
            env["XLA_FLAGS"] = config[len("xla:"):]
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{name} with {config} failed:\n{proc.stderr[-3000:]}")
    out = proc.stdout.split()
    return [float(v) for v in out[-3:]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", nargs="+", default=["level3", "level1", "level0", "tiered"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), default=None)
    args = parser.parse_args()
    base = args.configs[0]
    print(f"| workload | compiled with | compile s | first steps s | steady step ms | "
          f"compile vs {base} | first steps vs {base} | steady vs {base} |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only or WORKLOADS:
        results = {config: [] for config in args.configs}
        for r in range(args.repeats):
            for config in (args.configs if r % 2 == 0 else list(reversed(args.configs))):
                results[config].append(run(name, config))
        med = {config: [statistics.median(col) for col in zip(*rows)] for config, rows in results.items()}
        for config in args.configs:
            c, f, s = med[config]
            bc, bf, bs = med[base]
            print(f"| {name} | {config} | {c:.2f} | {f:.2f} | {s * 1e3:.2f} | "
                  f"{c / bc:.2f}x | {f / bf:.2f}x | {s / bs:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
