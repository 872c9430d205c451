"""End to end: a small MLP trained on tpu follows the CPU loss curve from identical weights and data."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import assert_close_cpu


def make_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def make_data(steps, batch=16, distinct=4):
    """`steps` batches cycling through `distinct` fixed ones, so the model can fit them."""
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(batch, 32, generator=g), torch.randint(0, 10, (batch,), generator=g))
               for _ in range(distinct)]
    return [batches[i % distinct] for i in range(steps)]


OPTIMIZERS = {
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, foreach=False),
    "adamw_foreach": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, foreach=True),
    "adam": lambda p: torch.optim.Adam(p, lr=3e-3),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, foreach=False),
    "sgd_momentum_foreach": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, foreach=True),
}


def train(model, opt_name, data, device, clip=None):
    model = model.to(device)
    opt = OPTIMIZERS[opt_name](model.parameters())
    losses = []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(loss.item())
    return losses, model


def _assert_curves_match(tpu_losses, cpu_losses, rel=1e-5):
    assert len(tpu_losses) == len(cpu_losses)
    for step, (t, c) in enumerate(zip(tpu_losses, cpu_losses)):
        assert abs(t - c) <= rel * abs(c), f"step {step}: tpu {t} vs cpu {c}\ntpu {tpu_losses}\ncpu {cpu_losses}"


@pytest.mark.parametrize("opt_name", ["adamw", "adamw_foreach"])
def test_mlp_adamw_matches_cpu(mode, opt_name):
    data = make_data(20)
    base = make_mlp()
    cpu_losses, cpu_model = train(copy.deepcopy(base), opt_name, data, "cpu")
    tpu_losses, tpu_model = train(copy.deepcopy(base), opt_name, data, "tpu")
    _assert_curves_match(tpu_losses, cpu_losses)
    assert cpu_losses[-1] < cpu_losses[0]  # it did learn something
    for (name, pt), pc in zip(tpu_model.named_parameters(), cpu_model.parameters()):
        assert pt.is_tpu
        assert_close_cpu(pt, pc, rtol=1e-4, atol=1e-5, msg=f"{name}: ")


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "sgd_momentum_foreach", "adam"])
def test_mlp_other_optimizers_match_cpu(mode, opt_name):
    data = make_data(6)
    base = make_mlp()
    cpu_losses, cpu_model = train(copy.deepcopy(base), opt_name, data, "cpu")
    tpu_losses, tpu_model = train(copy.deepcopy(base), opt_name, data, "tpu")
    _assert_curves_match(tpu_losses, cpu_losses)
    for pt, pc in zip(tpu_model.parameters(), cpu_model.parameters()):
        assert_close_cpu(pt, pc, rtol=1e-4, atol=1e-5)


def test_single_sgd_momentum_step_state(mode):
    base = make_mlp()
    (x, y), = make_data(1)
    models, bufs = {}, {}
    for device in ["cpu", "tpu"]:
        m = copy.deepcopy(base).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(2):
            opt.zero_grad()
            F.cross_entropy(m(x.to(device)), y.to(device)).backward()
            opt.step()
        models[device] = m
        bufs[device] = [opt.state[p]["momentum_buffer"] for p in m.parameters()]
    for bt, bc in zip(bufs["tpu"], bufs["cpu"]):
        assert_close_cpu(bt, bc, rtol=1e-5, atol=1e-6)
    for pt, pc in zip(models["tpu"].parameters(), models["cpu"].parameters()):
        assert_close_cpu(pt, pc, rtol=1e-5, atol=1e-6)


def test_mlp_with_grad_clipping_matches_cpu(mode):
    data = make_data(5)
    base = make_mlp()
    cpu_losses, _ = train(copy.deepcopy(base), "adamw", data, "cpu", clip=0.5)
    tpu_losses, _ = train(copy.deepcopy(base), "adamw", data, "tpu", clip=0.5)
    _assert_curves_match(tpu_losses, cpu_losses)


def test_gradients_of_one_step_match(mode):
    base = make_mlp()
    (x, y), = make_data(1)
    cpu_m, tpu_m = copy.deepcopy(base), copy.deepcopy(base).tpu()
    F.cross_entropy(cpu_m(x), y).backward()
    F.cross_entropy(tpu_m(x.tpu()), y.tpu()).backward()
    for (name, pt), pc in zip(tpu_m.named_parameters(), cpu_m.parameters()):
        assert_close_cpu(pt.grad, pc.grad, rtol=1e-5, atol=1e-6, msg=f"grad of {name}: ")


def test_eval_mode_inference_matches(mode):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(32, 16), nn.LayerNorm(16), nn.GELU(), nn.Dropout(0.5), nn.Linear(16, 4)).eval()
    x = torch.randn(5, 32)
    with torch.no_grad():
        ref = model(x)
        out = copy.deepcopy(model).tpu()(x.tpu())
    assert_close_cpu(out, ref, kind="matmul")


def test_tied_parameters_stay_tied_when_moved_to_tpu():
    # An LM head tied to its input embedding, as in most Hugging Face decoders.
    torch.manual_seed(0)
    base = nn.Module()
    base.emb = nn.Embedding(10, 4)
    base.head = nn.Linear(4, 10, bias=False)
    base.head.weight = base.emb.weight
    for move in (lambda m: m.to("tpu"), lambda m: m.tpu(), lambda m: m.to(device="tpu", dtype=torch.float32)):
        moved = move(copy.deepcopy(base))
        assert moved.head.weight is moved.emb.weight and moved.emb.weight.device.type == "tpu"
        assert len(list(moved.parameters())) == 1
    models = {"cpu": copy.deepcopy(base), "tpu": copy.deepcopy(base).to("tpu")}
    for device, m in models.items():
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        idx = torch.tensor([1, 2, 3]).to(device)
        F.cross_entropy(m.head(m.emb(idx)), idx).backward()
        opt.step()
    assert_close_cpu(models["tpu"].emb.weight, models["cpu"].emb.weight.detach(), kind="matmul")
