"""The ranks of the distributed tests (tests/test_distributed.py): one rank per
process under torchrun (the host-staging transport), or, with --threads N, N
ranks as threads of this one process, each on its own device (the XLA transport).

The arguments name what to check:
  collectives  every collective on tpu tensors (the "tpu" backend) and on CPU
               tensors (gloo) with the same arguments: the results must be equal;
               subgroups, async work, functional collectives, errors
  ddp          DDP trains a small GPT; its parameters must equal a one-process CPU
               run on the whole batch; no_sync, unused parameters, comm hooks
  fsdp2        FSDP2 (fully_shard) trains the GPT the same way
  fsdp2_more   FSDP2 without resharding, with gradient accumulation, from a meta-device
               model, with bf16 mixed precision; distributed checkpoint save and load
  tp           tensor parallelism (outputs and gradients of a CPU module), DTensor
               placements, redistribution, ops and random numbers; TorchTitan's Llama
               plan with sequence parallelism and loss parallel, training
  2d           FSDP2 over "dp" and tensor parallelism over "tp" of a 2-D mesh
  compile      torch.compile(backend="tpu") of steps with functional collectives and DTensor
  rank_death   the last rank dies; the others' next collective must raise
Prints "rank R ok: N checks" at the end; any failure raises.
"""
import contextlib
import os
import sys
import threading

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.bool)


class RankState(threading.local):
    checks = 0
    refused = None  # calls that gloo refuses on CPU and the tpu backend refuses too
    groups = None  # the group each device's side uses: "tpu" (our backend) and "cpu" (gloo over the same ranks)
    transport = "host"


state = RankState()
# Modules initialize from the process's one CPU generator: ranks that are
# threads seed it and build their models one at a time.
model_init = threading.Lock()


def values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 4).round().to(dtype)  # exact in every float dtype
    return torch.randint(-5, 6, shape, generator=g, dtype=dtype)


def same(tpu, cpu, what):
    if isinstance(cpu, (list, tuple)):
        assert len(tpu) == len(cpu), what
        for i, (a, b) in enumerate(zip(tpu, cpu)):
            same(a, b, f"{what}[{i}]")
        return
    assert tpu.device.type == "tpu", (what, tpu.device)
    assert tpu.dtype == cpu.dtype and tpu.shape == cpu.shape, (what, tpu.dtype, cpu.dtype, tpu.shape, cpu.shape)
    tol = {torch.bfloat16: 2e-2, torch.float16: 2e-3}.get(cpu.dtype, 1e-6)
    if cpu.dtype.is_floating_point:
        torch.testing.assert_close(tpu.cpu(), cpu, rtol=tol, atol=tol, msg=what)
    else:
        assert torch.equal(tpu.cpu(), cpu), what
    state.checks += 1


def both(fn, what):
    """fn(device, group) -> tensors; equal on tpu and on CPU with gloo, or both raise."""
    try:
        expected = fn("cpu", state.groups["cpu"])
    except (RuntimeError, ValueError) as e:
        try:
            fn("tpu", state.groups["tpu"])
        except (RuntimeError, ValueError):
            state.refused.append(what)
            return
        raise AssertionError(f"{what}: gloo on CPU raised {e!r}, tpu did not")
    same(fn("tpu", state.groups["tpu"]), expected, what)


def reduce_ops(dtype):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    return ops if dtype != torch.bool else [dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX]


