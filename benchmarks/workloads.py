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


# The fewest steps before a loop's steady state (see warm_up).
WARMUP_STEPS = 12


def warm_up(step, min_steps=WARMUP_STEPS, quiet_steps=9, max_steps=100):
    """Runs `step` until its programs are compiled and optimized: at least `min_steps` times,
    then until `quiet_steps` in a row compile and recompile nothing. A program first compiled
    in the quick tier is compiled again, optimized, at its 8th reuse once it has run after 3
    host waits or 8 times since the last one (README, "Compilation cache"), so 9 quiet steps
    leave no program that recurs every step unoptimized. No synchronize is added here: it would
    change how fused mode cuts a loop whose steps read a value. Returns the number of steps run."""
    import torch_tpu

    def events():
        m = torch_tpu.metrics()
        return m["compiles"] + m["full_recompiles"]

    quiet, last = 0, events()
    for i in range(max_steps):
        step()
        now = events()
        quiet = quiet + 1 if now == last else 0
        last = now
        if i + 1 >= min_steps and quiet >= quiet_steps:
            return i + 1
    return max_steps

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


def mse_loss_of(model, inputs, targets):
    return F.mse_loss(model(inputs), targets)


def bce_loss_of(model, inputs, targets):
    return F.binary_cross_entropy_with_logits(model(inputs), targets)


def train_step(model, opt, inputs, targets, loss_fn=loss_of):
    """One forward+backward+optimizer step on `loss_fn` (cross-entropy by default); returns the loss (not read)."""
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model, inputs, targets)
    loss.backward()
    opt.step()
    return loss


def compiled_train_step(model, opt, loss_fn=loss_of):
    """train_step with the loss (forward) and the optimizer step as torch.compile(backend="tpu")
    graphs; the backward is AOTAutograd's compiled graph. Returns step(inputs, targets) -> loss."""
    compiled_loss = torch.compile(loss_fn, backend="tpu")
    compiled_opt_step = torch.compile(opt.step, backend="tpu")

    def step(inputs, targets):
        opt.zero_grad(set_to_none=True)
        loss = compiled_loss(model, inputs, targets)
        loss.backward()
        compiled_opt_step()
        return loss
    return step


# ---- the wide suite's other model families (benchmarks/wide_suite.py)

class ConvNet(nn.Module):
    """Three conv-BatchNorm-ReLU stages (the last two strided), global pooling, a classifier."""

    def __init__(self, channels=32, classes=10):
        super().__init__()
        layers, c_in = [], 3
        for i, c_out in enumerate((channels, 2 * channels, 4 * channels)):
            layers += [nn.Conv2d(c_in, c_out, 3, stride=1 if i == 0 else 2, padding=1, bias=False),
                       nn.BatchNorm2d(c_out), nn.ReLU()]
            c_in = c_out
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c_in, classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean(dim=(2, 3)))


def image_batch(device, batch=16, size=32, classes=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, 3, size, size, generator=g).to(device),
            torch.randint(0, classes, (batch,), generator=g).to(device))


