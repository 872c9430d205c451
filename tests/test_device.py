"""The `tpu` device as PyTorch sees it: torch.tpu.*, torch.accelerator, tensor/module methods,
serialization, autoload and plugin selection."""
import gc
import glob
import os
import re
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import torch_tpu  # noqa: F401
from conftest import ALL_DTYPES, assert_close_cpu, dtype_id, make_tensor, run_python


def _sync():
    torch.tpu.synchronize()
    gc.collect()


# --------------------------------------------------------------------------- device module


def test_is_available_and_count():
    assert torch.tpu.is_available()
    assert torch.tpu.device_count() >= 1
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch.tpu.device_count()


def test_current_and_set_device():
    torch.tpu.set_device(0)
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device("tpu:0")
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(torch.device("tpu", 0))
    assert torch.tpu.current_device() == 0


@pytest.mark.parametrize("spec", [0, "tpu:0", torch.device("tpu", 0)], ids=["int", "str", "device"])
def test_device_context(spec):
    with torch.tpu.device(spec):
        assert torch.tpu.current_device() == 0
        x = torch.ones(3, device="tpu")
        assert x.device == torch.device("tpu", 0)
    assert torch.tpu.current_device() == 0


@pytest.mark.parametrize("arg", [None, 0, "tpu", "tpu:0"])
def test_synchronize(mode, arg):
    x = torch.randn(64, 64, device="tpu")
    y = x @ x
    if arg is None:
        torch.tpu.synchronize()
    else:
        torch.tpu.synchronize(arg)
    assert_close_cpu(y, x.cpu() @ x.cpu(), kind="matmul")


def test_multiple_cpu_devices_subprocess():
    code = (
        "import torch\n"
        "assert torch.tpu.device_count() == 2, torch.tpu.device_count()\n"
        "a = torch.arange(6.0, device='tpu:1')\n"
        "assert a.device == torch.device('tpu', 1), a.device\n"
        "with torch.tpu.device(1):\n"
        "    assert torch.tpu.current_device() == 1\n"
        "    b = torch.ones(6, device='tpu')\n"
        "    assert b.device.index == 1, b.device\n"
        "assert torch.tpu.current_device() == 0\n"
        "c = (a + b).to('tpu:0')\n"
        "assert c.device.index == 0 and c.cpu().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]\n"
        "print('ok')\n"
    )
    r = run_python(code, TORCH_TPU_CPU_DEVICE_COUNT="2")
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


def test_get_device_name_and_platform():
    name = torch.tpu.get_device_name()
    assert isinstance(name, str) and name
    assert torch.tpu.get_device_name(0) == name
    platform = torch.tpu.platform()
    assert isinstance(platform, str) and platform
    assert platform == platform.lower()
    if not os.environ.get("TORCH_TPU_PJRT_PLUGIN") and not glob.glob("/dev/accel*"):
        assert platform == "cpu"


def test_accelerator_integration():
    acc = torch.accelerator.current_accelerator()
    assert acc is not None and acc.type == "tpu"
    _sync()
    assert torch.accelerator.memory_allocated() == torch.tpu.memory_allocated()


# --------------------------------------------------------------------------- RNG


def test_manual_seed_and_initial_seed():
    torch.tpu.manual_seed(1234)
    assert torch.tpu.initial_seed() == 1234
    s = torch.tpu.seed()
    assert isinstance(s, int)
    assert torch.tpu.initial_seed() == s
    torch.tpu.manual_seed_all(77)
    assert torch.tpu.initial_seed() == 77


def test_torch_manual_seed_seeds_tpu():
    torch.manual_seed(99)
    a = torch.rand(16, device="tpu").cpu()
    torch.manual_seed(99)
    b = torch.rand(16, device="tpu").cpu()
    assert torch.equal(a, b)
    assert torch.tpu.initial_seed() == 99


