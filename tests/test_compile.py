"""torch.compile(backend="tpu"): compiled results and gradients against eager and CPU, captured
programs replayed without recompiling, graph breaks, RNG, and the on-disk cache across processes."""
import copy
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_tpu
from torch_tpu import _compile
from conftest import assert_close_cpu, run_python

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import workloads  # noqa: E402

TINY_GPT = workloads.GPTConfig(layers=2, width=32, seq=16, batch=2, vocab=64)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch_tpu.reset_metrics()
    yield
    torch._dynamo.reset()


def grads(model):
    return [p.grad for p in model.parameters()]


def forward_backward(model, x, loss_fn=lambda out: out.float().pow(2).mean()):
    out = model(x)
    loss_fn(out).backward()
    return out


def test_backend_is_registered():
    from torch._dynamo import list_backends
    from torch._dynamo.backends.registry import lookup_backend

    assert "tpu" in list_backends(exclude_tags=())
    assert lookup_backend("tpu") is _compile.tpu_backend


def test_mlp_forward_and_gradients_match_eager_and_cpu(mode):
    torch.manual_seed(0)
    base = workloads.mlp()
    x = torch.randn(16, 32)
    cpu = copy.deepcopy(base)
    eager = copy.deepcopy(base).to("tpu")
    compiled_model = copy.deepcopy(base).to("tpu")
    compiled = torch.compile(compiled_model, backend="tpu")
    out_cpu = forward_backward(cpu, x)
    out_eager = forward_backward(eager, x.to("tpu"))
    for _ in range(2):  # the second call replays the captured programs
        compiled_model.zero_grad()
        out = forward_backward(compiled, x.to("tpu"))
    assert_close_cpu(out, out_cpu, kind="matmul")
    assert_close_cpu(grads(compiled_model), grads(cpu), kind="matmul")
    torch.testing.assert_close(out.cpu(), out_eager.cpu(), rtol=1e-6, atol=1e-6)
    m = torch_tpu.metrics()["compile"]
    assert m["graphs"] == 2 and m["captures"] == 2 and m["replays"] == 2 and m["eager_runs"] == 0


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def test_cnn_with_batchnorm_updates_running_stats():
    torch.manual_seed(0)
    base = ConvNet()
    xs = [torch.randn(4, 3, 12, 12) for _ in range(3)]
    cpu = copy.deepcopy(base)
    compiled_model = copy.deepcopy(base).to("tpu")
    compiled = torch.compile(compiled_model, backend="tpu")
    for x in xs:
        cpu.zero_grad()
        compiled_model.zero_grad()
        out_cpu = forward_backward(cpu, x)
        out = forward_backward(compiled, x.to("tpu"))
        assert_close_cpu(out, out_cpu, kind="reduction")
    assert_close_cpu(grads(compiled_model), grads(cpu), kind="reduction")
    for name, buf in cpu.named_buffers():
        assert_close_cpu(dict(compiled_model.named_buffers())[name], buf, kind="reduction", msg=name)
    # Eval mode is another graph (inference), reading the running stats.
    cpu.eval()
    compiled_model.eval()
    with torch.no_grad():
        assert_close_cpu(compiled(xs[0].to("tpu")), cpu(xs[0]), kind="reduction")


def test_gpt_blocks_match_eager():
    torch.manual_seed(0)
    base = workloads.GPT(TINY_GPT)
    x, y = workloads.gpt_batch(TINY_GPT, "tpu")
    eager = copy.deepcopy(base).to("tpu")
    compiled_model = copy.deepcopy(base).to("tpu")
    compiled = torch.compile(compiled_model, backend="tpu")

    def loss_of(logits):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    out_eager = forward_backward(eager, x, loss_of)
    out = forward_backward(compiled, x, loss_of)
    torch.testing.assert_close(out.cpu(), out_eager.cpu(), rtol=1e-5, atol=1e-5)
    for a, b in zip(grads(compiled_model), grads(eager)):
        torch.testing.assert_close(a.cpu(), b.cpu(), rtol=1e-4, atol=1e-5)


