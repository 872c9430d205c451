"""torch.autocast("tpu") with CUDA's cast policy, and GradScaler's ops on the device."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_tpu
from conftest import HALF_DTYPES, assert_close_cpu, dtype_id, make_tensor


def test_device_module_declares_its_amp_dtypes():
    assert torch.tpu.is_bf16_supported()
    assert set(torch.tpu.get_amp_supported_dtype()) == {torch.bfloat16, torch.float16}
    assert torch.amp.is_autocast_available("tpu")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_cast_policy_is_cudas(mode, dtype):
    x, w = make_tensor((4, 8)), make_tensor((6, 8), seed=1)
    img, kernel = make_tensor((1, 2, 5, 5), seed=2), make_tensor((3, 2, 3, 3), seed=3)
    target = torch.tensor([0, 1, 2, 3])

    def compute(device):
        with torch.autocast(device.split(":")[0], dtype=dtype):
            a, b = x.to(device), w.to(device)
            y = a @ b.t()  # lower precision
            return {
                "matmul": y,
                "linear": F.linear(a, b),
                "conv2d": F.conv2d(img.to(device), kernel.to(device)),
                "softmax": F.softmax(y, -1),  # float32
                "log_softmax": F.log_softmax(y, -1),
                "exp": torch.exp(y),
                "sum": y.sum(),
                "layer_norm": F.layer_norm(y, (6,)),
                "cross_entropy": F.cross_entropy(y, target.to(device)),
                "mse": F.mse_loss(y, torch.zeros_like(y)),
                "addcmul": torch.addcmul(a, y[:, :1], a),  # promote: the widest input
                "plain": y * 2,  # not listed: runs in its input's dtype
            }

    out = compute("tpu")
    lower = {"matmul", "linear", "conv2d", "plain"}
    for name, value in out.items():
        assert value.dtype == (dtype if name in lower else torch.float32), name
    # The values are what the CPU computes with the same casts done by hand.
    xd, wd = x.to(dtype), w.to(dtype)
    y = xd @ wd.t()
    assert_close_cpu(out["matmul"], y, kind="matmul")
    assert_close_cpu(out["conv2d"], F.conv2d(img.to(dtype), kernel.to(dtype)), kind="matmul")
    # float32 ops compute in float32 from the low-precision product (which a
    # fused program may keep unrounded: XLA allows excess precision), so
    # within its rounding.
    y_tpu = out["matmul"].cpu().float()
    assert_close_cpu(out["softmax"], F.softmax(y_tpu, -1), rtol=2e-2, atol=2e-2)
    # As on CUDA, cross_entropy's log_softmax keeps its input's dtype (it names
    # it) and nll_loss upcasts the rounded log-probabilities.
    log_probs = F.log_softmax(out["matmul"].cpu(), -1)
    assert_close_cpu(out["cross_entropy"], F.nll_loss(log_probs.float(), target), rtol=2e-2, atol=2e-2)


def test_binary_cross_entropy_is_refused_as_on_cuda():
    p, t = torch.rand(3, device="tpu"), torch.rand(3, device="tpu")
    with torch.autocast("tpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, t)
        F.binary_cross_entropy_with_logits(p, t)


def test_autocast_under_torch_compile():
    x = make_tensor((8, 8))

    @torch.compile(backend="tpu")
    def f(a):
        y = a @ a
        return y, y.softmax(-1)

    with torch.autocast("tpu", dtype=torch.bfloat16):
        y, s = f(x.tpu())
    assert y.dtype == torch.bfloat16 and s.dtype == torch.float32
    assert_close_cpu(y, x.bfloat16() @ x.bfloat16(), kind="matmul")
    assert torch_tpu.metrics()["compile"]["eager_runs"] == 0


def test_unscale_and_update_scale_ops_match_cpu(mode):
    grads = [make_tensor((5,)), make_tensor((2, 3), seed=1), make_tensor((4,), seed=2).half()]
    for poison in (None, float("inf"), float("nan")):
        cpu = [g.clone() for g in grads]
        if poison is not None:
            cpu[1][1, 2] = poison
        tpu = [g.tpu() for g in cpu]
        found_cpu, found_tpu = torch.zeros(1), torch.zeros(1, device="tpu")
        inv = torch.tensor([0.25])
        torch._amp_foreach_non_finite_check_and_unscale_(cpu, found_cpu, inv)
        torch._amp_foreach_non_finite_check_and_unscale_(tpu, found_tpu, inv.tpu())
        assert_close_cpu(found_tpu, found_cpu)
        for t, c in zip(tpu, cpu):
            assert_close_cpu(t, c)
    # Backoff on inf, growth after `interval` clean steps, no growth past float32's range.
    for start in (1024.0, 3e38):
        scale_c, count_c = torch.tensor([start]), torch.zeros(1, dtype=torch.int32)
        scale_t, count_t = scale_c.tpu(), count_c.tpu()
        for found in (0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0):
            f = torch.tensor([found])
            torch._amp_update_scale_(scale_c, count_c, f, 2.0, 0.5, 3)
            torch._amp_update_scale_(scale_t, count_t, f.tpu(), 2.0, 0.5, 3)
            assert_close_cpu(scale_t, scale_c)
            assert_close_cpu(count_t, count_c)


def test_grad_scaler_training_skips_overflowing_steps_without_cpu_fallback(mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).tpu()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.tpu.amp.GradScaler(init_scale=2.0**10, growth_interval=2)
    x, y = make_tensor((32, 8)).tpu(), make_tensor((32, 1), seed=1).tpu()
    before = torch_tpu.metrics()["cpu_fallbacks"]
    scales = []
    for step in range(5):
        opt.zero_grad()
        with torch.autocast("tpu", dtype=torch.float16):
            loss = F.mse_loss(model(x).float(), y)
        scaler.scale(loss * (float("inf") if step == 2 else 1.0)).backward()
        params = [p.detach().cpu() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        changed = any(not torch.equal(p.detach().cpu(), q) for p, q in zip(model.parameters(), params))
        assert changed == (step != 2), step  # the overflowing step is skipped
    assert scales == [2.0**10, 2.0**11, 2.0**10, 2.0**10, 2.0**11]
    assert torch_tpu.metrics()["cpu_fallbacks"] == before


def test_bf16_autocast_training_tracks_float32():
    def train(autocast):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 4)).tpu()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        x, target = make_tensor((64, 16)).tpu(), torch.randint(0, 4, (64,), generator=torch.Generator().manual_seed(1))
        losses = []
        for _ in range(20):
            opt.zero_grad()
            with torch.autocast("tpu", dtype=torch.bfloat16, enabled=autocast):
                loss = F.cross_entropy(model(x), target.tpu())
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    full, mixed = train(False), train(True)
    assert mixed[-1] < 0.5 * mixed[0]  # it learns
    for a, b in zip(full, mixed):
        assert abs(a - b) <= 0.05 * abs(a) + 0.02