@pytest.mark.parametrize("sampler", ["rand", "randn", "randint"])
def test_rng_state_round_trip(mode, sampler):
    draw = {
        "rand": lambda: torch.rand(50, device="tpu"),
        "randn": lambda: torch.randn(5, 10, device="tpu"),
        "randint": lambda: torch.randint(0, 1000, (50,), device="tpu"),
    }[sampler]
    torch.tpu.manual_seed(2024)
    draw()  # advance the generator so the state is not the seed's
    state = torch.tpu.get_rng_state()
    assert isinstance(state, torch.Tensor) and state.device.type == "cpu" and state.dtype == torch.uint8
    a = draw().cpu()
    b = draw().cpu()
    assert not torch.equal(a, b)
    torch.tpu.set_rng_state(state)
    assert torch.equal(draw().cpu(), a)
    assert torch.equal(draw().cpu(), b)


def test_generator_object_on_tpu(mode):
    g1 = torch.Generator(device="tpu").manual_seed(5)
    g2 = torch.Generator(device="tpu").manual_seed(5)
    a = torch.rand(20, device="tpu", generator=g1)
    b = torch.rand(20, device="tpu", generator=g2)
    assert a.device.type == "tpu"
    assert torch.equal(a.cpu(), b.cpu())


# --------------------------------------------------------------------------- memory


def test_memory_allocated_grows_and_drops(mode):
    _sync()
    before = torch.tpu.memory_allocated()
    n = 256 * 1024
    x = torch.empty(n, device="tpu")
    x.fill_(1.5)
    _sync()
    during = torch.tpu.memory_allocated()
    assert during >= before + n * 4
    assert torch.tpu.max_memory_allocated() >= during
    del x
    _sync()
    after = torch.tpu.memory_allocated()
    assert after <= during - n * 4


def test_reset_peak_memory_stats(mode):
    _sync()
    big = torch.zeros(512 * 1024, device="tpu") + 1
    _sync()
    peak_with_big = torch.tpu.max_memory_allocated()
    assert peak_with_big >= 512 * 1024 * 4
    del big
    _sync()
    assert torch.tpu.max_memory_allocated() >= peak_with_big  # the peak survives the free
    torch.tpu.reset_peak_memory_stats()
    assert torch.tpu.max_memory_allocated() == torch.tpu.memory_allocated()
    assert torch.tpu.max_memory_allocated() < peak_with_big


# --------------------------------------------------------------------------- tensors and modules


def test_tensor_methods_and_device_objects():
    d = torch.device("tpu")
    assert d.type == "tpu" and d.index is None
    assert torch.device("tpu:0") == torch.device("tpu", 0)
    x = torch.arange(6.0).reshape(2, 3)
    for t in [x.tpu(), x.to("tpu"), x.to("tpu:0"), x.to(d), x.to(device="tpu", dtype=torch.float32)]:
        assert t.is_tpu and t.device == torch.device("tpu", 0)
        assert not t.is_cpu
        assert_close_cpu(t, x)
    assert not x.is_tpu
    made = torch.ones(2, 2, device=d)
    assert made.is_tpu and made.device.index == 0


def test_to_tpu_with_dtype():
    x = torch.arange(6.0)
    t = x.to("tpu", torch.float16)
    assert_close_cpu(t, x.to(torch.float16))


def test_module_tpu_and_back():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    ref = [p.detach().clone() for p in m.state_dict().values()]
    m.tpu()
    for v in m.state_dict().values():
        assert v.is_tpu
    for v, r in zip(m.state_dict().values(), ref):
        assert_close_cpu(v, r)
    m.cpu()
    assert all(v.is_cpu for v in m.state_dict().values())
    m.to("tpu")
    assert all(p.is_tpu for p in m.parameters())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_save_load_round_trip(mode, tmp_path, dtype):
    x = make_tensor((3, 4), dtype, seed=3)
    t = x.tpu()
    path = tmp_path / "t.pt"
    torch.save({"t": t, "view": t[1:, ::2]}, path)
    on_tpu = torch.load(path, map_location="tpu")
    assert_close_cpu(on_tpu["t"], x)
    assert_close_cpu(on_tpu["view"], x[1:, ::2], check_stride=True)
    on_cpu = torch.load(path, map_location="cpu")
    assert on_cpu["t"].device.type == "cpu"
    torch.testing.assert_close(on_cpu["t"], x)
    torch.testing.assert_close(on_cpu["view"], x[1:, ::2])
    default = torch.load(path)
    assert default["t"].is_tpu
    assert_close_cpu(default["t"], x)


