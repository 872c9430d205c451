"""torch.distributed on tpu: tests/distributed/worker.py runs the ranks.

Across processes (torchrun, the host-staging transport), each launch is one
spawned group that runs its checks (see the worker's docstring: collectives
against gloo on CPU tensors, DDP, FSDP2, DTensor, tensor and sequence
parallelism, a 2-D mesh and distributed checkpoints against one CPU process),
bounded in time: 2 ranks run everything but the 2-D mesh, 4 ranks the
collectives and the 2-D mesh. In one process, ranks
as threads on devices of their own run the same checks over the XLA
transport, but tensor parallelism: DTensor's sharding propagation caches what
it computes process-wide, device included, so threads on different devices
read each other's entries.
"""
import os
import socket
import subprocess
import sys
from pathlib import Path


WORKER = Path(__file__).parent / "distributed" / "worker.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(ok_ranks, cmd, env, timeout):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    done = [line for line in r.stdout.splitlines() if " ok: " in line]
    assert len(done) == ok_ranks, r.stdout[-3000:]
    return done


def torchrun(nproc, *what, ok_ranks=None, timeout=600):
    env = dict(os.environ)
    env.pop("TORCH_TPU_CPU_DEVICE_COUNT", None)  # torchrun's LOCAL_WORLD_SIZE gives each process its devices
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           f"--master-port={free_port()}", str(WORKER), *what]
    return launch(nproc if ok_ranks is None else ok_ranks, cmd, env, timeout)


def test_two_ranks_collectives_ddp_fsdp2_and_tensor_parallel_match_cpu():
    for line in torchrun(2, "collectives", "ddp", "fsdp2", "fsdp2_more", "tp", "compile"):
        assert int(line.split(" ok: ")[1].split()[0]) > 350, line
        assert "over the host transport" in line, line


def test_four_ranks_collectives_and_2d_mesh_match_cpu():
    for line in torchrun(4, "collectives", "2d"):
        assert int(line.split(" ok: ")[1].split()[0]) > 200, line


def test_a_rank_that_dies_makes_the_others_raise():
    for line in torchrun(2, "rank_death", ok_ranks=1, timeout=120):
        assert line.startswith("rank 0 ok: 1 checks"), line


def test_xla_transport_ranks_as_threads_match_cpu():
    env = dict(os.environ, TORCH_TPU_CPU_DEVICE_COUNT="2")
    cmd = [sys.executable, str(WORKER), "--threads", "2", "collectives", "ddp", "fsdp2"]
    for line in launch(2, cmd, env, timeout=600):
        assert int(line.split(" ok: ")[1].split()[0]) > 200, line
        assert "over the xla transport" in line, line