def train_losses(device, steps, compile_step, capturable=False):
    torch.manual_seed(0)
    model = workloads.GPT(TINY_GPT).to(device)
    # eps well above the gradients: updates are smooth in them, not sign(grad) * lr.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, eps=1e-3, capturable=capturable)
    x, y = workloads.gpt_batch(TINY_GPT, device)
    fwd = torch.compile(model, backend="tpu") if compile_step else model
    opt_step = torch.compile(opt.step, backend="tpu") if compile_step else opt.step
    losses, compiles = [], []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        logits = fwd(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt_step()
        losses.append(loss.item())
        compiles.append(torch_tpu.metrics()["compiles"])
    return losses, compiles, model


@pytest.mark.parametrize("capturable", [False, True], ids=["cpu_step", "device_step"])
def test_training_loop_with_compiled_optimizer_step(capturable):
    eager_losses, _, eager_model = train_losses("tpu", 5, compile_step=False, capturable=capturable)
    losses, compiles, model = train_losses("tpu", 5, compile_step=True, capturable=capturable)
    # The same kernels run op by op (eager) and as captured programs (compiled).
    assert losses == pytest.approx(eager_losses, rel=1e-4)
    for a, b in zip(model.parameters(), eager_model.parameters()):
        torch.testing.assert_close(a.cpu(), b.cpu(), rtol=1e-3, atol=1e-4)
    # The forward, backward and optimizer programs are captured once; from the
    # second step on nothing compiles and every graph replays.
    assert compiles[1] == compiles[-1]
    m = torch_tpu.metrics()["compile"]
    assert m["captures"] == 3 and m["eager_runs"] == 0 and m["replays"] == 3 * 4


def test_new_input_shape_recompiles_and_is_counted():
    torch.manual_seed(0)
    cpu_model = workloads.mlp()
    compiled = torch.compile(copy.deepcopy(cpu_model).to("tpu"), backend="tpu", dynamic=False)
    with torch.no_grad():
        for batch in (8, 8, 4, 8, 4):
            x = torch.randn(batch, 32)
            assert_close_cpu(compiled(x.to("tpu")), cpu_model(x), kind="matmul")
    m = torch_tpu.metrics()["compile"]
    # Dynamo guards on the shape: batch 4 is a second graph; each graph's
    # program is captured once and replayed after.
    assert m["graphs"] == 2 and m["captures"] == 2 and m["replays"] == 3


def test_dynamic_shapes_compile_a_program_per_shape():
    torch.manual_seed(0)
    cpu_model = workloads.mlp()
    compiled = torch.compile(copy.deepcopy(cpu_model).to("tpu"), backend="tpu", dynamic=True)
    _compile._warned.discard(("dynamic",))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            for b in (3, 5, 3):
                assert_close_cpu(compiled(torch.ones(b, 32, device="tpu")), cpu_model(torch.ones(b, 32)),
                                 kind="matmul")
    assert any("one XLA program per distinct input shape" in str(w.message) for w in caught)
    m = torch_tpu.metrics()["compile"]
    assert m["graphs"] == 1 and m["captures"] == 2 and m["replays"] == 1


def test_mode_argument_warns_once():
    model = workloads.mlp().to("tpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _compile._warned.discard(("mode", "max-autotune"))
        compiled = torch.compile(model, backend="tpu", mode="max-autotune")
        with torch.no_grad():
            compiled(torch.ones(2, 32, device="tpu"))
            compiled(torch.ones(3, 32, device="tpu"))
    assert sum("mode='max-autotune'" in str(w.message) for w in caught) == 1


def test_graph_break_falls_back_to_eager_mode(mode):
    def f(x):
        y = torch.sin(x) * 2
        print("a graph break", file=open("/dev/null", "w"))
        return y.sum(dim=0) + torch.cos(x).mean()

    compiled = torch.compile(f, backend="tpu")
    x = torch.randn(6, 5)
    for _ in range(2):
        assert_close_cpu(compiled(x.to("tpu")), f(x), kind="reduction")
    assert torch_tpu.metrics()["compile"]["graphs"] == 2


def test_data_dependent_branch():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    compiled = torch.compile(f, backend="tpu")
    for sign in (1, -1, 1):
        x = sign * torch.rand(4, 3)
        assert_close_cpu(compiled(x.to("tpu")), f(x))


def test_host_read_inside_a_graph_runs_it_eagerly():
    # torch.histogram has no lowering (and no test relies on its first fallback
    # warning): its CPU fallback needs the operands on the host, which cuts the
    # capture; the graph then runs eagerly, with a warning.
    def f(x, a):
        return torch.histogram((x + a).exp(), bins=4, range=(1.0, 6.0)).hist + 1

    compiled = torch.compile(f, backend="tpu")
    x, a = torch.rand(2, 8), torch.rand(2, 8) + 0.5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert_close_cpu(compiled(x.to("tpu"), a.to("tpu")), f(x, a))
    assert any("runs eagerly" in str(w.message) for w in caught)
    assert torch_tpu.metrics()["compile"]["eager_runs"] == 1


def test_dropout_draws_new_numbers_each_call_like_eager():
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5)).to("tpu")
    compiled = torch.compile(model, backend="tpu")
    x = torch.ones(8, 16, device="tpu")

    def draws(fn):
        torch.manual_seed(123)
        with torch.no_grad():
            outs = [fn(x).cpu() for _ in range(3)]
        return outs, torch.tpu.get_rng_state()

    eager_outs, eager_state = draws(model)
    outs, state = draws(compiled)
    assert not torch.equal(outs[0], outs[1]) and not torch.equal(outs[1], outs[2])
    # The generator advanced as in eager, and the masks are eager's.
    assert torch.equal(state, eager_state)
    for a, b in zip(outs, eager_outs):
        torch.testing.assert_close(a, b)


