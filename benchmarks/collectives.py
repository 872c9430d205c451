"""Collectives on tpu beside gloo on CPU tensors, over both transports, and a DDP step.

    python benchmarks/collectives.py [--repeats N] [--max-mib 64]

Launches itself under torchrun with 2 ranks (the host-staging transport), and
then as one process whose 2 ranks are threads on devices of their own (the
XLA transport). For all_reduce and all_gather of 4 KiB to 64 MiB of float32 it
times the same call on tpu tensors and on CPU tensors (gloo) in one run, and
prints bus bandwidth (NCCL-tests' definition: all_reduce moves 2(n-1)/n of the
buffer, all_gather (n-1)/n of the output) and tpu/gloo ratios, medians of the
repeats. Then it times a DDP training step of the small GPT
(benchmarks/workloads.py) with 2 ranks, each on a batch of the 1-rank size,
beside 1 rank (no process group work), and prints the ratio.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import warnings


def median_seconds(fn, repeats, sync):
    fn()  # warm: compile, connect
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def collectives(args, rank, world):
    import torch
    import torch.distributed as dist
    results = []
    size = 4096
    while size <= args.max_mib << 20:
        n = size // 4
        for device in ("tpu", "cpu"):
            x = torch.ones(n, device=device)
            out = torch.empty(n * world, device=device)
            sync = torch.tpu.synchronize if device == "tpu" else (lambda: None)
            ar = median_seconds(lambda: dist.all_reduce(x), args.repeats, sync)
            ag = median_seconds(lambda: dist.all_gather_into_tensor(out, x), args.repeats, sync)
            results.append({"bytes": size, "device": device,
                            "all_reduce_busbw": size / ar * 2 * (world - 1) / world / 1e9,
                            "all_gather_busbw": size * world / ag * (world - 1) / world / 1e9})
        size *= 4
    return results


def ddp_step(args, rank, world):
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import workloads
    torch.manual_seed(0)
    model = workloads.GPT(workloads.GPT_SMALL).tpu()
    if world > 1:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs, targets = workloads.gpt_batch(workloads.GPT_SMALL, "tpu", seed=rank)
    for _ in range(3):
        workloads.train_step(model, opt, inputs, targets)
    return median_seconds(lambda: workloads.train_step(model, opt, inputs, targets), args.repeats * 3,
                          torch.tpu.synchronize)


def worker(args):
    import torch
    import torch.distributed as dist
    warnings.simplefilter("ignore")
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group()
    out = {"world": world, "ddp_step_s": ddp_step(args, rank, world)}
    if world > 1:
        out["collectives"] = collectives(args, rank, world)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
    # No interpreter shutdown: a gloo thread that drops the last reference to a
    # CPU tensor's Python object while Python shuts down aborts the process
    # (PyTorch's gloo with CPU tensors, seen here in about one run of three).
    sys.stdout.flush()
    os._exit(0)


def thread_worker(args):
    """2 ranks as threads of this process, rank r on tpu:r: the XLA transport."""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.distributed.multi_threaded_pg import _install_threaded_pg
    warnings.simplefilter("ignore")
    _install_threaded_pg()  # a default group per thread
    torch._C._distributed_c10d._set_thread_isolation_mode(True)
    store = dist.HashStore()
    results, errors = [None, None], []

    def rank_thread(rank):
        try:
            torch.tpu.set_device(rank)
            dist.init_process_group(rank=rank, world_size=2, store=store)
            transport = dist.group.WORLD._get_backend(torch.device("tpu")).transport
            assert transport == "xla", transport
            results[rank] = collectives(args, rank, 2)
            dist.barrier()
            dist.destroy_process_group()
        except Exception as e:  # reported by the launcher
            errors.append(repr(e))

    threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not errors:
        print("RESULT " + json.dumps({"collectives": results[0]}), flush=True)
    else:
        print("\n".join(errors), flush=True)
    os._exit(0)  # as in worker()


def run_for_result(cmd, what, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [line for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        sys.exit(f"{what} failed:\n{(r.stdout + r.stderr)[-4000:]}")
    return json.loads(lines[0][len("RESULT "):])


def launch_threads(args):
    cmd = [sys.executable, os.path.abspath(__file__), "--thread-worker", f"--repeats={args.repeats}",
           f"--max-mib={args.max_mib}"]
    return run_for_result(cmd, "2 ranks as threads", env=dict(os.environ, TORCH_TPU_CPU_DEVICE_COUNT="2"))


def launch(nproc, args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", f"--master-port={port}",
           os.path.abspath(__file__), "--worker", f"--repeats={args.repeats}", f"--max-mib={args.max_mib}"]
    return run_for_result(cmd, f"torchrun with {nproc} ranks")


def print_table(title, collectives):
    print(title)
    print(f"{'size':>9} | {'all_reduce tpu':>14} {'gloo':>8} {'tpu/gloo':>8} | {'all_gather tpu':>14} {'gloo':>8} {'tpu/gloo':>8}")
    by_size = {}
    for r in collectives:
        by_size.setdefault(r["bytes"], {})[r["device"]] = r
    for size, d in sorted(by_size.items()):
        t, c = d["tpu"], d["cpu"]
        label = f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        print(f"{label:>9} | {t['all_reduce_busbw']:14.3f} {c['all_reduce_busbw']:8.3f} "
              f"{t['all_reduce_busbw'] / c['all_reduce_busbw']:7.2f}x | {t['all_gather_busbw']:14.3f} "
              f"{c['all_gather_busbw']:8.3f} {t['all_gather_busbw'] / c['all_gather_busbw']:7.2f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-mib", type=int, default=64)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--thread-worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.thread_worker:
        return thread_worker(args)
    two, one, threads = launch(2, args), launch(1, args), launch_threads(args)
    print_table(f"2 ranks as processes (host-staging transport), float32, medians of {args.repeats}; "
                "bus bandwidth GB/s", two["collectives"])
    print_table(f"2 ranks as threads of one process (XLA transport), float32, medians of {args.repeats}; "
                "bus bandwidth GB/s", threads["collectives"])
    print(f"DDP step, small GPT, batch {4} per rank: 1 rank {one['ddp_step_s'] * 1e3:.1f} ms, "
          f"2 ranks {two['ddp_step_s'] * 1e3:.1f} ms ({two['ddp_step_s'] / one['ddp_step_s']:.2f}x the 1-rank time; "
          f"2 ranks share this machine's 2 cores)")


if __name__ == "__main__":
    main()
