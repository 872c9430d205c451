"""A blocked, flash-style attention written in JAX and Pallas, run on tpu tensors through
`torch_tpu.jax_op`, and its registration as a Transformers attention implementation.

    from torch_tpu.jax_attention import flash_attention, register_transformers_attention
    out = flash_attention(q, k, v)           # [batch, heads, q_len, head_dim], causal
    register_transformers_attention()        # attn_implementation="tpu_jax"

The forward pass is a Pallas kernel over a grid of (batch, head, query block): each program
walks the key/value blocks with an online softmax (running maximum and sum), so no
[q_len, kv_len] score matrix is ever held, and with causal masking it stops at the last
block a query can see. Grouped-query attention reads a key/value head per group of query
heads through the block index map. On a TPU the kernel is compiled by Mosaic; on every
other platform it runs in Pallas' interpret mode, which lowers it to plain StableHLO. The
backward pass is the vector-Jacobian product of the same attention written with jax.numpy
(a user-given backward of the jax_op), recomputing the scores.

Causal masking is PyTorch's `scaled_dot_product_attention(is_causal=True)`: query i sees
keys 0..i (aligned to the top left; Transformers relies on it when torch_tpu's bucketed
`generate()` attends over a key buffer longer than the prompt). An additive `bias`
([batch or 1, heads or 1, q_len, kv_len]) adds to the scores, e.g. a padding mask.
"""
import functools
import math

import torch

__all__ = ["flash_attention", "register_transformers_attention"]

_MASKED = -1e30  # a score that loses every softmax without making inf - inf


def _round_up(n, multiple):
    return (n + multiple - 1) // multiple * multiple


