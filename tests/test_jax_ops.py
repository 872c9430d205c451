"""torch_tpu.jax_op: JAX and Pallas functions as ops on tpu tensors, checked against JAX itself
running the same function: forward and gradients, in every eager mode and under torch.compile,
recorded into fused mode's program without a flush; and its errors."""
import numpy as np
import pytest
import torch

import torch_tpu
from conftest import make_tensor, run_modes, run_python

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def to_jax(t):
    return jnp.asarray(t.detach().cpu().float().numpy() if t.dtype == torch.bfloat16 else t.detach().cpu().numpy(),
                       dtype=str(t.dtype).removeprefix("torch."))


def assert_matches(ours, theirs, rtol=1e-5, atol=1e-5):
    expected = torch.from_numpy(np.array(theirs.astype(jnp.float32) if theirs.dtype == jnp.bfloat16 else theirs))
    assert str(ours.dtype).removeprefix("torch.") == str(theirs.dtype)
    assert ours.device.type == "tpu"
    got = ours.detach().cpu()
    torch.testing.assert_close(got.float() if got.dtype == torch.bfloat16 else got, expected, rtol=rtol, atol=atol)


def rms_norm(x, w):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * w


def test_import_torch_tpu_does_not_import_jax():
    out = run_python("import sys, torch, torch_tpu; print('jax' in sys.modules)")
    assert out.returncode == 0 and out.stdout.strip().endswith("False"), out.stderr


def test_forward_matches_jax(mode):
    op = torch_tpu.jax_op(rms_norm)
    x, w = make_tensor((4, 16), seed=1), make_tensor((16,), seed=2)
    assert_matches(op(x.tpu(), w.tpu()), rms_norm(to_jax(x), to_jax(w)))


def test_gradients_match_jax_grad(mode):
    op = torch_tpu.jax_op(rms_norm)
    x, w = make_tensor((4, 16), seed=3), make_tensor((16,), seed=4)
    xt, wt = x.tpu().requires_grad_(), w.tpu().requires_grad_()
    (op(xt, wt) ** 2).sum().backward()
    gx, gw = jax.grad(lambda a, b: jnp.sum(rms_norm(a, b) ** 2), argnums=(0, 1))(to_jax(x), to_jax(w))
    assert_matches(xt.grad, gx, rtol=1e-4, atol=1e-4)
    assert_matches(wt.grad, gw, rtol=1e-4, atol=1e-4)


@run_modes("fused")
def test_recorded_into_the_fused_program_without_a_flush(mode):
    op = torch_tpu.jax_op(rms_norm)
    x, w = make_tensor((8, 32), seed=5).tpu(), make_tensor((32,), seed=6).tpu()
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    y = op(torch.relu(x) + 1, w) * 2  # ops before and after it
    z = y.sum()
    assert sum(torch_tpu.metrics()["flushes"].values()) == 0
    assert torch_tpu.metrics()["executions"] == 0
    expected = float(jnp.sum(rms_norm(jnp.maximum(to_jax(x.cpu()), 0) + 1, to_jax(w.cpu())) * 2))
    assert abs(z.item() - expected) < 1e-3
    assert torch_tpu.metrics()["executions"] == 1  # one program: the ops and the JAX function
    assert "func.call" in torch_tpu.last_flushed_program()