def check_collectives(rank, tpu_group, cpu_group, tag=""):
    state.groups = dict(tpu=tpu_group, cpu=cpu_group)
    group = tpu_group
    size = dist.get_world_size(group)
    me = dist.get_rank(group)
    for dtype in DTYPES:
        name = f"{tag}{str(dtype)[6:]}"
        x = values((3, 5), dtype, seed=rank)
        for op in reduce_ops(dtype):
            def all_reduce(dev, group, op=op):
                t = x.to(dev, copy=True)
                dist.all_reduce(t, op=op, group=group)
                return t
            both(all_reduce, f"all_reduce {op} {name}")

            def reduce(dev, group, op=op):
                t = x.to(dev, copy=True)
                dist.reduce(t, dst=dist.get_global_rank(group, 0), op=op, group=group)
                if me == 0:
                    return t
                # Elsewhere the input stays as it was on tpu (as with nccl); gloo uses it as scratch.
                if dev == "tpu":
                    same(t, x, f"reduce input of a non-root {op} {name}")
                return torch.zeros(1, device=dev)
            both(reduce, f"reduce {op} {name}")

            def reduce_scatter_tensor(dev, group, op=op):
                out = torch.empty((3, 5), dtype=dtype, device=dev)
                dist.reduce_scatter_tensor(out, values((3 * size, 5), dtype, seed=rank).to(dev, copy=True), op=op, group=group)
                return out
            both(reduce_scatter_tensor, f"reduce_scatter_tensor {op} {name}")

            def reduce_scatter(dev, group, op=op):
                out = torch.empty((2, 2), dtype=dtype, device=dev)
                ins = [values((2, 2), dtype, seed=rank * 10 + i).to(dev, copy=True) for i in range(size)]
                dist.reduce_scatter(out, ins, op=op, group=group)
                return out
            both(reduce_scatter, f"reduce_scatter {op} {name}")
        if dtype.is_floating_point or dtype in (torch.int32, torch.int64):
            # AVG and PREMUL_SUM: gloo has neither, so the CPU side computes them from SUM.
            t = x.to("tpu")
            dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group)
            s = x.clone()
            dist.all_reduce(s, group=cpu_group)
            same(t, s / size if dtype.is_floating_point else torch.div(s, size, rounding_mode="trunc"),
                 f"all_reduce AVG {name}")
            if dtype.is_floating_point:
                t = x.to("tpu")
                dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5), group=group)
                same(t, (s.float() * 0.5).to(dtype), f"all_reduce PREMUL_SUM {name}")

        def broadcast(dev, group):
            t = x.to(dev, copy=True)
            dist.broadcast(t, src=dist.get_global_rank(group, size - 1), group=group)
            return t
        both(broadcast, f"broadcast {name}")

        def all_gather(dev, group):
            outs = [torch.empty((3, 5), dtype=dtype, device=dev) for _ in range(size)]
            dist.all_gather(outs, x.to(dev, copy=True), group=group)
            return outs
        both(all_gather, f"all_gather {name}")

        def all_gather_into_tensor(dev, group):
            out = torch.empty((3 * size, 5), dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, x.to(dev, copy=True), group=group)
            return out
        both(all_gather_into_tensor, f"all_gather_into_tensor {name}")

        def gather(dev, group):
            dst = dist.get_global_rank(group, 0)
            outs = [torch.empty((3, 5), dtype=dtype, device=dev) for _ in range(size)] if me == 0 else None
            dist.gather(x.to(dev, copy=True), outs, dst=dst, group=group)
            return outs if me == 0 else x.to(dev, copy=True)
        both(gather, f"gather {name}")

        def scatter(dev, group):
            src = dist.get_global_rank(group, 0)
            ins = [values((2, 3), dtype, seed=100 + i).to(dev, copy=True) for i in range(size)] if me == 0 else None
            out = torch.empty((2, 3), dtype=dtype, device=dev)
            dist.scatter(out, ins, src=src, group=group)
            return out
        both(scatter, f"scatter {name}")

        def all_to_all_single(dev, group):
            out = torch.empty((2 * size, 3), dtype=dtype, device=dev)
            dist.all_to_all_single(out, values((2 * size, 3), dtype, seed=rank).to(dev, copy=True), group=group)
            return out
        both(all_to_all_single, f"all_to_all_single {name}")

        def all_to_all_uneven(dev, group):
            # rank i sends i + j + 1 rows to rank j.
            ins = values((sum(me + j + 1 for j in range(size)), 2), dtype, seed=rank).to(dev, copy=True)
            out = torch.empty((sum(i + me + 1 for i in range(size)), 2), dtype=dtype, device=dev)
            dist.all_to_all_single(out, ins, [i + me + 1 for i in range(size)], [me + j + 1 for j in range(size)],
                                   group=group)
            return out
        both(all_to_all_uneven, f"all_to_all_single uneven {name}")

        # all_to_all of lists, rank i sending j + 1 rows to rank j; gloo's own
        # list form crashes on uneven sizes, so the CPU side is the same
        # exchange as one all_to_all_single.
        ins = [values((j + 1, 2), dtype, seed=rank * 10 + j) for j in range(size)]
        outs = [torch.empty((me + 1, 2), dtype=dtype, device="tpu") for _ in range(size)]
        dist.all_to_all(outs, [t.tpu() for t in ins], group=group)
        expected = torch.empty(((me + 1) * size, 2), dtype=dtype)
        dist.all_to_all_single(expected, torch.cat(ins), [me + 1] * size, [j + 1 for j in range(size)],
                               group=cpu_group)
        same(outs, list(expected.split(me + 1)), f"all_to_all {name}")

        def send_recv(dev, group):
            t = x.to(dev, copy=True) + 0 if dtype != torch.bool else x.to(dev, copy=True).clone()
            peer_of = lambda r: dist.get_global_rank(group, r)  # noqa: E731
            if me % 2 == 0 and me + 1 < size:
                dist.send(t, peer_of(me + 1), group=group)
            elif me % 2 == 1:
                dist.recv(t, peer_of(me - 1), group=group)
            return t
        both(send_recv, f"send/recv {name}")

        def batch_p2p(dev, group):
            peer_of = lambda r: dist.get_global_rank(group, r)  # noqa: E731
            right, left = peer_of((me + 1) % size), peer_of((me - 1) % size)
            out = torch.empty((3, 5), dtype=dtype, device=dev)
            ops = [dist.P2POp(dist.isend, x.to(dev, copy=True), right, group), dist.P2POp(dist.irecv, out, left, group)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            return out
        both(batch_p2p, f"batch_isend_irecv {name}")

    # async_op: wait(), and get_future() with the result.
    t = torch.ones(4, device="tpu") * (rank + 1)
    work = dist.all_reduce(t, async_op=True, group=group)
    assert work.wait()
    fut = dist.all_reduce(t, async_op=True, group=group).get_future()
    value = fut.wait()
    s = torch.ones(4) * (rank + 1)
    dist.all_reduce(s, group=cpu_group)
    dist.all_reduce(s, group=cpu_group)
    same(t, s, f"{tag}async all_reduce")
    same(value[0], s, f"{tag}async all_reduce future")
    dist.barrier(group=group)


def check_functional_collectives(rank, cpu_group):
    import torch.distributed._functional_collectives as funcol
    x = values((4,), torch.float32, seed=rank)
    s = x.clone()
    dist.all_reduce(s, group=cpu_group)
    same(funcol.all_reduce(x.tpu(), "sum", dist.group.WORLD), s, "funcol all_reduce")
    g = torch.empty(4 * dist.get_world_size())
    dist.all_gather_into_tensor(g, x, group=cpu_group)
    same(funcol.all_gather_tensor(x.tpu(), 0, dist.group.WORLD), g, "funcol all_gather_tensor")


def raises(fn, pattern, what):
    try:
        fn()
    except (RuntimeError, ValueError) as e:
        assert pattern in str(e), (what, str(e))
    else:
        raise AssertionError(f"{what} did not raise")


def check_errors(rank):
    import datetime
    world = dist.get_world_size()
    # Calls that differ across ranks raise on every rank, naming the collective.
    raises(lambda: dist.all_reduce(torch.ones(3 + rank, device="tpu")), "ALLREDUCE: the ranks' calls do not match",
           "shapes that differ across ranks")
    raises(lambda: dist.all_reduce(torch.ones(3, device="tpu", dtype=torch.float32 if rank else torch.int32)),
           "the ranks' calls do not match", "dtypes that differ across ranks")
    t = torch.ones(2, device="tpu")
    raises(lambda: dist.all_reduce(t) if rank == 0 else dist.broadcast(t, 0), "the ranks' calls do not match",
           "different collectives")
    # A collective that only some ranks call raises within the group's timeout.
    short = dist.new_group(timeout=datetime.timedelta(seconds=3))
    if rank == 0:
        why = "ALLREDUCE failed on the host" if state.transport == "host" else "ALLREDUCE timed out"
        raises(lambda: dist.all_reduce(torch.ones(2, device="tpu"), group=short), why, "a collective only rank 0 calls")
    dist.barrier()
    # A CPU tensor on a group with no CPU backend: PyTorch's error, as with nccl alone.
    tpu_only = dist.new_group(backend="tpu")
    raises(lambda: dist.all_reduce(torch.ones(2), group=tpu_only), "No backend type associated with device type cpu",
           "CPU tensor")
    # A CPU output beside a tpu input reaches the tpu backend, which refuses it.
    outs = [torch.empty(2) for _ in range(world)]
    raises(lambda: dist.all_gather(outs, torch.ones(2, device="tpu")), "Tensors must be tpu", "CPU output")
    dist.barrier()


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.qkv, self.proj = nn.LayerNorm(width), nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.ln2, self.fc, self.out = nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, -1))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, width=32, heads=4, layers=2, context=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def check_ddp(rank, world):
    with model_init:
        torch.manual_seed(0)
        reference = TinyGPT()
        model = TinyGPT()
    model.load_state_dict(reference.state_dict())
    model = DDP(model.tpu(), bucket_cap_mb=0.01)  # several buckets
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    per_rank = 4
    for step in range(4):
        batch = torch.randint(0, 64, (per_rank * world, 17), generator=g)
        inputs, targets = batch[:, :-1], batch[:, 1:]
        # Reference: the whole batch in one process on CPU.
        opt_ref.zero_grad()
        F.cross_entropy(reference(inputs).flatten(0, 1), targets.flatten()).backward()
        opt_ref.step()
        # DDP: each rank its slice; gradients averaged across ranks.
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        opt.zero_grad()
        F.cross_entropy(model(inputs[mine].tpu()).flatten(0, 1), targets[mine].flatten().tpu()).backward()
        opt.step()
    for (name, p), q in zip(model.module.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-4, atol=1e-5, msg=f"DDP parameter {name}")
        state.checks += 1


