"""torch.distributed on tpu across processes: torchrun launches tests/distributed/worker.py.

Each launch is one spawned group that runs every check (collectives against
gloo on CPU tensors, subgroups, async work, functional collectives, errors,
DDP, FSDP2 and tensor parallelism against one CPU process), bounded in time.
"""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "distributed" / "worker.py"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc, *what, timeout=600):
    env = dict(os.environ)
    env.pop("TORCH_TPU_CPU_DEVICE_COUNT", None)  # torchrun's LOCAL_WORLD_SIZE gives each process its devices
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           f"--master-port={free_port()}", str(WORKER), *what]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    done = [line for line in r.stdout.splitlines() if " ok: " in line]
    assert len(done) == nproc, r.stdout[-3000:]
    return done


@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_ddp_fsdp2_and_tensor_parallel_match_cpu(nproc):
    for line in torchrun(nproc, "collectives", "ddp", "parallel"):
        assert int(line.split(" ok: ")[1].split()[0]) > 200, line