def test_scalar_inputs_are_runtime_values():
    def f(x, scale):
        return x * scale + 1

    compiled = torch.compile(f, backend="tpu")
    x = torch.randn(4)
    for scale in (torch.tensor(2.0), torch.tensor(3.0)):
        assert_close_cpu(compiled(x.to("tpu"), scale), f(x, scale))


def test_input_buffer_of_another_shape_replays_correctly():
    # Programs declare an input buffer in the shape it had at capture ([4, 8]
    # here); a later input of the same layout may hold a buffer made in
    # another shape (uploaded flat, then viewed), which the replay reshapes.
    compiled = torch.compile(lambda a: a * 2, backend="tpu")
    x = torch.randn(4, 8)
    assert_close_cpu(compiled(x.to("tpu")), x * 2)
    flat = torch.randn(32)
    before = _compile.compile_metrics()["replays"]
    assert_close_cpu(compiled(flat.to("tpu").view(4, 8)), flat.view(4, 8) * 2)
    assert _compile.compile_metrics()["replays"] == before + 1


_CACHE_PROGRAM = """
import torch, torch_tpu
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 2)).to("tpu")
compiled = torch.compile(model, backend="tpu")
out = compiled(torch.ones(3, 8, device="tpu"))
out.sum().backward()
m = torch_tpu.metrics()
print("RESULT", m["compiles"], m["disk_cache_hits"], round(out.sum().item(), 5))
"""


def test_second_process_compiles_nothing(tmp_path):
    first = run_python(_CACHE_PROGRAM, TORCH_TPU_CACHE_DIR=str(tmp_path))
    second = run_python(_CACHE_PROGRAM, TORCH_TPU_CACHE_DIR=str(tmp_path))
    for r in (first, second):
        assert r.returncode == 0, r.stderr
    a = next(line.split() for line in first.stdout.splitlines() if line.startswith("RESULT"))
    b = next(line.split() for line in second.stdout.splitlines() if line.startswith("RESULT"))
    assert int(a[1]) > 0 and int(b[1]) == 0 and int(b[2]) >= 2
    assert a[3] == b[3]


def test_torch_compile_with_its_default_backend_compiles_tpu_graphs():
    # Inductor's own code generator for a "tpu" device (Pallas, for Google's
    # TorchTPU) imports that package; graphs on tpu tensors go to backend "tpu".
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).tpu()
    x = torch.randn(5, 8).tpu()
    before = _compile.compile_metrics()["graphs"]
    out = torch.compile(model)(x)
    assert _compile.compile_metrics()["graphs"] > before
    assert_close_cpu(out, model.cpu()(x.cpu()))

    def made_on_tpu(a):  # CPU inputs, a tensor created on the device inside
        return torch.ones(3, device="tpu") * 2 + a.sum()
    assert_close_cpu(torch.compile(made_on_tpu)(torch.tensor(1.5)), torch.full((3,), 3.5))