def check_ddp_features(rank, world):
    """no_sync with gradient accumulation, find_unused_parameters, and gradient compression hooks."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    class TwoHeads(nn.Module):
        def __init__(self, with_unused):
            super().__init__()
            self.body, self.used = nn.Linear(8, 16), nn.Linear(16, 4)
            self.unused = nn.Linear(16, 4) if with_unused else None

        def forward(self, x):
            return self.used(torch.relu(self.body(x)))

    g = torch.Generator().manual_seed(2)
    data = [(torch.randn(4 * world, 8, generator=g), torch.randn(4 * world, 4, generator=g)) for _ in range(4)]
    mine = slice(rank * 4, (rank + 1) * 4)
    for variant in ("no_sync", "unused", "fp16_hook", "bf16_hook"):
        with model_init:
            torch.manual_seed(0)
            reference = TwoHeads(variant == "unused")
            model = TwoHeads(variant == "unused")
        model.tpu()
        model.load_state_dict(reference.state_dict())
        model = DDP(model, find_unused_parameters=variant == "unused")
        # The hooks' state is the group: with ranks as threads, autograd runs
        # them on its own thread, which has no default group of its own.
        if variant == "fp16_hook":
            model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
        if variant == "bf16_hook":
            # bf16_compress_hook's own body: DDP accepts the hook by that name only on CUDA and XPU.
            def bf16_compress(state, bucket):
                return default_hooks._compress_hook(torch.bfloat16, state, bucket)
            model.register_comm_hook(dist.group.WORLD, bf16_compress)
        opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        micro = 2 if variant == "no_sync" else 1
        for step in range(0, len(data), micro):
            opt_ref.zero_grad()
            opt.zero_grad()
            for i in range(micro):
                x, y = data[step + i]
                F.mse_loss(reference(x), y).backward()
                if i < micro - 1:
                    with model.no_sync():  # gradients accumulate locally, synchronized with the last micro-batch
                        F.mse_loss(model(x[mine].tpu()), y[mine].tpu()).backward()
                else:
                    F.mse_loss(model(x[mine].tpu()), y[mine].tpu()).backward()
            opt_ref.step()
            opt.step()
        tol = {"bf16_hook": 2e-2, "fp16_hook": 2e-3}.get(variant, 1e-5)
        for (name, p), q in zip(model.module.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=tol, atol=tol, msg=f"{variant} {name}")
            state.checks += 1


def check_fsdp2(rank, world):
    """FSDP2 (fully_shard per block) trains the small GPT as one CPU process does on the whole batch."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("tpu", (world,))

    with model_init:
        torch.manual_seed(0)
        reference = TinyGPT()
        model = TinyGPT()
    model.load_state_dict(reference.state_dict())
    model.tpu()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(3)
    mine = slice(rank * 2, (rank + 1) * 2)
    for _ in range(3):
        batch = torch.randint(0, 64, (2 * world, 17), generator=g)
        inputs, targets = batch[:, :-1], batch[:, 1:]
        opt_ref.zero_grad()
        F.cross_entropy(reference(inputs).flatten(0, 1), targets.flatten()).backward()
        opt_ref.step()
        opt.zero_grad()
        F.cross_entropy(model(inputs[mine].tpu()).flatten(0, 1), targets[mine].flatten().tpu()).backward()
        opt.step()
    full = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(full[name], value, rtol=1e-4, atol=1e-5, msg=f"FSDP2 parameter {name}")
        state.checks += 1