@functools.cache
def _attention_op():
    """The jax_op, built at first use (JAX is imported here, not with the package)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from .jax_ops import jax_op

    def kernel(q_ref, k_ref, v_ref, bias_ref, o_ref, *, scale, causal, kv_len, block_k):
        q = q_ref[...].astype(jnp.float32) * scale  # [block_q, head_dim]
        block_q = q.shape[0]
        q_pos = pl.program_id(2) * block_q + jnp.arange(block_q)

        def step(j, carry):
            m, l, acc = carry
            start = j * block_k
            k = k_ref[pl.ds(start, block_k), :].astype(jnp.float32)
            v = v_ref[pl.ds(start, block_k), :].astype(jnp.float32)
            s = q @ k.T + bias_ref[:, pl.ds(start, block_k)].astype(jnp.float32)
            k_pos = start + jnp.arange(block_k)
            visible = k_pos[None, :] < kv_len
            if causal:
                visible = visible & (k_pos[None, :] <= q_pos[:, None])
            s = jnp.where(visible, s, _MASKED)
            m_new = jnp.maximum(m, s.max(axis=-1))
            p = jnp.exp(s - m_new[:, None])
            rescale = jnp.exp(m - m_new)
            return m_new, l * rescale + p.sum(axis=-1), acc * rescale[:, None] + p @ v

        num_blocks = k_ref.shape[0] // block_k
        if causal:  # blocks past the last query's position hold nothing it may see
            last = (pl.program_id(2) + 1) * block_q
            num_blocks = jnp.minimum(num_blocks, (last + block_k - 1) // block_k)
        init = (jnp.full((block_q,), _MASKED, jnp.float32), jnp.zeros((block_q,), jnp.float32),
                jnp.zeros(q.shape, jnp.float32))
        m, l, acc = jax.lax.fori_loop(0, num_blocks, step, init)
        o_ref[...] = (acc / l[:, None]).astype(o_ref.dtype)

    def forward(q, k, v, bias, *, scale, causal, block_q, block_k, interpret):
        batch, heads, q_len, head_dim = q.shape
        kv_heads, kv_len = k.shape[1], k.shape[2]
        groups = heads // kv_heads
        block_q = min(block_q, _round_up(q_len, 8))
        block_k = min(block_k, _round_up(kv_len, 8))
        q_pad, kv_pad = _round_up(q_len, block_q), _round_up(kv_len, block_k)
        q = jnp.pad(q, ((0, 0), (0, 0), (0, q_pad - q_len), (0, 0)))
        k = jnp.pad(k, ((0, 0), (0, 0), (0, kv_pad - kv_len), (0, 0)))
        v = jnp.pad(v, ((0, 0), (0, 0), (0, kv_pad - kv_len), (0, 0)))
        bias = jnp.pad(bias, ((0, 0), (0, 0), (0, q_pad - q_len), (0, kv_pad - kv_len)))
        bias_batch, bias_heads = bias.shape[0] > 1, bias.shape[1] > 1
        out = pl.pallas_call(
            functools.partial(kernel, scale=scale, causal=causal, kv_len=kv_len, block_k=block_k),
            grid=(batch, heads, q_pad // block_q),
            in_specs=[
                pl.BlockSpec((None, None, block_q, head_dim), lambda b, h, i: (b, h, i, 0)),
                pl.BlockSpec((None, None, kv_pad, head_dim), lambda b, h, i: (b, h // groups, 0, 0)),
                pl.BlockSpec((None, None, kv_pad, head_dim), lambda b, h, i: (b, h // groups, 0, 0)),
                pl.BlockSpec((None, None, block_q, kv_pad),
                             lambda b, h, i: (b if bias_batch else 0, h if bias_heads else 0, i, 0)),
            ],
            out_specs=pl.BlockSpec((None, None, block_q, head_dim), lambda b, h, i: (b, h, i, 0)),
            out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
            interpret=interpret,
        )(q, k, v, bias)
        return out[:, :, :q_len]

    def reference(q, k, v, bias, scale, causal):
        groups = q.shape[1] // k.shape[1]
        k, v = jnp.repeat(k, groups, axis=1), jnp.repeat(v, groups, axis=1)
        s = jnp.einsum("bhqd,bhkd->bhqk", q.astype(jnp.float32), k.astype(jnp.float32)) * scale
        s = s + bias.astype(jnp.float32)
        if causal:
            visible = jnp.arange(k.shape[2])[None, :] <= jnp.arange(q.shape[2])[:, None]
            s = jnp.where(visible, s, _MASKED)
        p = jax.nn.softmax(s, axis=-1)
        return jnp.einsum("bhqk,bhkd->bhqd", p, v.astype(jnp.float32)).astype(q.dtype)

    def backward(q, k, v, bias, cotangent, *, scale, causal, block_q, block_k, interpret):
        _, pullback = jax.vjp(lambda q, k, v: reference(q, k, v, bias, scale, causal), q, k, v)
        return (*pullback(cotangent), None)

    statics = ("scale", "causal", "block_q", "block_k", "interpret")
    return jax_op(forward, static_argnames=statics, backward=backward)


def flash_attention(q, k, v, bias=None, *, causal=True, scale=None, block_q=64, block_k=64):
    """Attention of q [batch, heads, q_len, head_dim] over k, v [batch, kv_heads, kv_len,
    head_dim] (heads a multiple of kv_heads), on tpu tensors: softmax(q k^T * scale + bias)
    v, with causal masking as scaled_dot_product_attention's is_causal. `bias` is additive, broadcast over batch and heads
    where its dims are 1. Differentiable in q, k and v."""
    if q.dim() != 4 or k.dim() != 4 or v.shape != k.shape or q.shape[0] != k.shape[0] or q.shape[3] != k.shape[3]:
        raise ValueError(f"flash_attention: expected q [batch, heads, q_len, head_dim] and k, v [batch, kv_heads, "
                         f"kv_len, head_dim], got q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}")
    if q.shape[1] % k.shape[1]:
        raise ValueError(f"flash_attention: {q.shape[1]} query heads are not a multiple of {k.shape[1]} key heads")
    if bias is None:
        bias = torch.zeros(1, 1, q.shape[2], k.shape[2], dtype=torch.float32, device=q.device)
    elif bias.dim() != 4 or bias.shape[2:] != (q.shape[2], k.shape[2]):
        raise ValueError(f"flash_attention: bias must be [batch or 1, heads or 1, {q.shape[2]}, {k.shape[2]}], "
                         f"got {list(bias.shape)}")
    forward = _attention_op()
    scale = float(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    interpret = torch.tpu.platform() != "tpu"
    return forward(q, k, v, bias, scale=scale, causal=bool(causal), block_q=block_q, block_k=block_k,
                   interpret=interpret)


def _transformers_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Transformers' attention interface: (output [batch, q_len, heads, head_dim], None)."""
    if dropout and module.training:
        raise ValueError("tpu_jax attention has no dropout; set the model's attention_dropout to 0")
    if kwargs.get("softcap") is not None or kwargs.get("sliding_window") is not None:
        raise ValueError("tpu_jax attention supports neither softcapping nor sliding windows")
    bias = None
    if attention_mask is not None:  # sdpa_mask's booleans: True where a query may attend
        if attention_mask.dtype == torch.bool:
            bias = torch.zeros(attention_mask.shape, dtype=torch.float32, device=query.device)
            bias = bias.masked_fill(~attention_mask, _MASKED)
        else:
            bias = attention_mask.float()
    # A mask says everything (padding, a decode step); without one, causal as sdpa's is_causal.
    causal = attention_mask is None and query.shape[2] > 1 and getattr(module, "is_causal", True)
    out = flash_attention(query, key, value, bias, causal=causal, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


def register_transformers_attention(name="tpu_jax"):
    """Registers the attention as `attn_implementation=name` for Transformers models, with
    sdpa's masks (none where the plain causal pattern holds)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(name, _transformers_attention)
    AttentionMaskInterface.register(name, sdpa_mask)
