"""Our compiled training step against the same step written in JAX, side by side in one run.

    pip install -e ".[bench]" --no-build-isolation   # once: JAX and matplotlib
    python benchmarks/vs_jax.py [--repeats R] [--only small|medium ...] [--breakdown] [--chart PNG]

The GPT-2-style model of workloads.py (token and position embedding, causal
attention, GELU MLP, LayerNorm, tied head), cross-entropy, and AdamW (lr 1e-4,
betas 0.9/0.999, eps 1e-8, weight decay 0.01), at the two sizes of the
fused-eager benchmark, in float32:
- ours: torch.compile(backend="tpu") of the forward with the loss and of the
  optimizer step, the backward as AOTAutograd's compiled graph, on the XLA CPU
  PJRT plugin;
- JAX: one jax.jit of the whole step (value_and_grad and the AdamW update), the
  parameters and optimizer state donated, on JAX's own XLA CPU client.
Each repeat times a segment of steady-state steps of each (the order reverses
between repeats); the script prints median steps/s and the ratio ours/JAX.
With --breakdown it also times each program of a step on its own (waiting for
it): ours as forward, backward and optimizer step; JAX's as forward,
forward+backward and AdamW update, each its own jax.jit. That says how much of
the gap is in the programs themselves and how much in JAX running the whole
step as one. The ratios are also drawn as a PNG (docs/vs_jax.png unless --chart says).
"""
import argparse
import functools
import math
import os
import statistics
import sys
import time
import warnings

import torch


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart  # noqa: E402
import workloads  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover
    sys.exit('vs_jax.py needs JAX: pip install "jax[cpu]==0.10.2" (or the torch_tpu[jax] extra)')

SIZES = {"small": (workloads.GPT_SMALL, 20), "medium": (workloads.GPT_MEDIUM, 3)}
LR, BETAS, EPS, WEIGHT_DECAY = 1e-4, (0.9, 0.999), 1e-8, 0.01
TARGET_VS_JAX = 0.9  # ours/JAX steps/s


# ---------------------------------------------------------------------- JAX


def jax_params(model):
    """The torch model's initial weights as a dict of JAX arrays (same numbers on both sides)."""
    return {name: jnp.asarray(p.detach().cpu().numpy()) for name, p in model.named_parameters()}


def layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * w + b


def linear(x, params, prefix, bias=True):
    y = x @ params[prefix + ".weight"].T
    return y + params[prefix + ".bias"] if bias else y