def test_several_functions_and_dtypes(mode):
    @torch_tpu.jax_op
    def stats(x):
        return jnp.max(x, axis=-1), jnp.argmax(x, axis=-1), jnp.cumsum(x, axis=0)

    x = make_tensor((5, 7), seed=7)
    for got, want in zip(stats(x.tpu()), stats._fn(to_jax(x))):
        assert_matches(got, want)

    @torch_tpu.jax_op
    def scan_sum(xs):
        def step(carry, row):
            carry = carry * 0.5 + row
            return carry, carry.sum()
        return jax.lax.scan(step, jnp.zeros(xs.shape[1:], xs.dtype), xs)

    for got, want in zip(scan_sum(x.tpu()), scan_sum._fn(to_jax(x))):
        assert_matches(got, want, rtol=1e-5, atol=1e-5)
    xt = x.tpu().requires_grad_()
    final, sums = scan_sum(xt)
    (final.square().sum() + sums.sum()).backward()
    expected = jax.grad(lambda v: jnp.sum(scan_sum._fn(v)[0] ** 2) + jnp.sum(scan_sum._fn(v)[1]))(to_jax(x))
    assert_matches(xt.grad, expected, rtol=1e-4, atol=1e-4)

    @torch_tpu.jax_op
    def branch(x, flag):
        return jax.lax.cond(flag > 0, lambda v: jnp.sin(v), lambda v: jnp.cos(v), x)

    for flag in (1, -1):
        f = torch.tensor(flag, dtype=torch.int32)
        assert_matches(branch(x.tpu(), f.tpu()), branch._fn(to_jax(x), to_jax(f)))
        xt = x.tpu().requires_grad_()
        branch(xt, f.tpu()).sum().backward()
        assert_matches(xt.grad, jax.grad(lambda v: jnp.sum(branch._fn(v, to_jax(f))))(to_jax(x)))

    xb = make_tensor((3, 8), dtype=torch.bfloat16, seed=8)
    assert_matches(torch_tpu.jax_op(jnp.tanh)(xb.tpu()), jnp.tanh(to_jax(xb)), rtol=1e-2, atol=1e-2)

    xd = make_tensor((6,), dtype=torch.float64, seed=9)  # 64-bit tensors lower with x64 on
    got = torch_tpu.jax_op(lambda v: v * 3)(xd.tpu())
    assert got.dtype == torch.float64
    torch.testing.assert_close(got.cpu(), xd * 3)
    idx = torch.tensor([3, 1, 2])
    got = torch_tpu.jax_op(lambda i: i + 1)(idx.tpu())
    assert got.dtype == torch.int64 and got.cpu().tolist() == [4, 2, 3]


def test_integer_outputs_have_no_gradient():
    @torch_tpu.jax_op
    def top(x):
        return jnp.sort(x, axis=-1), jnp.argsort(x, axis=-1)

    x = make_tensor((3, 6), seed=10)
    xt = x.tpu().requires_grad_()
    values, order = top(xt)
    assert values.requires_grad and not order.requires_grad
    values.sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), torch.ones(3, 6))


def test_static_arguments_and_new_shapes(mode):
    @torch_tpu.jax_op(static_argnames=("axis", "eps"))
    def normalize(x, axis, eps=1e-5):
        return (x - x.mean(axis, keepdims=True)) / jnp.sqrt(x.var(axis, keepdims=True) + eps)

    for shape in ((4, 6), (3, 5, 2)):
        x = make_tensor(shape, seed=11)
        for axis in (0, -1):
            assert_matches(normalize(x.tpu(), axis=axis), normalize._fn(to_jax(x), axis), rtol=1e-4, atol=1e-4)
    torch_tpu.reset_metrics()
    x = make_tensor((4, 6), seed=12)
    normalize(x.tpu(), axis=0).cpu()
    assert torch_tpu.metrics()["compiles"] == 0  # a signature seen before reuses its program


def test_user_given_backward():
    def scale(x, w):
        return x * w

    def scale_backward(x, w, ct):  # deliberately not the true gradient
        return ct * 2, None

    op = torch_tpu.jax_op(scale, backward=scale_backward)
    x, w = make_tensor((5,), seed=13).tpu().requires_grad_(), make_tensor((5,), seed=14).tpu().requires_grad_()
    op(x, w).sum().backward()
    torch.testing.assert_close(x.grad.cpu(), torch.full((5,), 2.0))
    torch.testing.assert_close(w.grad.cpu(), torch.zeros(5))


def test_under_torch_compile_without_graph_breaks():
    op = torch_tpu.jax_op(rms_norm)
    linear = torch.nn.Linear(16, 16).tpu()

    def step(x, w):
        return op(linear(x), w).square().mean()

    compiled = torch.compile(step, backend="tpu", fullgraph=True)
    x, w = make_tensor((4, 16), seed=15).tpu(), make_tensor((16,), seed=16).tpu().requires_grad_()
    loss = compiled(x, w)
    loss.backward()
    eager_w = w.detach().clone().requires_grad_()
    eager = step(x, eager_w)
    eager.backward()
    torch.testing.assert_close(loss.cpu(), eager.detach().cpu(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w.grad.cpu(), eager_w.grad.cpu(), rtol=1e-5, atol=1e-5)


def test_pallas_kernel_in_interpret_mode(mode):
    pl = pytest.importorskip("jax.experimental.pallas")

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 + y_ref[...]

    @torch_tpu.jax_op
    def add(x, y):
        return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x, y)

    x, y = make_tensor((8, 16), seed=17), make_tensor((8, 16), seed=18)
    torch.testing.assert_close(add(x.tpu(), y.tpu()).cpu(), x * 2 + y)


