"""torch.profiler sees tpu work: host-side events for each program run, compile, fused
flush and host transfer, nested in the ATen ops that caused them, and device runs on a
track of their own; memory history names the Python stack of each live storage."""
import json

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torch_tpu


def _step():
    x = torch.randn(32, 48, device="tpu")
    return (x @ x.t()).relu().sum().item()


def _tpu_events(prof):
    return [e for e in prof.events() if e.name.startswith("tpu::")]


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_one_execute_event_per_program_run(mode):
    _step()  # compiled before the profiled region
    before = torch_tpu.metrics()["executions"]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _step()
    runs = torch_tpu.metrics()["executions"] - before
    executes = [e.name for e in _tpu_events(prof) if e.name.startswith("tpu::execute: ")]
    assert runs > 0 and len(executes) == runs, executes
    if mode == "fused":  # the one program of the step is named by its first ops and its op count
        assert executes == ["tpu::execute: aten::normal_, aten::mm, aten::relu, ... (4 ops)"]
        assert [e.name for e in _tpu_events(prof) if e.name.startswith("tpu::flush")] == ["tpu::flush: item"]
    else:
        assert "tpu::execute: aten::mm" in executes


def test_compiles_transfers_and_the_chrome_trace(tmp_path):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:  # attributes: bytes, ops
        x = torch.arange(1000, dtype=torch.float32).to("tpu")
        y = (x * 3.0 - 1.5).cpu()  # a program shape not compiled before in this process
    names = [e.name for e in _tpu_events(prof)]
    assert "tpu::compile" in names and "tpu::transfer_to_device" in names and "tpu::transfer_to_host" in names
    assert any(n == "tpu::compile_xla" or n == "tpu::compile_cache_disk" for n in names)
    averages = {a.key for a in prof.key_averages()}
    assert "tpu::transfer_to_host" in averages
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("name", "").startswith("tpu::")]
    to_host = [e for e in events if e["name"] == "tpu::transfer_to_host"]
    assert to_host and to_host[0]["args"]["bytes"] == y.nbytes and to_host[0]["ph"] == "X"
    assert all(e["dur"] >= 0 for e in events)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_device_runs_on_their_own_track(mode, tmp_path):
    _step()
    before = torch_tpu.metrics()["executions"]
    with torch_tpu.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        _step()
        _step()
    runs = prof.device_runs
    assert len(runs) == torch_tpu.metrics()["executions"] - before
    assert all(start <= end for _, _, start, end in runs)
    assert [r[2] for r in runs] == sorted(r[2] for r in runs)  # in enqueue order
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    track = [e for e in events if e.get("ph") == "M" and e.get("args", {}).get("name") == "tpu:0 device"]
    assert len(track) == 1
    on_device = [e for e in events if e.get("cat") == "tpu_device"]
    assert len(on_device) == len(runs) and all(e["pid"] == track[0]["pid"] for e in on_device)
    host = [e for e in events if e.get("name", "").startswith("tpu::execute: ")]
    # Each run starts when its program is enqueued, inside its host event (the same clock).
    assert [e["name"][len("tpu::execute: "):] for e in host] == [e["name"] for e in on_device]
    assert all(h["ts"] - 1 <= d["ts"] <= h["ts"] + h["dur"] + 1 for h, d in zip(host, on_device))


def _allocate_weights():
    return torch.randn(123, 7, device="tpu")


def test_memory_history_names_where_live_storages_were_allocated(tmp_path):
    torch.tpu.memory._record_memory_history()
    try:
        kept = _allocate_weights()
        kept.cpu()
        dropped = torch.ones(5, device="tpu")
        dropped_address = dropped.data_ptr()
        del dropped
    finally:
        torch.tpu.memory._record_memory_history(None)
    untracked = torch.ones(11, device="tpu")
    snapshot = torch.tpu.memory._snapshot()
    by_address = {s["address"]: s for s in snapshot["segments"]}
    mine = by_address[kept.data_ptr()]
    assert mine["total_size"] == kept.nbytes and mine["blocks"][0]["state"] == "active_allocated"
    assert mine["frames"][0]["name"] == "_allocate_weights" and mine["frames"][0]["filename"] == __file__
    assert by_address[untracked.data_ptr()]["frames"] == []
    assert dropped_address not in by_address  # freed storages leave the snapshot
    path = tmp_path / "snap.pickle"
    torch.tpu.memory._dump_snapshot(str(path))
    import pickle
    assert pickle.loads(path.read_bytes())["segments"]
    with pytest.raises(ValueError, match="enabled must be None, 'state' or 'all'"):
        torch.tpu.memory._record_memory_history("everything")