def tensor_parallel_mlp(mesh, activation):
    """A CPU MLP and its copy on tpu with the first layer column-parallel and the last row-parallel."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    with model_init:
        torch.manual_seed(0)
        reference = nn.Sequential(nn.Linear(8, 32), activation(), nn.Linear(32, 8))
        model = nn.Sequential(nn.Linear(8, 32), activation(), nn.Linear(32, 8))
    model.load_state_dict(reference.state_dict())
    return reference, parallelize_module(model.tpu(), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})


def check_tensor_parallel(rank, world):
    """Tensor parallelism (DTensor) gives the CPU module's outputs and gradients."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    mesh = init_device_mesh("tpu", (world,))
    g = torch.Generator().manual_seed(4)
    reference, model = tensor_parallel_mlp(mesh, nn.ReLU)
    x = torch.randn(4, 8, generator=g)
    out = model(x.tpu())
    expected = reference(x)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5, msg="tensor parallel output")
    out.sum().backward()
    expected.sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad.full_tensor().cpu(), q.grad, rtol=1e-4, atol=1e-5,
                                   msg=f"tensor parallel gradient {name}")
        state.checks += 1
    a = torch.arange(4.0 * world * 3).reshape(4 * world, 3)
    d = distribute_tensor(a.tpu(), mesh, [Shard(0)])
    torch.testing.assert_close((d.T @ d).full_tensor().cpu(), a.T @ a, msg="DTensor matmul")
    state.checks += 1


