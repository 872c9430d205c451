"""torch.distributed on tpu: registers the c10d backend "tpu" (csrc/distributed).

"tpu" is the default backend for tpu tensors. When every rank of a group is a
thread of this process (each on its own device), its collectives run as XLA
collectives across the devices; between processes on the XLA CPU plugin they
are staged through the host, where a gloo group over the same store moves
the copies.
"""
import functools
import uuid

import torch
import torch.distributed as dist

from . import _C

# What init_process_group() with no backend named sets up: gloo for CPU
# tensors and "tpu" for tpu tensors, as CUDA gets gloo and nccl. (PyTorch's own
# default then initializes the accelerator's backend alone and marks the group
# as gloo's, which DDP then fails to find.)
DEFAULT_BACKENDS = "cpu:gloo,tpu:tpu"


# Names this process in the store, so ranks find out whether they all run in it.
_PROCESS = uuid.uuid4().hex


def _in_process_group(store, rank, size):
    """The group's name when every rank runs in this process, else ""."""
    if rank == 0:
        store.set("tpu/group", uuid.uuid4().hex)
    store.set(f"tpu/process/{rank}", _PROCESS)
    if any(store.get(f"tpu/process/{r}").decode() != _PROCESS for r in range(size)):
        return ""
    return store.get("tpu/group").decode()


def _create_backend(store, rank, size, timeout):
    host = dist.ProcessGroupGloo(dist.PrefixStore("host_staging/", store), rank, size, timeout)
    return _C._TpuBackend(rank, size, host, _in_process_group(store, rank, size), timeout)


def _with_default_backends(init_process_group):
    @functools.wraps(init_process_group)
    def init(backend=None, *args, **kwargs):
        if backend is None and torch._C._get_accelerator().type == "tpu":
            backend = DEFAULT_BACKENDS
        return init_process_group(backend, *args, **kwargs)

    return init


def _register():
    if not dist.is_available():
        return
    _C._define_distributed_types(_C)
    dist.Backend.register_backend("tpu", _create_backend, devices=["tpu"])
    init = _with_default_backends(dist.distributed_c10d.init_process_group)
    dist.distributed_c10d.init_process_group = init
    dist.init_process_group = init
