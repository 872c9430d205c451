"""torch.tpu: the device module, shaped like torch.cuda."""
import contextlib
import os

import torch

from . import _C, amp, memory  # noqa: F401 (torch.tpu.amp, torch.tpu.memory)


def is_available():
    try:
        return _C.device_count() > 0
    except RuntimeError:
        return False


def device_count():
    try:
        return _C.device_count()
    except RuntimeError:
        return 0


def _index(device):
    if device is None:
        return _C.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "tpu":
        raise ValueError(f"Expected a tpu device, got {device}")
    return _C.current_device() if device.index is None else device.index


def current_device():
    return _C.current_device()


def set_device(device):
    _C.set_device(_index(device))


class device:
    """Context manager that changes the current tpu device."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = _C.current_device()
        _C.set_device(self.idx)

    def __exit__(self, *exc):
        _C.set_device(self.prev)
        return False


def synchronize(device=None):
    _C.synchronize(_index(device))


def is_initialized():
    return _C._is_initialized()


def _lazy_init():
    _C.device_count()


def platform():
    """The PJRT platform backing the tpu device: "tpu", "cpu", "cuda", ..."""
    return _C.platform_name().lower()


def get_device_name(device=None):
    return f"{_C.device_kind(_index(device))} ({_C.platform_name()} PJRT {_C.platform_version()})"


class _DeviceProperties:
    """What torch.cuda.get_device_properties gives, where the plugin knows it."""

    def __init__(self, index):
        self.name = get_device_name(index)
        self.platform = platform()
        self.plugin = _C.plugin_path()
        # The plugin's memory limit; the CPU plugin has none and uses host memory.
        limit = _C.memory_stats(index)["bytes_limit"]
        self.total_memory = limit or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    def __repr__(self):
        return (f"_TpuDeviceProperties(name='{self.name}', platform='{self.platform}', "
                f"total_memory={self.total_memory >> 20}MB)")


def get_device_properties(device=None):
    return _DeviceProperties(_index(device))


def default_generator(device=None):
    return _C.default_generator(_index(device))


def manual_seed(seed):
    default_generator().manual_seed(int(seed))


def manual_seed_all(seed):
    for i in range(device_count()):
        _C.default_generator(i).manual_seed(int(seed))


def seed():
    return default_generator().seed()


def seed_all():
    for i in range(device_count()):
        _C.default_generator(i).seed()


def initial_seed():
    return default_generator().initial_seed()


def get_rng_state(device="tpu"):
    return default_generator(device).get_state()


def set_rng_state(new_state, device="tpu"):
    default_generator(device).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(states):
    for i, s in enumerate(states):
        set_rng_state(s, i)


def memory_allocated(device=None):
    return _C.memory_stats(_index(device))["bytes_in_use"]


def max_memory_allocated(device=None):
    return _C.memory_stats(_index(device))["peak_bytes_in_use"]


def memory_reserved(device=None):
    return memory_allocated(device)


def max_memory_reserved(device=None):
    return max_memory_allocated(device)


def reset_peak_memory_stats(device=None):
    _C.reset_peak_memory_stats(_index(device))


def memory_stats(device=None):
    """torch.cuda.memory_stats' keys that have a meaning here. Device buffers are allocated
    and freed as tensors need them (no caching allocator), so reserved and active memory are
    the allocated memory, and an allocation is never retried."""
    s = _C.memory_stats(_index(device))
    current, peak = s["bytes_in_use"], s["peak_bytes_in_use"]
    stats = {"allocation.all.allocated": s["num_allocs"], "num_alloc_retries": 0, "num_ooms": s["num_ooms"]}
    for kind in ("allocated_bytes", "reserved_bytes", "active_bytes"):
        stats[f"{kind}.all.current"] = current
        stats[f"{kind}.all.peak"] = peak
    return stats


def mem_get_info(device=None):
    """(free, total) bytes of the device's memory, as torch.cuda.mem_get_info: the plugin's
    limit less what tpu tensors hold; for a plugin without a limit (the CPU plugin, whose
    device memory is host memory) the host's available and total memory."""
    s = _C.memory_stats(_index(device))
    if s["bytes_limit"]:
        return s["bytes_limit"] - s["bytes_in_use"], s["bytes_limit"]
    page = os.sysconf("SC_PAGE_SIZE")
    return page * os.sysconf("SC_AVPHYS_PAGES"), page * os.sysconf("SC_PHYS_PAGES")


def memory_summary(device=None, abbreviated=False):
    """A printable table of memory_stats(), shaped like torch.cuda.memory_summary's."""
    index = _index(device)
    stats = memory_stats(index)
    free, total = mem_get_info(index)

    def size(n):
        for unit in ("B", "KiB", "MiB", "GiB"):
            if abs(n) < 1024 or unit == "GiB":
                return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
            n /= 1024

    rows = [("Allocated memory", size(stats["allocated_bytes.all.current"]), size(stats["allocated_bytes.all.peak"])),
            ("Allocations (all time)", str(stats["allocation.all.allocated"]), ""),
            ("Device memory free / total", f"{size(free)} / {size(total)}", ""),
            ("Out-of-memory errors", str(stats["num_ooms"]), "")]
    line = "|" + "=" * 76 + "|"
    out = [line, f"| {'tpu memory summary, device ID ' + str(index):<74} |",
           f"| {'buffers are freed when their tensors die: no cache, reserved = allocated':<74} |", line,
           f"| {'Metric':<30} | {'Cur Usage':>22} | {'Peak Usage':>16} |", line]
    out += [f"| {name:<30} | {cur:>22} | {peak:>16} |" for name, cur, peak in rows]
    out.append(line)
    return "\n".join(out)


def empty_cache():
    """Device buffers are freed when their tensors die. On the XLA CPU plugin, whose device memory
    is host memory, the process keeps what they freed for the next buffers (a caching allocator's
    reserve; TORCH_TPU_CPU_REUSE_HOST_MEMORY=0 turns that off): this hands it back to the system."""
    _C._release_free_host_memory()


_PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1


def Stream(device=None, priority=0):  # noqa: N802 (torch.cuda.Stream's name)
    """A new tpu stream (a torch.Stream). A device has one queue, the programs enqueued on it, and
    every stream of the device is that queue: work is never reordered across streams, and
    waiting on a stream waits for all work enqueued so far."""
    return torch.Stream(device=torch.device("tpu", _index(device)), priority=priority)


def Event(enable_timing=False, blocking=False, interprocess=False):  # noqa: N802 (torch.cuda.Event's name)
    """A tpu event (a torch.Event): marks all work enqueued on the device when it is recorded."""
    return torch.Event(device="tpu", enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)


def current_stream(device=None):
    return torch.accelerator.current_stream(torch.device("tpu", _index(device)))


def default_stream(device=None):
    # Stream id 0 is the default stream (csrc/device/device.cpp).
    return torch.Stream(stream_id=0, device_index=_index(device), device_type=_PRIVATEUSE1)


def set_stream(stream):
    if stream is not None:
        torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(s=None):
    """Makes `s` the current stream of its device for the block (None: no change)."""
    if s is None:
        yield
        return
    previous = torch.accelerator.current_stream(s.device)
    torch.accelerator.set_stream(s)
    try:
        yield
    finally:
        torch.accelerator.set_stream(previous)


def _is_in_bad_fork():
    return _C._is_in_bad_fork()


def get_amp_supported_dtype():
    """The dtypes torch.autocast("tpu", dtype=...) accepts, as on CUDA."""
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation=True):
    """bfloat16 is a native type of every backend (TPU MXUs compute in it)."""
    return True