class RMSNorm(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class LlamaBlock(nn.Module):
    """Attention and a SwiGLU MLP, each behind an RMSNorm, named as TorchTitan names them.
    Heads are found from the projections' widths, so a tensor-parallel shard runs its own heads."""

    def __init__(self, width=32, head_dim=8):
        super().__init__()
        self.head_dim = head_dim
        self.attention_norm, self.ffn_norm = RMSNorm(width), RMSNorm(width)
        self.attention = nn.ModuleDict({n: nn.Linear(width, width, bias=False) for n in ("wq", "wk", "wv", "wo")})
        self.feed_forward = nn.ModuleDict({"w1": nn.Linear(width, 2 * width, bias=False),
                                           "w3": nn.Linear(width, 2 * width, bias=False),
                                           "w2": nn.Linear(2 * width, width, bias=False)})

    def forward(self, x):
        a = self.attention
        h = self.attention_norm(x)
        b, t, _ = h.shape
        q, k, v = (a[n](h).view(b, t, -1, self.head_dim).transpose(1, 2) for n in ("wq", "wk", "wv"))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, -1)
        x = x + a["wo"](o)
        f = self.feed_forward
        h = self.ffn_norm(x)
        return x + f["w2"](F.silu(f["w1"](h)) * f["w3"](h))


class TinyLlama(nn.Module):
    def __init__(self, vocab=64, width=32, layers=2):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(LlamaBlock(width) for _ in range(layers))
        self.norm = RMSNorm(width)
        self.output = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x)
        return self.output(self.norm(x))


