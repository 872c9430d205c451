"""torch_tpu.jax_op, measured side by side with native ops in one run (fused mode).

    python benchmarks/jax_ops.py [--repeats R] [--calls N] [--steps S]

1. Host time per call of a trivial jax_op (a + b on 16x16 float32) beside torch.add, recorded
   in fused mode (N calls, then one synchronize; medians over R repeats).
2. A Llama training step (AdamW) with the JAX/Pallas flash attention of
   torch_tpu.jax_attention (attn_implementation="tpu_jax") beside Transformers' eager
   attention: steps/s after warm-up, medians over R repeats of S steps, and the programs each
   step runs.
"""
import argparse
import copy
import statistics
import time

import torch

import torch_tpu
from workloads import warm_up


def per_call_us(fn, x, y, calls):
    torch.tpu.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(x, y)
    torch.tpu.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def call_overhead(args):
    import jax  # noqa: F401  (imported before timing)

    add = torch_tpu.jax_op(lambda a, b: a + b)
    x, y = torch.randn(16, 16).tpu(), torch.randn(16, 16).tpu()
    for fn in (add, torch.add):
        per_call_us(fn, x, y, args.calls)  # lower, compile, warm up
    times = {"jax_op": [], "torch.add": []}
    for _ in range(args.repeats):
        times["jax_op"].append(per_call_us(add, x, y, args.calls))
        times["torch.add"].append(per_call_us(torch.add, x, y, args.calls))
    jax_us, native_us = statistics.median(times["jax_op"]), statistics.median(times["torch.add"])
    print(f"fused mode, {args.calls} calls then synchronize, {args.repeats} repeats, medians")
    print(f"  jax_op (a + b)   {jax_us:8.2f} us per call")
    print(f"  torch.add        {native_us:8.2f} us per call")
    print(f"  jax_op/torch.add {jax_us / native_us:8.2f}x")


def llama_steps(args):
    from transformers import AutoConfig, AutoModelForCausalLM

    from torch_tpu.jax_attention import register_transformers_attention

    register_transformers_attention()
    config = AutoConfig.for_model("llama", vocab_size=512, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
                                  num_hidden_layers=args.layers, num_attention_heads=args.heads,
                                  num_key_value_heads=args.heads // 2, max_position_embeddings=args.seq)
    torch.manual_seed(0)
    ids = torch.randint(0, 512, (args.batch, args.seq)).tpu()
    models, optimizers = {}, {}
    for name in ("eager", "tpu_jax"):
        torch.manual_seed(0)
        models[name] = AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation=name).tpu().train()
        optimizers[name] = torch.optim.AdamW(models[name].parameters(), lr=1e-4)

    def step(name):
        loss = models[name](ids, labels=ids).loss
        loss.backward()
        optimizers[name].step()
        optimizers[name].zero_grad()
        return loss.item()

    for name in models:  # warm-up: compile and optimize the step's programs
        warm_up(lambda name=name: step(name))
    rates = {name: [] for name in models}
    programs = {}
    for _ in range(args.repeats):
        for name in models:
            torch_tpu.reset_metrics()
            start = time.perf_counter()
            for _ in range(args.steps):
                step(name)
            rates[name].append(args.steps / (time.perf_counter() - start))
            programs[name] = torch_tpu.metrics()["executions"] / args.steps
    print(f"Llama {args.layers} layers, width {args.hidden}, {args.heads} heads, batch {args.batch}, context {args.seq},"
          f" AdamW; fused mode, {args.repeats} repeats x {args.steps} steps, medians")
    for name in models:
        print(f"  attention {name:8} {statistics.median(rates[name]):8.2f} steps/s"
              f"   programs per step {programs[name]:.1f}")
    print(f"  tpu_jax/eager    {statistics.median(rates['tpu_jax']) / statistics.median(rates['eager']):8.2f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()
    torch_tpu.set_eager_mode("fused")
    print(f"platform {torch.tpu.platform()}; torch {torch.__version__}")
    call_overhead(args)
    llama_steps(args)


if __name__ == "__main__":
    main()
