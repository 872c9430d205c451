"""torch.tpu.memory: memory history, as torch.cuda.memory's.

    torch.tpu.memory._record_memory_history()        # from now on, storages keep their Python stack
    ...
    snapshot = torch.tpu.memory._snapshot()          # the live storages, with those stacks
    torch.tpu.memory._dump_snapshot("snap.pickle")   # for https://pytorch.org/memory_viz
    torch.tpu.memory._record_memory_history(None)    # stop recording

The snapshot has CUDA's shape: one segment per live storage (tpu memory is a buffer per
storage, without a caching allocator's pooling), each with one active block whose
`frames` are the Python stack that allocated it, innermost first (empty for storages made
while history was off). A storage whose contents fused mode has not computed yet holds no
device buffer: its block's state is "active_pending".
"""
import pickle

from . import _C

__all__ = ["_record_memory_history", "_snapshot", "_dump_snapshot"]


def _record_memory_history(enabled="all", context="all", stacks="python", max_entries=None, device=None):
    """Records the Python stack of each new tpu storage (enabled: "all" or "state"; None stops).
    Only Python stacks are recorded; `context`, `max_entries` and `device` are accepted for
    torch.cuda.memory's signature (every device is recorded, and only live storages are kept)."""
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    _C._record_memory_history(enabled is not None)


def _snapshot(device=None):
    """The live tpu storages in torch.cuda.memory._snapshot()'s format."""
    segments = []
    for dev, address, size, on_device, frames in _C._live_storages():
        if device is not None and dev != device:
            continue
        block = {"address": address, "size": size, "requested_size": size, "frames": frames or [],
                 "state": "active_allocated" if on_device else "active_pending"}
        segments.append({"device": dev, "address": address, "total_size": size, "allocated_size": size,
                         "active_size": size, "requested_size": size, "stream": 0, "segment_type": "large",
                         "segment_pool_id": (0, 0), "is_expandable": False, "frames": block["frames"],
                         "blocks": [block]})
    devices = 1 + max([s["device"] for s in segments] + [_C.device_count() - 1])
    return {"segments": segments, "device_traces": [[] for _ in range(devices)]}


def _dump_snapshot(filename="dump_snapshot.pickle"):
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)