def test_load_keeps_view_sharing(mode, tmp_path):
    t = torch.arange(12.0, device="tpu").reshape(3, 4)
    torch.save([t, t[1]], tmp_path / "v.pt")
    a, b = torch.load(tmp_path / "v.pt", map_location="tpu")
    a.add_(100)
    assert_close_cpu(b, torch.arange(4.0, 8.0) + 100)


def test_save_cpu_load_to_tpu(tmp_path):
    m = nn.Linear(3, 2)
    torch.save(m.state_dict(), tmp_path / "m.pt")
    sd = torch.load(tmp_path / "m.pt", map_location="tpu")
    for k, v in sd.items():
        assert_close_cpu(v, m.state_dict()[k])
    m2 = nn.Linear(3, 2).tpu()
    m2.load_state_dict(sd)
    assert_close_cpu(m2.weight, m.weight.detach())


# --------------------------------------------------------------------------- autoload and plugin


def test_import_torch_autoloads():
    r = run_python("import torch; x = torch.ones(2, device='tpu'); print(x.device); print(x.sum().item())")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.split()
    assert "tpu:0" in lines and "2.0" in lines


def test_a_clean_run_prints_nothing_on_stderr_unless_asked():
    code = "import torch; print((torch.ones(2, device='tpu') * 2).sum().item())"
    quiet = run_python(code, TF_CPP_MIN_LOG_LEVEL=None, TORCH_TPU_PLUGIN_LOG_LEVEL=None)
    assert quiet.returncode == 0 and quiet.stdout.split() == ["4.0"] and quiet.stderr == "", quiet.stderr[-3000:]
    chatty = run_python(code, TF_CPP_MIN_LOG_LEVEL=None, TORCH_TPU_PLUGIN_LOG_LEVEL="0")
    assert chatty.returncode == 0 and "cpu_device_count" in chatty.stderr, chatty.stderr[-3000:]
    bad = run_python(code, TF_CPP_MIN_LOG_LEVEL=None, TORCH_TPU_PLUGIN_LOG_LEVEL="loud")
    assert bad.returncode != 0 and "TORCH_TPU_PLUGIN_LOG_LEVEL must be an integer from 0 to 3" in bad.stderr