def test_errors_raise_before_anything_runs():
    x, w = make_tensor((4, 16), seed=19).tpu(), make_tensor((8,), seed=20).tpu()
    with pytest.raises(RuntimeError, match=r"rms_norm.*x: float32\[4, 16\], w: float32\[8\]"):
        torch_tpu.jax_op(rms_norm)(x, w)

    table = jnp.arange(16.0)
    with pytest.raises(ValueError, match="closes over an array constant of shape \\(16,\\)"):
        torch_tpu.jax_op(lambda v: v * table)(x)

    with pytest.raises(TypeError, match="returns an array or a tuple or list of arrays"):
        torch_tpu.jax_op(lambda v: {"y": v})(x)

    with pytest.raises(TypeError, match="argument 'eps' is a float.*static_argnames"):
        torch_tpu.jax_op(lambda v, eps: v + eps)(x, 0.5)

    with pytest.raises(RuntimeError, match="same device"):
        torch_tpu.jax_op(rms_norm)(x, torch.ones(16))

    if torch.tpu.platform() == "cpu":
        with pytest.raises(RuntimeError, match="custom call '.*'.*XLA CPU plugin"):
            torch_tpu.jax_op(jnp.linalg.inv)(make_tensor((3, 3), seed=21).tpu())


def test_flash_attention_matches_sdpa():
    F = torch.nn.functional
    from torch_tpu.jax_attention import flash_attention

    for batch, heads, kv_heads, q_len, kv_len, causal in ((2, 4, 2, 12, 12, True), (1, 2, 2, 5, 70, True),
                                                           (2, 2, 1, 33, 33, False), (1, 2, 2, 1, 20, False)):
        q = make_tensor((batch, heads, q_len, 8), seed=22)
        k, v = make_tensor((batch, kv_heads, kv_len, 8), seed=23), make_tensor((batch, kv_heads, kv_len, 8), seed=24)
        qt, kt, vt = (x.tpu().requires_grad_() for x in (q, k, v))
        out = flash_attention(qt, kt, vt, causal=causal)
        groups = heads // kv_heads
        q, k, v = q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
        expected = F.scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1),
                                                  is_causal=causal)
        torch.testing.assert_close(out.detach().cpu(), expected.detach(), rtol=1e-5, atol=1e-5)
        cotangent = make_tensor(expected.shape, seed=25)
        out.backward(cotangent.tpu())
        expected.backward(cotangent)
        for ours, theirs in ((qt, q), (kt, k), (vt, v)):
            torch.testing.assert_close(ours.grad.cpu(), theirs.grad, rtol=1e-4, atol=1e-5)


def test_llama_with_the_jax_attention_trains_and_generates():
    import copy

    from models.catalog import _LLAMA_LIKE
    from transformers import AutoConfig, AutoModelForCausalLM

    from torch_tpu.jax_attention import register_transformers_attention

    register_transformers_attention()
    config = AutoConfig.for_model("llama", **_LLAMA_LIKE)
    torch.manual_seed(0)
    eager = AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation="eager")
    ours = AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation="tpu_jax")
    ours.load_state_dict(eager.state_dict())
    eager, ours = eager.tpu().eval(), ours.tpu().eval()
    calls = torch_tpu.jax_ops._functions
    ids = torch.randint(0, _LLAMA_LIKE["vocab_size"], (2, 12)).tpu()
    padding = torch.ones(2, 12, dtype=torch.long)
    padding[1, :3] = 0
    with torch.no_grad():
        before = len(calls)
        for mask in (None, padding.tpu()):
            a, b = eager(ids, attention_mask=mask).logits, ours(ids, attention_mask=mask).logits
            real = torch.ones(2, 12, dtype=torch.bool) if mask is None else padding.bool()
            torch.testing.assert_close(b.cpu()[real], a.cpu()[real], rtol=1e-4, atol=1e-4)
        assert len(calls) > before  # the JAX attention ran
        for mask in (None, padding.tpu()):
            a = eager.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
            b = ours.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
            assert torch.equal(a.cpu(), b.cpu())
    eager.train(), ours.train()
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (eager, ours)]
    for _ in range(3):
        losses = []
        for model, optimizer in zip((eager, ours), optimizers):
            loss = model(ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-4


_CACHED_PROGRAM = """
import torch, torch_tpu, jax.numpy as jnp
op = torch_tpu.jax_op(lambda x: jnp.tanh(x) * 2)
y = (op(torch.arange(6.0).tpu()) + 1).sum().item()
m = torch_tpu.metrics()
print("RESULT", y, m["compiles"], m["disk_cache_hits"])
"""


def test_programs_with_a_jax_op_share_the_disk_cache(tmp_path):
    results = []
    for _ in range(2):
        r = run_python(_CACHED_PROGRAM, TORCH_TPU_CACHE_DIR=str(tmp_path), TORCH_TPU_EAGER_MODE="fused")
        assert r.returncode == 0, r.stderr[-3000:]
        words = r.stdout.split()
        i = words.index("RESULT")
        results.append((float(words[i + 1]), int(words[i + 2]), int(words[i + 3])))
    (y1, compiles1, hits1), (y2, compiles2, hits2) = results
    assert compiles1 >= 1 and hits1 == 0
    assert compiles2 == 0 and hits2 == compiles1 and y1 == y2  # the same program text in a new process


def test_example_runs():
    import pathlib
    import subprocess
    import sys

    example = pathlib.Path(__file__).parents[1] / "examples" / "jax_kernels.py"
    r = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0].endswith("in 1 program(s)")  # the JAX function, its backward and the ops around them
    eager, ours = (line.split(":", 1)[1] for line in lines[1:3])
    assert eager == ours


