"""Models and training steps shared by the benchmarks (and usable from tests).

Everything here is plain PyTorch: the same code runs on "cpu" and "tpu".
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class GPTConfig:
    layers: int
    width: int
    seq: int
    batch: int
    vocab: int
    heads: int = 4
    tied_head: bool = True


GPT_SMALL = GPTConfig(layers=4, width=128, seq=64, batch=4, vocab=1024)
GPT_MEDIUM = GPTConfig(layers=4, width=512, seq=256, batch=8, vocab=8192)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)
        mask = torch.ones(cfg.seq, cfg.seq, dtype=torch.bool).tril()
        self.register_buffer("causal", mask, persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        # (b, heads, t, head_dim)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        y = scores.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.width)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.width)
        self.mlp = nn.Sequential(nn.Linear(cfg.width, 4 * cfg.width), nn.GELU(),
                                 nn.Linear(4 * cfg.width, cfg.width))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token and position embedding, causal blocks, final LayerNorm, LM head."""

    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.width)
        self.pos = nn.Embedding(cfg.seq, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab, bias=False)
        if cfg.tied_head:
            self.head.weight = self.tok.weight

    def forward(self, idx):
        t = idx.shape[1]
        positions = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def gpt_batch(cfg, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq + 1), generator=g)
    return idx[:, :-1].contiguous().to(device), idx[:, 1:].contiguous().to(device)


def mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


def mlp_batch(device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(16, 32, generator=g).to(device), torch.randint(0, 10, (16,), generator=g).to(device)


class ElementwiseChain(nn.Module):
    """GELU / LayerNorm / residual adds on one large activation; no matrix products."""

    def __init__(self, width, depth=8):
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth))

    def forward(self, x):
        for norm in self.norms:
            x = x + F.gelu(norm(x)) * 0.5
        return x


def loss_of(model, inputs, targets):
    """Cross-entropy of the model's logits (any number of leading dims) against `targets`."""
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def train_step(model, opt, inputs, targets):
    """One forward+backward+optimizer step on cross-entropy; returns the loss (not read)."""
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model, inputs, targets)
    loss.backward()
    opt.step()
    return loss


def compiled_train_step(model, opt):
    """train_step with the loss (forward) and the optimizer step as torch.compile(backend="tpu")
    graphs; the backward is AOTAutograd's compiled graph. Returns step(inputs, targets) -> loss."""
    compiled_loss = torch.compile(loss_of, backend="tpu")
    compiled_opt_step = torch.compile(opt.step, backend="tpu")

    def step(inputs, targets):
        opt.zero_grad(set_to_none=True)
        loss = compiled_loss(model, inputs, targets)
        loss.backward()
        compiled_opt_step()
        return loss
    return step