def test_python_m_torch_tpu_reports_the_environment(tmp_path):
    r = subprocess.run([sys.executable, "-m", "torch_tpu"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TORCH_TPU_EAGER_MODE": "strict", "TORCH_TPU_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-3000:]
    rows = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in r.stdout.splitlines())
    assert rows["torch"] == torch.__version__ and rows["eager mode"] == "strict"
    assert rows["devices"].startswith("tpu:0") and rows["plugin"].endswith(".so")
    assert rows["compilation cache"].startswith(str(tmp_path))
    assert "TORCH_TPU_EAGER_MODE=strict" in rows["environment"]
    broken = subprocess.run([sys.executable, "-m", "torch_tpu"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TORCH_TPU_PJRT_PLUGIN": "/nonexistent/plugin.so"})
    assert broken.returncode == 0 and "error: RuntimeError: tpu: cannot load PJRT plugin" in broken.stdout


def test_import_torch_tpu_first():
    r = run_python("import torch_tpu, torch; print(torch.ones(2, device='tpu').device, torch_tpu.get_eager_mode())")
    assert r.returncode == 0 and "tpu:0" in r.stdout, r.stderr[-3000:]


def test_autoload_disabled_makes_tpu_unusable():
    r = run_python("import torch; torch.ones(2, device='tpu')", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert r.returncode != 0
    assert "tpu" in r.stderr.lower()


def test_explicit_import_after_disabled_autoload():
    code = "import torch, torch_tpu; print(torch.ones(2, device='tpu').device)"
    r = run_python(code, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert r.returncode == 0 and "tpu:0" in r.stdout, r.stderr[-3000:]


def test_bad_plugin_path_is_named_in_error():
    bad = "/nonexistent/plugin.so"
    r = run_python("import torch; torch.ones(2, device='tpu').cpu()", TORCH_TPU_PJRT_PLUGIN=bad)
    assert r.returncode != 0
    assert bad in r.stderr, r.stderr[-3000:]


def test_streams_are_distinct_objects_on_the_device_queue():
    default = torch.tpu.current_stream()
    assert default == torch.tpu.default_stream() and default.device == torch.device("tpu", 0)
    s = torch.tpu.Stream()
    assert s != default and s.device.type == "tpu"
    with torch.tpu.stream(s):
        assert torch.tpu.current_stream() == s
        x = torch.ones(8, device="tpu") * 3
    assert torch.tpu.current_stream() == default
    s.synchronize()
    assert s.query() and default.query()
    assert torch.equal(x.cpu(), torch.full((8,), 3.0))
    assert torch.Stream(device="tpu").device.type == "tpu"


def test_event_marks_the_work_enqueued_before_it(mode):
    import time
    x = make_tensor((256, 256)).tpu() / 16
    start, end = torch.tpu.Event(enable_timing=True), torch.tpu.Event(enable_timing=True)
    before = time.perf_counter()
    start.record()
    for _ in range(30):
        x = torch.tanh(x @ x)
    end.record()
    end.synchronize()
    host_ms = (time.perf_counter() - before) * 1e3
    assert end.query() and start.query()
    assert 0 <= start.elapsed_time(end) <= host_ms + 1
    plain = torch.Event(device="tpu")
    plain.record()
    plain.wait()
    plain.synchronize()
    with pytest.raises((RuntimeError, ValueError), match="enable_timing=True"):
        plain.elapsed_time(end)
    unrecorded = torch.tpu.Event(enable_timing=True)
    assert unrecorded.query()
    if mode == "fused":
        assert torch_tpu.metrics()["flushes"].get("event", 0) >= 2  # recording ran the pending work


def test_parameter_data_and_module_conversion_keep_the_parameter():
    p = nn.Parameter(torch.randn(4, 4))
    p.data = torch.ones(4, 4, device="tpu")
    assert isinstance(p, nn.Parameter) and p.device.type == "tpu" and p.sum().item() == 16
    m = nn.Linear(3, 3)
    weight = m.weight
    opt = torch.optim.SGD(m.parameters(), lr=0.1)  # made before the move, as CUDA allows
    m.tpu()
    assert m.weight is weight and weight.device.type == "tpu"
    m(torch.ones(2, 3, device="tpu")).sum().backward()
    opt.step()
    assert weight.grad.device.type == "tpu"


def test_storage_resize_frees_and_regrows(mode):
    t = torch.arange(1024.0).tpu() * 2
    _sync()
    storage = t.untyped_storage()
    full = storage.size()
    held = torch.tpu.memory_allocated()
    storage.resize_(0)
    _sync()
    assert storage.size() == 0
    if mode != "fused":  # fused mode may still hold a dead pending value until its next flush
        assert torch.tpu.memory_allocated() <= held - full
    storage.resize_(full)
    t.copy_(torch.arange(1024.0).tpu())
    assert torch.equal(t.cpu(), torch.arange(1024.0))
    u = torch.arange(6.0).tpu() + 1
    s = u.untyped_storage()
    s.resize_(10 * 4)  # grows, keeping its contents; the rest reads as zeros
    grown = torch.empty(0, device="tpu").set_(s, 0, (10,), (1,))
    assert grown.cpu().tolist() == [1, 2, 3, 4, 5, 6, 0, 0, 0, 0]


def test_pinned_host_memory():
    x = torch.arange(6.0).pin_memory()
    assert x.is_pinned() and not torch.arange(6.0).is_pinned()
    assert x[2:].is_pinned()  # a view into a pinned block
    assert torch.empty(3, pin_memory=True).is_pinned()
    assert torch.equal(x.to("tpu", non_blocking=True).cpu(), torch.arange(6.0))


_FORK = r"""
import os, torch
from torch.utils.data import DataLoader

def child(body):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            message = body()
        except RuntimeError as e:
            message = "raised: " + str(e).splitlines()[0]
        os.write(w, message.encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    return out

print(child(lambda: "cpu ok %d" % int(torch.ones(3).sum())))          # before the device is used
x = torch.ones(4, device="tpu") * 2
assert x.sum().item() == 8
print(child(lambda: "cpu ok %d" % int(torch.ones(3).sum())))          # a child that stays on the CPU
print(child(lambda: str((torch.ones(2, device="tpu") + 1).cpu())))    # a child that touches the device
print(child(lambda: str(torch.tpu._is_in_bad_fork())))
loader = DataLoader(list(range(8)), batch_size=4, num_workers=2, multiprocessing_context="fork")
print("loader", sum(int(b.sum()) for b in loader), (x + 1).sum().item())
"""


def test_forked_child_gets_cudas_error_and_cpu_children_work():
    r = run_python(_FORK)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "cpu ok 3" and lines[1] == "cpu ok 3", lines
    assert lines[2] == "raised: Cannot re-initialize tpu in forked subprocess. To use tpu with multiprocessing, " \
                       "you must use the 'spawn' start method", lines
    assert lines[3] == "True" and lines[4] == "loader 28 12.0", lines


_LSTM_TRAINING_THEN_EXIT = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.ModuleDict(dict(embed=nn.Embedding(512, 128), lstm=nn.LSTM(128, 128, num_layers=2, batch_first=True),
                           head=nn.Linear(128, 512))).to("tpu")
opt = torch.optim.AdamW(model.parameters())
idx = torch.randint(0, 512, (8, 33)).to("tpu")
for _ in range(4):
    out, _ = model["lstm"](model["embed"](idx[:, :-1]))
    loss = nn.functional.cross_entropy(model["head"](out).flatten(0, 1), idx[:, 1:].flatten())
    loss.backward(); opt.step(); opt.zero_grad()
    loss.item()
"""


def test_a_training_script_exits_cleanly_after_its_last_backward():
    # autograd's device thread may still be letting go of the last backward (which takes the GIL)
    # when the script ends; one run in four aborted at exit before torch_tpu waited for it.
    for _ in range(3):
        r = run_python(_LSTM_TRAINING_THEN_EXIT)
        assert r.returncode == 0 and "terminate called" not in r.stderr, r.stderr[-3000:]


_RUN_A_32_MIB_PROGRAM_AGAIN_AND_AGAIN = """
import resource, torch, torch_tpu
torch_tpu.set_eager_mode("strict")
x = torch.randn(2048, 4096, device="tpu")  # 32 MiB: over glibc's largest default mmap threshold
def run():
    y = x * 2 + 1
    torch.tpu.synchronize()
    return y
for _ in range(3):
    run()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    run()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
results = [run() for _ in range(8)]
del results
held = resident()
torch.tpu.empty_cache()
print(faults, (held - resident()) >> 20)
"""


def test_the_cpu_plugins_device_memory_is_reused_without_fresh_pages():
    if torch_tpu._C.platform_name() != "cpu":
        pytest.skip("the device's memory is host memory only on the CPU plugin")
    kept = run_python(_RUN_A_32_MIB_PROGRAM_AGAIN_AND_AGAIN)
    system = run_python(_RUN_A_32_MIB_PROGRAM_AGAIN_AND_AGAIN, TORCH_TPU_CPU_REUSE_HOST_MEMORY="0")
    assert kept.returncode == 0 and system.returncode == 0, kept.stderr[-2000:] + system.stderr[-2000:]
    kept_faults, kept_released = map(int, kept.stdout.split())
    system_faults, _ = map(int, system.stdout.split())
    # glibc's defaults map each 32 MiB result fresh (8192 faults a run); kept memory is reused
    # once the heap has grown past its fragmentation (from a few to about 50 runs, by timing).
    assert system_faults >= 100 * 8192 and kept_faults * 2 < system_faults, (kept_faults, system_faults)
    assert kept_released >= 32  # empty_cache() hands the freed buffers' memory back


def test_device_properties_and_memory_stats_have_cudas_names():
    props = torch.tpu.get_device_properties(0)
    assert props.total_memory > 0 and props.name == torch.tpu.get_device_name(0)
    before = torch.tpu.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.peak",
                "active_bytes.all.peak", "num_alloc_retries", "num_ooms"):
        assert key in before, key
    x = torch.ones(1 << 18, device="tpu") + 1
    torch.tpu.synchronize()
    after = torch.tpu.memory_stats()
    assert after["active_bytes.all.current"] >= before["active_bytes.all.current"] + x.nbytes
    assert after["reserved_bytes.all.peak"] >= after["active_bytes.all.current"]
    free, total = torch.tpu.mem_get_info()
    assert 0 < free <= total == props.total_memory
    summary = torch.tpu.memory_summary()
    assert "tpu memory summary, device ID 0" in summary and "Allocated memory" in summary