class LSTMTagger(nn.Module):
    """Embedding, a 2-layer LSTM, a per-step classifier (a small LSTM language model)."""

    def __init__(self, vocab=512, width=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        out, _ = self.lstm(self.embed(idx))
        return self.head(out)


def token_batch(device, vocab=512, batch=8, seq=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, vocab, (batch, seq + 1), generator=g)
    return idx[:, :-1].contiguous().to(device), idx[:, 1:].contiguous().to(device)


class MoELayer(nn.Module):
    """Top-2 routing over `experts` MLPs with a fixed capacity per expert (Switch/GShard
    dispatch as one-hot einsums, so every shape is static): tokens past an expert's
    capacity are dropped by it."""

    def __init__(self, width, experts=4, capacity_factor=1.25):
        super().__init__()
        self.experts, self.capacity_factor = experts, capacity_factor
        self.router = nn.Linear(width, experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(experts, width, 4 * width) / math.sqrt(width))
        self.w_out = nn.Parameter(torch.randn(experts, 4 * width, width) / math.sqrt(4 * width))

    def forward(self, x):
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])
        n = tokens.shape[0]
        capacity = int(math.ceil(2 * n / self.experts * self.capacity_factor))
        gates = self.router(tokens).softmax(dim=-1)
        weights, chosen = gates.topk(2, dim=-1)  # [n, 2]
        weights = weights / weights.sum(dim=-1, keepdim=True)
        onehot = F.one_hot(chosen, self.experts).to(x.dtype)  # [n, 2, e]
        # Position of each (token, choice) in its expert's queue: first choices first.
        flat = onehot.transpose(0, 1).reshape(2 * n, self.experts)
        position = (flat.cumsum(dim=0) - 1).reshape(2, n, self.experts).transpose(0, 1)
        kept = onehot * (position < capacity).to(x.dtype)
        slot = F.one_hot((position * kept).sum(dim=-1).long(), capacity).to(x.dtype)  # [n, 2, c]
        dispatch = torch.einsum("nke,nkc->nec", kept, slot)
        combine = torch.einsum("nk,nke,nkc->nec", weights, kept, slot)
        expert_in = torch.einsum("nec,nd->ecd", dispatch, tokens)
        hidden = F.gelu(torch.einsum("ecd,edh->ech", expert_in, self.w_in))
        expert_out = torch.einsum("ech,ehd->ecd", hidden, self.w_out)
        return torch.einsum("nec,ecd->nd", combine, expert_out).reshape(shape)


class MoEModel(nn.Module):
    """Embedding, two blocks of (LayerNorm, top-2 MoE) with residuals, an LM head."""

    def __init__(self, vocab=512, width=128, experts=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(2))
        self.moes = nn.ModuleList(MoELayer(width, experts) for _ in range(2))
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.embed(idx)
        for norm, moe in zip(self.norms, self.moes):
            x = x + moe(norm(x))
        return self.head(x)


class UNetBlock(nn.Module):
    """Down and up once: conv-GroupNorm-SiLU, a strided conv, a bottleneck, nearest
    upsampling, the skip concatenated, conv-GroupNorm-SiLU, a 1x1 conv to the output."""

    def __init__(self, channels=32, groups=8):
        super().__init__()

        def conv_norm(c_in, c_out, stride=1):
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1), nn.GroupNorm(groups, c_out),
                                 nn.SiLU())
        self.inp = conv_norm(3, channels)
        self.down = conv_norm(channels, 2 * channels, stride=2)
        self.mid = conv_norm(2 * channels, 2 * channels)
        self.up = conv_norm(3 * channels, channels)
        self.out = nn.Conv2d(channels, 3, 1)

    def forward(self, x):
        skip = self.inp(x)
        h = self.mid(self.down(skip))
        h = F.interpolate(h, scale_factor=2, mode="nearest")
        return self.out(self.up(torch.cat([h, skip], dim=1)))


def denoise_batch(device, batch=8, size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    clean = torch.randn(batch, 3, size, size, generator=g)
    return (clean + 0.1 * torch.randn(batch, 3, size, size, generator=g)).to(device), clean.to(device)


class Recommender(nn.Module):
    """Sparse features through EmbeddingBags (sum of a bag of ids each), dense features,
    an MLP over both, one click logit (a small DLRM-style model)."""

    def __init__(self, features=4, rows=10000, width=32, dense=13):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(rows, width, mode="sum") for _ in range(features))
        self.mlp = nn.Sequential(nn.Linear(features * width + dense, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                 nn.Linear(64, 1))

    def forward(self, inputs):
        dense, ids, offsets = inputs
        pooled = [bag(i, o) for bag, i, o in zip(self.bags, ids, offsets)]
        return self.mlp(torch.cat(pooled + [dense], dim=1)).squeeze(1)


def recommender_batch(device, features=4, rows=10000, batch=64, bag=8, dense=13, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = [torch.randint(0, rows, (batch * bag,), generator=g).to(device) for _ in range(features)]
    offsets = [torch.arange(0, batch * bag, bag).to(device) for _ in range(features)]
    inputs = (torch.randn(batch, dense, generator=g).to(device), ids, offsets)
    return inputs, (torch.rand(batch, generator=g) > 0.5).float().to(device)