def test_the_same_function_is_the_same_op_and_static_errors_name_the_argument():
    assert torch_tpu.jax_op(rms_norm) is torch_tpu.jax_op(rms_norm)
    op = torch_tpu.jax_op(lambda v, shape: v.reshape(shape), static_argnames="shape")
    x = make_tensor((2, 3), seed=26)
    torch.testing.assert_close(op(x.tpu(), shape=(3, 2)).cpu(), x.reshape(3, 2))
    with pytest.raises(TypeError, match="static arguments must be hashable \\('shape' is not\\)"):
        op(x.tpu(), shape=[3, 2])


def test_tuples_lists_and_dicts_of_tensors(mode):
    @torch_tpu.jax_op
    def mlp(params, x, *extras):
        for layer in params["layers"]:
            x = jnp.tanh(x @ layer[0] + layer[1])
        return x * params["scale"] + sum(extras)

    shapes = [((4, 8), (8,)), ((8, 3), (3,))]
    layers = [[make_tensor(w, seed=30 + i), make_tensor(b, seed=40 + i)] for i, (w, b) in enumerate(shapes)]
    scale, x, extra = make_tensor((3,), seed=50), make_tensor((5, 4), seed=51), make_tensor((5, 3), seed=52)
    params = {"layers": [[t.tpu().requires_grad_() for t in layer] for layer in layers], "scale": scale.tpu()}
    out = mlp(params, x.tpu(), extra.tpu(), extra.tpu())
    jax_params = {"layers": [[to_jax(t) for t in layer] for layer in layers], "scale": to_jax(scale)}
    assert_matches(out, mlp._fn(jax_params, to_jax(x), to_jax(extra), to_jax(extra)), rtol=1e-4, atol=1e-4)
    out.sum().backward()
    grads = jax.grad(lambda p: jnp.sum(mlp._fn(p, to_jax(x), to_jax(extra), to_jax(extra))))(jax_params)
    for ours, theirs in zip(params["layers"], grads["layers"]):
        for o, t in zip(ours, theirs):
            assert_matches(o.grad, t, rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match=r"argument 'params\['scale'\]' is a float"):
        mlp({"layers": [], "scale": 2.0}, x.tpu())


def test_user_given_backward_of_structured_arguments():
    def affine(params, x):
        return x * params["w"] + params["b"]

    def affine_backward(params, x, ct):  # the true gradients, written by hand
        return {"w": jnp.sum(ct * x, axis=0), "b": jnp.sum(ct, axis=0)}, None

    op = torch_tpu.jax_op(affine, backward=affine_backward)
    w, b, x = make_tensor((3,), seed=60), make_tensor((3,), seed=61), make_tensor((4, 3), seed=62)
    params = {"w": w.tpu().requires_grad_(), "b": b.tpu().requires_grad_()}
    xt = x.tpu().requires_grad_()
    op(params, xt).square().sum().backward()
    ct = 2 * (x * w + b)
    torch.testing.assert_close(params["w"].grad.cpu(), (ct * x).sum(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(params["b"].grad.cpu(), ct.sum(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(xt.grad.cpu(), torch.zeros(4, 3))  # None: no gradient given
