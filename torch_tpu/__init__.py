"""torch_tpu: a native PyTorch backend for TPUs.

Importing this package (which `import torch` does by itself through the
`torch.backends` entry point) makes the `tpu` device usable.
"""
import atexit
import contextlib
import functools
import time


def _autoload():
    """Entry point of `torch.backends`: importing the package does the work.

    Defined before `import torch`: when this package is imported first, torch's
    autoload re-enters it half-initialized and must find this name.
    """


import torch  # noqa: E402

__all__ = ["set_eager_mode", "get_eager_mode", "eager_mode", "metrics", "reset_metrics", "last_flushed_program",
           "jax_op"]

torch.utils.rename_privateuse1_backend("tpu")

from . import _C, _plugin  # noqa: E402
from . import _compile, _device_module, distributed, generation, profiler  # noqa: E402

_C._set_plugin_path(_plugin.find_plugin())
torch._register_device_module("tpu", _device_module)
torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
distributed._register()
generation.install()
_compile.route_inductor_graphs_on_tpu()


def _install_dlpack():
    """DLPack for tpu tensors. torch.Tensor.__dlpack_device__ knows PrivateUse1 only by its
    default name ("privateuse1"), so after the rename to "tpu" `torch.from_dlpack(tpu_tensor)`
    would fail before reaching DLPack; a tpu tensor reports what PyTorch gives PrivateUse1
    (kDLExtDev, its index). And a view's DLPack pointer lies inside its storage, which a
    storage made around a pointer cannot alias (device.h), so `from_dlpack` of a tpu tensor
    makes, after DLPack's own checks, what the round trip makes: a new tensor (not a view,
    its own version counter) on the same storage with the same sizes and strides."""
    from torch.utils import dlpack
    torchs_dlpack_device = torch.Tensor.__dlpack_device__
    torchs_from_dlpack = dlpack.from_dlpack

    def __dlpack_device__(self):
        if self.device.type == "tpu":
            return (dlpack.DLDeviceType.kDLExtDev, self.device.index or 0)
        return torchs_dlpack_device(self)

    @functools.wraps(torchs_from_dlpack)
    def from_dlpack(ext_tensor):
        if isinstance(ext_tensor, torch.Tensor) and ext_tensor.device.type == "tpu":
            ext_tensor.__dlpack__()  # refuses what DLPack cannot export (requires_grad, conj, ...)
            return torch.empty(0, dtype=ext_tensor.dtype, device=ext_tensor.device).set_(
                ext_tensor.untyped_storage(), ext_tensor.storage_offset(), ext_tensor.size(), ext_tensor.stride())
        return torchs_from_dlpack(ext_tensor)

    torch.Tensor.__dlpack_device__ = __dlpack_device__
    dlpack.from_dlpack = torch.from_dlpack = from_dlpack


_install_dlpack()


def _let_autograd_threads_finish():
    """PyTorch runs a tpu backward on its autograd device thread, whose last reference to the
    finished backward's state holds Python objects (the context that backward() stashes), and
    releasing them takes the GIL. A thread that asks for the GIL once the interpreter has begun to
    finalize is ended there, and ending a C++ thread that way aborts the process ("terminate called
    without an active exception", at the exit of one LSTM training script in four). Registered at
    import, this runs after the program's own exit handlers and before finalization: letting go of
    the GIL for a moment lets such a thread finish. A process that never started the device has no
    such thread and exits at once."""
    if _C._is_initialized():
        time.sleep(0.01)


atexit.register(_let_autograd_threads_finish)


def set_eager_mode(name):
    """Selects how eager ops run: "debug" (synchronous, op by op), "strict" (asynchronous, op by op)
    or "fused" (ops are deferred and run as one program when a value is needed)."""
    if not isinstance(name, str):
        raise ValueError(f"eager mode must be a string, got {name!r}")
    _C.set_eager_mode(name)


def get_eager_mode():
    return _C.get_eager_mode()


@contextlib.contextmanager
def eager_mode(name):
    """Runs the block in eager mode `name`, restoring the previous mode after."""
    if _C._is_initialized():
        torch.tpu.synchronize()  # work queued under the old mode finishes under it
    previous = get_eager_mode()
    set_eager_mode(name)
    try:
        yield
    finally:
        set_eager_mode(previous)


def set_index_checks(enabled):
    """Turns the device-side range checks of tpu index tensors on or off (default on; also
    TORCH_TPU_CHECK_INDICES=0). On, an out-of-range index in indexing, gather/scatter,
    index_select/add/copy/fill, take/put or embedding raises IndexError at the first
    synchronization after its program ran, as CUDA's device-side asserts do. Returns the
    previous setting."""
    return _C._set_device_checks(bool(enabled))


def metrics():
    """Counters: compiles, cache_hits (memory tier), disk_cache_hits, disk_cache_writes, cache_misses
    (memory tier), executions, compile_seconds, quick_compiles (of the compiles, small programs
    compiled for speed of compiling) and full_recompiles (those compiled again, optimized, as they
    recurred), bytes_to_device, bytes_to_host, ops_deferred,
    flushes {reason: count}, cpu_fallbacks {op: count}, and compile: the torch.compile backend's
    graphs, captures, replays and eager_runs."""
    counters = _C.metrics()
    counters["compile"] = _compile.compile_metrics()
    return counters


def last_flushed_program():
    """The StableHLO text of the program that fused mode's last flush ran ("" before any)."""
    return _C.last_flushed_program()


def reset_metrics():
    _C.reset_metrics()
    _compile.reset_compile_metrics()


def __getattr__(name):
    # jax_op's module registers the op torch_tpu::jax_call; imported at first use, so that
    # `import torch_tpu` costs nothing for programs that never call JAX.
    if name == "jax_op":
        import importlib

        return getattr(importlib.import_module(".jax_ops", __name__), name)
    raise AttributeError(f"module 'torch_tpu' has no attribute {name!r}")