def tensor_parallel_plan(loss_parallel):
    """TorchTitan's Llama plan: sequence-parallel norms, column/row-parallel projections, and
    the output sharded over the vocabulary for loss parallel (or gathered)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)
    plan = {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1) if loss_parallel else Replicate(),
                                  use_local_output=not loss_parallel),
    }
    for i in range(2):
        plan.update({
            f"layers.{i}.attention_norm": SequenceParallel(),
            f"layers.{i}.attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            f"layers.{i}.attention.wq": ColwiseParallel(),
            f"layers.{i}.attention.wk": ColwiseParallel(),
            f"layers.{i}.attention.wv": ColwiseParallel(),
            f"layers.{i}.attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            f"layers.{i}.ffn_norm": SequenceParallel(),
            f"layers.{i}.feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            f"layers.{i}.feed_forward.w1": ColwiseParallel(),
            f"layers.{i}.feed_forward.w3": ColwiseParallel(),
            f"layers.{i}.feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
        })
    return plan


def llama_batches(world, steps, seed, per_rank=2):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 64, (per_rank * world, 9), generator=g) for _ in range(steps)]


def train_and_compare(model, reference, batches, split, what, lr=0.1, tol=(1e-4, 1e-5), micro=1, loss_parallel=False,
                      before_micro=None):
    """SGD with momentum on `model` (each rank its `split` of every batch) and on the one-process
    CPU `reference` (whole batches); the parameters must then be equal."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import loss_parallel as loss_parallel_context
    opt_ref = torch.optim.SGD(reference.parameters(), lr=lr, momentum=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(0, len(batches), micro):
        opt_ref.zero_grad()
        opt.zero_grad()
        for i in range(micro):
            batch = batches[step + i]
            inputs, targets = batch[:, :-1], batch[:, 1:]
            (F.cross_entropy(reference(inputs).flatten(0, 1), targets.flatten()) / micro).backward()
            if before_micro:
                before_micro(model, last=i == micro - 1)
            mine = split(batch)
            logits = model(mine[:, :-1].tpu())
            with loss_parallel_context() if loss_parallel else contextlib.nullcontext():
                (F.cross_entropy(logits.flatten(0, 1), mine[:, 1:].flatten().tpu()) / micro).backward()
        opt_ref.step()
        opt.step()
    full = {k: (v.full_tensor() if isinstance(v, DTensor) else v).cpu() for k, v in model.state_dict().items()}
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(full[name].float(), value, rtol=tol[0], atol=tol[1], msg=f"{what}: {name}")
        state.checks += 1


def build_pair(cls, meta=False):
    """A CPU reference and an equal copy for the tpu side (on the meta device when `meta`)."""
    with model_init:
        torch.manual_seed(0)
        reference = cls()
        if meta:
            with torch.device("meta"):
                model = cls()
        else:
            model = cls()
            model.load_state_dict(reference.state_dict())
    return reference, model


def load_full_state(model, reference):
    """Fills a sharded model (after to_empty) from the reference's full state, TorchTitan's way of
    initialising a meta-device model."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
    set_model_state_dict(model, {k: v.tpu() for k, v in reference.state_dict().items()},
                         options=StateDictOptions(full_state_dict=True))


def check_fsdp2_variants(rank, world):
    """FSDP2 without resharding after forward, with gradient accumulation, with a meta-device model
    materialized by to_empty, and with bf16 mixed precision, against one CPU process."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = init_device_mesh("tpu", (world,))
    split = lambda b: b.chunk(world)[rank]  # noqa: E731

    def sharded(model, **kwargs):
        for layer in model.layers:
            fully_shard(layer, mesh=mesh, **kwargs)
        return fully_shard(model, mesh=mesh, **kwargs)

    reference, model = build_pair(TinyLlama)
    train_and_compare(sharded(model.tpu(), reshard_after_forward=False), reference, llama_batches(world, 3, 5), split,
                      "FSDP2 reshard_after_forward=False")

    def accumulate(model, last):
        model.set_requires_gradient_sync(last)  # reduce-scatter only with the last micro-batch
    reference, model = build_pair(TinyLlama)
    train_and_compare(sharded(model.tpu()), reference, llama_batches(world, 4, 6), split,
                      "FSDP2 gradient accumulation", micro=2, before_micro=accumulate)

    reference, model = build_pair(TinyLlama, meta=True)
    model = sharded(model)
    model.to_empty(device="tpu")
    load_full_state(model, reference)
    train_and_compare(model, reference, llama_batches(world, 3, 7), split, "FSDP2 meta-device init")

    reference, model = build_pair(TinyLlama)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    train_and_compare(sharded(model.tpu(), mp_policy=policy), reference, llama_batches(world, 3, 8), split,
                      "FSDP2 bf16 mixed precision", tol=(5e-2, 5e-2))


def check_dtensor(rank, world):
    """DTensor placements, redistribution, ops and random numbers on tpu."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
    import torch.distributed.tensor as dt
    mesh = init_device_mesh("tpu", (world,))
    a = torch.arange(8.0 * world * 3).reshape(4 * world, 6) / 7
    d = distribute_tensor(a.tpu(), mesh, [Shard(0)])
    assert d.to_local().device.type == "tpu"
    cases = {
        "Shard(0) -> Replicate": d.redistribute(mesh, [Replicate()]),
        "Shard(0) -> Shard(1)": d.redistribute(mesh, [Shard(1)]),
        "Replicate -> Shard(1)": distribute_tensor(a.tpu(), mesh, [Replicate()]).redistribute(mesh, [Shard(1)]),
        "elementwise": (d * 2 + 1).exp().redistribute(mesh, [Replicate()]),
        "matmul": d.T @ d,
        "sum": d.sum(0),
        "view": d.view(2 * world, 12),
        "softmax": d.softmax(-1),
    }
    expected = {"Shard(0) -> Replicate": a, "Shard(0) -> Shard(1)": a, "Replicate -> Shard(1)": a,
                "elementwise": (a * 2 + 1).exp(), "matmul": a.T @ a, "sum": a.sum(0), "view": a.view(2 * world, 12),
                "softmax": a.softmax(-1)}
    for what, value in cases.items():
        torch.testing.assert_close(value.full_tensor().cpu(), expected[what], rtol=1e-5, atol=1e-5, msg=what)
        state.checks += 1
    # Partial: every rank's local value is a summand.
    local = torch.full((3,), float(rank + 1), device="tpu")
    p = DTensor.from_local(local, mesh, [Partial()])
    total = float(sum(range(1, world + 1)))
    torch.testing.assert_close(p.redistribute(mesh, [Replicate()]).to_local().cpu(), torch.full((3,), total))
    torch.testing.assert_close(DTensor.from_local(local.clone(), mesh, [Partial()]).redistribute(mesh, [Shard(0)])
                               .full_tensor().cpu(), torch.full((3,), total))
    state.checks += 2
    # Random numbers through DTensor's RNG tracker: replicated draws agree on every rank,
    # sharded ones differ between shards, and the same seed draws them again.
    def draws():
        torch.manual_seed(5)
        return (dt.rand((4 * world, 4), device_mesh=mesh, placements=[Shard(0)]).full_tensor().cpu(),
                dt.rand((4, 4), device_mesh=mesh, placements=[Replicate()]).to_local().cpu())
    sharded, replicated = draws()
    again = draws()
    assert torch.equal(sharded, again[0]) and torch.equal(replicated, again[1]), "DTensor RNG is not reproducible"
    shards = sharded.chunk(world)
    assert all(not torch.equal(shards[0], s) for s in shards[1:]), "every shard drew the same numbers"
    everyone = [torch.empty_like(replicated) for _ in range(world)]
    dist.all_gather_object(everyone, replicated)
    assert all(torch.equal(everyone[0], r) for r in everyone), "replicated draws differ across ranks"
    state.checks += 3


def check_llama_tensor_parallel(rank, world):
    """Tensor and sequence parallelism (TorchTitan's plan) with loss parallel, training a small Llama."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import parallelize_module
    mesh = init_device_mesh("tpu", (world,))
    reference, model = build_pair(TinyLlama)
    model = parallelize_module(model.tpu(), mesh, tensor_parallel_plan(loss_parallel=True))
    train_and_compare(model, reference, llama_batches(1, 3, 9, per_rank=4), lambda b: b,
                      "tensor + sequence parallel, loss parallel", loss_parallel=True)


def check_2d_mesh(rank, world):
    """FSDP2 over "dp" and tensor parallelism over "tp" on a 2 x (world/2) mesh."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import parallelize_module
    mesh = init_device_mesh("tpu", (2, world // 2), mesh_dim_names=("dp", "tp"))
    assert mesh["tp"].size() == world // 2 and mesh["dp"].size() == 2
    reference, model = build_pair(TinyLlama)
    model = parallelize_module(model.tpu(), mesh["tp"], tensor_parallel_plan(loss_parallel=False))
    for layer in model.layers:
        fully_shard(layer, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    dp_rank = mesh["dp"].get_local_rank()
    train_and_compare(model, reference, llama_batches(2, 3, 10), lambda b: b.chunk(2)[dp_rank], "2-D FSDP2 x TP")


def check_checkpoint(rank, world):
    """torch.distributed.checkpoint saves an FSDP2 model from every rank and loads it into one
    unsharded tpu model on one rank (resharding), equal to the full state dict."""
    import tempfile
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("tpu", (world,))
    reference, model = build_pair(TinyLlama)
    model = fully_shard(model.tpu(), mesh=mesh)
    path = [tempfile.mkdtemp(prefix="tpu_dcp_") if rank == 0 else None]
    dist.broadcast_object_list(path, src=0)
    dcp.save(model.state_dict(), checkpoint_id=path[0])
    full = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    if rank == 0:
        single = TinyLlama().tpu()
        loaded = {k: torch.zeros_like(v) for k, v in single.state_dict().items()}
        dcp.load(loaded, checkpoint_id=path[0], process_group=dist.new_group([0]))
        for name, value in loaded.items():
            assert value.device.type == "tpu"
            torch.testing.assert_close(value.cpu(), full[name], msg=f"checkpoint {name}")
            state.checks += 1
    else:
        dist.new_group([0])  # every rank takes part in creating a group
    dist.barrier()


def check_compile(rank, world):
    """torch.compile(backend="tpu") of steps with functional collectives and with DTensor tensor
    parallelism: the graph breaks at each collective, the parts between are compiled, and the
    results are eager's (and the CPU module's)."""
    import warnings
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.device_mesh import init_device_mesh
    from torch_tpu._compile import compile_metrics, reset_compile_metrics

    def step(x, w):
        y = funcol.all_reduce((x @ w).relu(), "sum", dist.group.WORLD)
        return (y * 2).softmax(-1)
    x = values((4, 8), torch.float32, seed=rank).tpu()
    w = values((8, 8), torch.float32, seed=99).tpu() / 8
    torch._dynamo.reset()
    reset_compile_metrics()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(step, backend="tpu")
        first, second = compiled(x, w), compiled(x, w)
    assert any("breaks at each of them" in str(c.message) for c in caught), [str(c.message) for c in caught]
    metrics = compile_metrics()
    assert metrics["captures"] >= 2 and metrics["replays"] >= 2, metrics
    expected = step(x, w)
    same(first, expected.cpu(), "compiled functional collectives")
    same(second, expected.cpu(), "compiled functional collectives, replayed")

    reference, model = tensor_parallel_mlp(init_device_mesh("tpu", (world,)), nn.GELU)
    compiled = torch.compile(model, backend="tpu")
    inputs = values((4, 8), torch.float32, seed=7) / 4
    for _ in range(2):
        out = compiled(inputs.tpu())
        out.pow(2).sum().backward()
    expected = reference(inputs)
    expected.pow(2).sum().backward()
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5, msg="compiled tensor parallel output")
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad.full_tensor().cpu(), 2 * q.grad, rtol=1e-4, atol=1e-5,
                                   msg=f"compiled tensor parallel gradient {name} (two backward passes)")
        state.checks += 1
    torch._dynamo.reset()


def check_rank_death(rank, world):
    """The last rank dies; the others' next collective raises, naming it, well inside the timeout."""
    import time
    if rank == world - 1:
        os._exit(0)
    start = time.monotonic()
    raises(lambda: dist.all_reduce(torch.ones(2, device="tpu")), "ALLREDUCE failed on the host transport",
           "a collective after a rank died")
    assert time.monotonic() - start < 60, time.monotonic() - start
    state.checks += 1


TRAINING_CHECKS = {
    "ddp": (check_ddp, check_ddp_features),
    "fsdp2": (check_fsdp2,),
    "fsdp2_more": (check_fsdp2_variants, check_checkpoint),
    "tp": (check_tensor_parallel, check_dtensor, check_llama_tensor_parallel),
    "2d": (check_2d_mesh,),
    "compile": (check_compile,),
}


def run_rank(rank, local_rank, what, init_args):
    """Everything `what` names, as one rank; returns its "ok" line."""
    state.refused = []
    torch.tpu.set_device(local_rank)
    dist.init_process_group(**init_args)  # no backend named: cpu -> gloo, tpu -> tpu
    world = dist.get_world_size()
    assert torch.tpu.current_device() == local_rank
    assert dist.get_backend_config() == "cpu:gloo,tpu:tpu", dist.get_backend_config()
    state.transport = dist.group.WORLD._get_backend(torch.device("tpu")).transport
    if "rank_death" in what:
        check_rank_death(rank, world)
        return f"rank {rank} ok: {state.checks} checks over the {state.transport} transport\n"
    if "collectives" in what:
        gloo = dist.new_group(backend="gloo")  # the CPU reference
        check_collectives(rank, dist.group.WORLD, gloo)
        evens = [r for r in range(world) if r % 2 == 0]
        evens_tpu, evens_cpu = dist.new_group(evens), dist.new_group(evens, backend="gloo")
        if rank % 2 == 0:
            check_collectives(rank, evens_tpu, evens_cpu, tag="subgroup ")
        check_functional_collectives(rank, gloo)
        check_errors(rank)
    for name, checks in TRAINING_CHECKS.items():
        if name in what:
            for check in checks:
                check(rank, world)
    dist.barrier()
    dist.destroy_process_group()
    refused = ", ".join(state.refused) or "none"
    return f"rank {rank} ok: {state.checks} checks over the {state.transport} transport; refused on both devices: {refused}\n"


def run_threads(n, what):
    """n ranks as threads of this process, rank r on tpu:r."""
    from torch.testing._internal.distributed.multi_threaded_pg import _install_threaded_pg
    _install_threaded_pg()  # each thread its own default group, as in PyTorch's threaded tests
    torch._C._distributed_c10d._set_thread_isolation_mode(True)
    store = dist.HashStore()
    lines, errors = [None] * n, []

    def rank_thread(rank):
        try:
            lines[rank] = run_rank(rank, rank, what, dict(rank=rank, world_size=n, store=store))
        except BaseException:  # noqa: B036 - reported below, after every thread ends
            import traceback
            errors.append(f"rank {rank}: {traceback.format_exc()}")

    threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit("\n".join(errors))
    sys.stdout.write("".join(lines))


def main():
    what = sys.argv[1:]
    if what[0] == "--threads":
        run_threads(int(what[1]), what[2:])
        return
    line = run_rank(int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), what, {})
    sys.stdout.write(line)  # one write, so that the ranks' lines do not interleave
    sys.stdout.flush()
    if "rank_death" in what:
        os._exit(0)  # the group lost a rank: nothing is left to shut down in order


if __name__ == "__main__":
    main()
