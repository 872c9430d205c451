"""torch.profiler with tpu device time.

`torch.profiler.profile` shows the host side of tpu work (tpu::execute, tpu::compile, ...
events, recorded by the C++ runtime). This `profile` is the same profiler that also times
each program's run on its device and adds those runs to the chrome trace as a track per
device ("tpu:N device"), beside the host threads:

    with torch_tpu.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
        train_step()
    prof.export_chrome_trace("trace.json")   # opens in Perfetto / chrome://tracing
    prof.device_runs                         # [(program, device, start_ns, end_ns), ...]

A run spans its enqueue to its outputs being ready (PJRT's event): PJRT says when a
program ends, not when it starts, so on a device that runs one program at a time the span
includes its wait behind earlier ones.
"""
import json

import torch

from . import _C

__all__ = ["profile"]


class profile(torch.profiler.profile):  # noqa: N801 (torch.profiler.profile's name)
    device_runs = ()

    def start(self):
        _C._take_device_runs()  # runs from before the region are not ours
        _C._set_device_timing(True)
        super().start()

    def stop(self):
        torch.tpu.synchronize()  # the runs enqueued in the region end inside it
        super().stop()
        _C._set_device_timing(False)
        self.device_runs = [tuple(r) for r in _C._take_device_runs()]

    def export_chrome_trace(self, path):
        super().export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
        base_ns = trace.get("baseTimeNanoseconds", 0)
        pid = max([e["pid"] for e in trace["traceEvents"] if isinstance(e.get("pid"), int)] + [0]) + 1
        for device in sorted({r[1] for r in self.device_runs}):
            trace["traceEvents"].append({"ph": "M", "name": "process_name", "pid": pid + device, "tid": 0,
                                         "args": {"name": f"tpu:{device} device"}})
        for name, device, start_ns, end_ns in self.device_runs:
            trace["traceEvents"].append({"ph": "X", "cat": "tpu_device", "name": name, "pid": pid + device,
                                         "tid": 0, "ts": (start_ns - base_ns) / 1000,
                                         "dur": max(end_ns - start_ns, 0) / 1000})
        with open(path, "w") as f:
            json.dump(trace, f)