def gpt_loss(params, idx, targets, cfg):
    b, t = idx.shape
    c, h = cfg.width, cfg.heads
    x = params["tok.weight"][idx] + params["pos.weight"][jnp.arange(t)]
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    for i in range(cfg.layers):
        p = f"blocks.{i}."
        y = layer_norm(x, params[p + "ln1.weight"], params[p + "ln1.bias"])
        q, k, v = jnp.split(linear(y, params, p + "attn.qkv"), 3, axis=2)
        q, k, v = (z.reshape(b, t, h, c // h).transpose(0, 2, 1, 3) for z in (q, k, v))
        scores = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(c // h))
        scores = jnp.where(causal, scores, -jnp.inf)
        y = jax.nn.softmax(scores, axis=-1) @ v
        x = x + linear(y.transpose(0, 2, 1, 3).reshape(b, t, c), params, p + "attn.proj")
        y = layer_norm(x, params[p + "ln2.weight"], params[p + "ln2.bias"])
        y = jax.nn.gelu(linear(y, params, p + "mlp.0"), approximate=False)
        x = x + linear(y, params, p + "mlp.2")
    x = layer_norm(x, params["ln_f.weight"], params["ln_f.bias"])
    logits = x @ params["tok.weight"].T  # tied head
    logp = jax.nn.log_softmax(logits.reshape(-1, logits.shape[-1]), axis=-1)
    return -jnp.take_along_axis(logp, targets.reshape(-1, 1), axis=1).mean()


def adamw_state(params):
    """AdamW's initial state: step 0 and zero moments."""
    return {"step": jnp.zeros((), jnp.float32), "m": jax.tree.map(jnp.zeros_like, params),
            "v": jax.tree.map(jnp.zeros_like, params)}


def adamw_update(params, grads, state):
    step = state["step"] + 1
    b1, b2 = BETAS
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    c1, c2 = 1 - b1 ** step, 1 - b2 ** step

    def update(p, m, v):
        p = p * (1 - LR * WEIGHT_DECAY)
        return p - (LR / c1) * m / (jnp.sqrt(v / c2) + EPS)
    return jax.tree.map(update, params, m, v), {"step": step, "m": m, "v": v}


def make_jax_step(model, cfg, idx, targets):
    params = jax_params(model)
    state = adamw_state(params)
    idx, targets = jnp.asarray(idx.cpu().numpy()), jnp.asarray(targets.cpu().numpy())

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, state):
        loss, grads = jax.value_and_grad(gpt_loss)(params, idx, targets, cfg)
        params, state = adamw_update(params, grads, state)
        return params, state, loss

    carry = {"params": params, "state": state, "loss": None}

    def step():
        carry["params"], carry["state"], carry["loss"] = train_step(carry["params"], carry["state"])

    def wait():
        jax.block_until_ready((carry["params"], carry["state"]))
    return step, wait, lambda: float(carry["loss"])


# ---------------------------------------------------------------------- ours


def make_our_step(model, idx, targets):
    model = model.tpu()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    idx, targets = idx.tpu(), targets.tpu()
    compiled_step = workloads.compiled_train_step(model, opt)
    carry = {"loss": None}

    def step():
        carry["loss"] = compiled_step(idx, targets)
    return step, torch.tpu.synchronize, lambda: carry["loss"].item()


def breakdown(size, steps=100):
    """Median milliseconds of each program of a step, each run on its own and waited for."""
    cfg, _ = SIZES[size]
    torch.manual_seed(0)
    model = workloads.GPT(cfg)
    idx, targets = workloads.gpt_batch(cfg, "cpu")
    params = jax_params(model)
    state = adamw_state(params)
    jidx, jtargets = jnp.asarray(idx.numpy()), jnp.asarray(targets.numpy())
    forward = jax.jit(lambda p: gpt_loss(p, jidx, jtargets, cfg))
    value_and_grad = jax.jit(lambda p: jax.value_and_grad(gpt_loss)(p, jidx, jtargets, cfg))
    update = jax.jit(adamw_update)
    grads = value_and_grad(params)[1]
    jax_parts = {"forward": lambda: forward(params), "forward+backward": lambda: value_and_grad(params),
                 "update": lambda: update(params, grads, state)}

    model = model.tpu()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    idx, targets = idx.tpu(), targets.tpu()
    compiled_loss = torch.compile(workloads.loss_of, backend="tpu")
    compiled_opt_step = torch.compile(opt.step, backend="tpu")
    ours = {"forward": [], "backward": [], "optimizer": []}
    jax_ms = {name: [] for name in jax_parts}
    for i in range(steps + 5):
        opt.zero_grad(set_to_none=True)
        torch.tpu.synchronize()
        t0 = time.perf_counter()
        loss = compiled_loss(model, idx, targets)
        torch.tpu.synchronize()
        t1 = time.perf_counter()
        loss.backward()
        torch.tpu.synchronize()
        t2 = time.perf_counter()
        compiled_opt_step()
        torch.tpu.synchronize()
        t3 = time.perf_counter()
        for name, run in jax_parts.items():
            start = time.perf_counter()
            jax.block_until_ready(run())
            if i >= 5:
                jax_ms[name].append((time.perf_counter() - start) * 1e3)
        if i >= 5:  # the first steps compile
            for name, (a, b) in zip(ours, ((t0, t1), (t1, t2), (t2, t3))):
                ours[name].append((b - a) * 1e3)
    fmt = lambda d: ", ".join(f"{k} {statistics.median(v):.2f} ms" for k, v in d.items())  # noqa: E731
    print(f"gpt_{size:6s} each program on its own: ours {fmt(ours)} "
          f"(sum {sum(statistics.median(v) for v in ours.values()):.2f} ms); jax {fmt(jax_ms)}")
    sys.stdout.flush()


def timed(step, wait, steps):
    wait()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    wait()
    return steps / (time.perf_counter() - start)


def compare(size, repeats):
    cfg, steps = SIZES[size]
    torch.manual_seed(0)
    model = workloads.GPT(cfg)
    idx, targets = workloads.gpt_batch(cfg, "cpu")
    sides = {"jax": make_jax_step(model, cfg, idx, targets), "ours": make_our_step(model, idx, targets)}
    first_losses = {}
    for name, (step, wait, loss) in sides.items():
        step()
        first_losses[name] = loss()
        workloads.warm_up(step)
        wait()
    rates = {name: [] for name in sides}
    for r in range(repeats):
        for name in (sides if r % 2 == 0 else list(sides)[::-1]):
            step, wait, _ = sides[name]
            rates[name].append(timed(step, wait, steps))
    med = {name: statistics.median(v) for name, v in rates.items()}
    ratio = med["ours"] / med["jax"]
    print(f"gpt_{size:6s} jax {med['jax']:8.2f} steps/s  ours (compiled) {med['ours']:8.2f} steps/s  "
          f"ours/jax {ratio:5.2f}x {'ok' if ratio >= TARGET_VS_JAX else f'BELOW target {TARGET_VS_JAX}x'}  "
          f"(first losses: jax {first_losses['jax']:.5f}, ours {first_losses['ours']:.5f})")
    sys.stdout.flush()
    return med


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", choices=sorted(SIZES), default=None)
    parser.add_argument("--breakdown", action="store_true",
                        help="also time each program of a step on its own (ours and JAX's)")
    parser.add_argument("--chart", default=os.path.join(os.path.dirname(__file__), "..", "docs", "vs_jax.png"),
                        help="where the PNG chart of the table goes ('' for none)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    setting = (f"torch {torch.__version__} on {torch.tpu.platform()} (PJRT plugin), jax {jax.__version__} on "
               f"{jax.devices()[0].platform}; {args.repeats} repeats, medians")
    print(setting)
    sizes = args.only or list(SIZES)
    rates = {}
    for size in sizes:
        rates[size] = compare(size, args.repeats)
        if args.breakdown:
            breakdown(size, steps=100 if size == "small" else 5)
    if args.chart:
        names = [f"gpt_{size}" for size in sizes]
        relative = {side: [rates[size][side] / rates[size]["jax"] for size in sizes] for side in ("jax", "ours")}
        chart.write_bar_chart(args.chart, "Compiled training step vs jax.jit: benchmarks/vs_jax.py", [
            ("steps/s relative to JAX", names, relative, TARGET_VS_JAX),
        ], note=setting)


if __name__ == "__main__":
    main()
