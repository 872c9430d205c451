"""Data and tensor parallelism on tpu: DDP, FSDP2 and TP steps with 2 ranks beside 1 rank.

    python benchmarks/distributed.py [--steps N]

Trains the same GPT (benchmarks/workloads.py, width 256, 4 blocks, vocabulary 4096,
AdamW one parameter at a time) with torchrun: one rank alone (no process group work), then 2 ranks under
DDP (each rank a batch of the 1-rank size), FSDP2 (fully_shard per block and on
the root: parameters, gradients and optimizer state split across the ranks) and
tensor parallelism (the MLPs column/row parallel; each rank the whole batch). For
each it prints the median step time, the ratio to one rank, the device memory
the rank's parameters and optimizer state hold, and the rank's peak device memory.
The 2 ranks share this machine's cores, so step-time ratios show the overhead of
the parallel form on one host rather than a speedup.
"""
import argparse
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONFIG = dict(layers=4, width=256, seq=128, batch=4, vocab=4096)


def state_bytes(model, opt):
    """Bytes of this rank's parameters and optimizer state (local shards of DTensors)."""
    from torch.distributed.tensor import DTensor

    def local(t):
        return t.to_local() if isinstance(t, DTensor) else t
    total = sum(local(p).nbytes for p in model.parameters())
    for s in opt.state.values():
        total += sum(local(v).nbytes for v in s.values() if hasattr(v, "nbytes") and v.dim() > 0)
    return total


def measure(model, steps, batch):
    """Median step time, state bytes and peak memory of `model` training on `batch` (CPU inputs, targets)."""
    import torch
    import workloads
    # One parameter at a time: tensor parallelism leaves some parameters plain
    # tensors, which foreach kernels cannot mix with DTensors (fused mode fuses the loop anyway).
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    inputs, targets = (t.tpu() for t in batch)
    # Compile, optimize (after 8 host waits), and create the optimizer state; a fixed count, so
    # that every rank runs the same collectives.
    for _ in range(workloads.WARMUP_STEPS):
        workloads.train_step(model, opt, inputs, targets)
        torch.tpu.synchronize()
    torch.tpu.synchronize()
    torch.tpu.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        workloads.train_step(model, opt, inputs, targets)
        torch.tpu.synchronize()
        times.append(time.perf_counter() - start)
    result = {"step_s": statistics.median(times), "state_bytes": state_bytes(model, opt),
              "peak_bytes": torch.tpu.max_memory_allocated()}
    del opt
    return result


def worker(args):
    import torch
    import torch.distributed as dist
    import workloads
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.nn.parallel import DistributedDataParallel as DDP
    warnings.simplefilter("ignore")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group()
    cfg = workloads.GPTConfig(**CONFIG)

    def fresh():
        gc.collect()
        torch.manual_seed(0)
        return workloads.GPT(cfg).tpu()

    one_rank_batch = workloads.gpt_batch(cfg, "cpu", seed=0)
    results = {}
    if world == 1:
        results["1 rank"] = measure(fresh(), args.steps, one_rank_batch)
    else:
        # DDP and FSDP2 split a batch of world x the 1-rank size; TP runs the 1-rank batch.
        larger = workloads.GPTConfig(**dict(CONFIG, batch=CONFIG["batch"] * world))
        split_batch = tuple(t.chunk(world)[rank] for t in workloads.gpt_batch(larger, "cpu", seed=0))
        results["DDP"] = measure(DDP(fresh()), args.steps, split_batch)
        mesh = init_device_mesh("tpu", (world,))
        model = fresh()
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        results["FSDP2"] = measure(fully_shard(model, mesh=mesh), args.steps, split_batch)
        del model
        model = fresh()
        plan = {}
        for i in range(cfg.layers):
            plan[f"blocks.{i}.mlp.0"] = ColwiseParallel()
            plan[f"blocks.{i}.mlp.2"] = RowwiseParallel()
        results["TP (MLPs)"] = measure(parallelize_module(model, mesh, plan), args.steps, one_rank_batch)
        del model
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)
    sys.stdout.flush()
    os._exit(0)  # as benchmarks/collectives.py: no gloo teardown at interpreter exit


def launch(nproc, args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    env.pop("TORCH_TPU_CPU_DEVICE_COUNT", None)
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", f"--master-port={port}",
           os.path.abspath(__file__), "--worker", f"--steps={args.steps}"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        sys.exit(f"torchrun with {nproc} ranks failed:\n{(r.stdout + r.stderr)[-4000:]}")
    return json.loads(lines[0][len("RESULT "):])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    results = {**launch(1, args), **launch(2, args)}
    one = results["1 rank"]
    mib = 1 << 20
    print(f"GPT {CONFIG}, AdamW, float32; medians of {args.steps} steps; memory of rank 0")
    print(f"{'':>10} | {'step ms':>8} {'x 1 rank':>8} | {'params+optimizer MiB':>20} {'x 1 rank':>8} | "
          f"{'peak MiB':>8} {'x 1 rank':>8}")
    for name, r in results.items():
        print(f"{name:>10} | {r['step_s'] * 1e3:8.1f} {r['step_s'] / one['step_s']:8.2f} | "
              f"{r['state_bytes'] / mib:20.1f} {r['state_bytes'] / one['state_bytes']:8.2f} | "
              f"{r['peak_bytes'] / mib:8.1f} {r['peak_bytes'] / one['peak_bytes']:8.2f}")
    print("DDP and FSDP2: each of the 2 ranks a batch of the 1-rank size; TP: both ranks the 1-rank batch.")


if __name__ == "__main__":
    main()
