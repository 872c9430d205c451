"""JAX and Pallas kernels inside a PyTorch program on tpu (needs `pip install 'torch_tpu[jax]'`).

    python examples/jax_kernels.py

1. A JAX function (RMS norm) as an op on tpu tensors: forward, gradient, and one fused
   program with the PyTorch ops around it.
2. A Llama whose attention is a blocked flash attention written in Pallas
   (attn_implementation="tpu_jax"): a few training steps and greedy generation, beside
   Transformers' eager attention.
"""
import copy

import jax
import jax.numpy as jnp
import torch

import torch_tpu


@torch_tpu.jax_op
def rms_norm(x, w):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * w


def jax_function():
    torch.manual_seed(0)
    x = torch.randn(4, 64, device="tpu", requires_grad=True)
    w = torch.randn(64, device="tpu", requires_grad=True)
    target = torch.randn(4, 64, device="tpu")
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    loss = (rms_norm(torch.relu(x), w) - target).square().mean()  # recorded, nothing runs yet
    loss.backward()  # the backward is jax.vjp of rms_norm, recorded the same way
    values = torch.stack([loss, x.grad.norm(), w.grad.norm()]).tolist()  # runs it all
    print("loss {:.4f}, |grad x| {:.4f}, |grad w| {:.4f}".format(*values),
          f"in {torch_tpu.metrics()['executions']} program(s)")


def llama():
    from transformers import AutoConfig, AutoModelForCausalLM

    from torch_tpu.jax_attention import register_transformers_attention

    register_transformers_attention()  # attn_implementation="tpu_jax"
    config = AutoConfig.for_model("llama", vocab_size=128, hidden_size=64, intermediate_size=128,
                                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    models = {}
    for name in ("eager", "tpu_jax"):
        torch.manual_seed(0)
        models[name] = AutoModelForCausalLM.from_config(copy.deepcopy(config), attn_implementation=name).to("tpu")
    ids = torch.randint(0, 128, (2, 16), device="tpu")
    for name, model in models.items():
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses = []
        for _ in range(5):
            loss = model(ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(round(loss.item(), 4))
        model.eval()
        with torch.no_grad():
            tokens = model.generate(ids[:, :8], max_new_tokens=8, do_sample=False, pad_token_id=0)
        print(f"{name:8} attention: losses {losses}; generated {tokens[0, 8:].tolist()}")


if __name__ == "__main__":
    jax_function()
    llama()
