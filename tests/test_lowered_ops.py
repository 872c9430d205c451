"""Every natively lowered op family against CPU: values, dtype, shape, gradients, in both eager modes.

Each case also asserts that nothing it ran fell back to the CPU, so these tests
measure native coverage, not just correctness.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_tpu

MODES = ["debug", "strict"]
FLOAT_TOL = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (1.6e-2, 1e-2), torch.float16: (1e-3, 1e-3)}


@pytest.fixture(params=MODES)
def mode(request):
    with torch_tpu.eager_mode(request.param):
        yield request.param


def make(shape, dtype, layout="contiguous", seed=0):
    g = torch.Generator().manual_seed(seed)
    if layout == "transposed" and len(shape) >= 2:
        base = make(tuple(reversed(shape)), dtype, seed=seed)
        return base.permute(*reversed(range(len(shape))))
    if layout == "strided" and len(shape) >= 1:
        wide = list(shape)
        wide[-1] *= 2
        return make(tuple(wide), dtype, seed=seed)[..., ::2]
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(-8, 8, shape, generator=g, dtype=dtype)
    return torch.randn(shape, generator=g).to(dtype)


def to_tpu(x):
    """The same strides on tpu: copy the base, then take the same view."""
    if x.is_contiguous():
        return x.tpu()
    t = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="tpu")
    t.copy_(x)
    return t


def compare(tpu_out, cpu_out, dtype):
    rtol, atol = FLOAT_TOL.get(dtype, (0, 0))
    if isinstance(cpu_out, (tuple, list)):
        for a, b in zip(tpu_out, cpu_out):
            compare(a, b, dtype)
        return
    assert tpu_out.device.type == "tpu"
    assert tpu_out.dtype == cpu_out.dtype
    assert tpu_out.shape == cpu_out.shape
    torch.testing.assert_close(tpu_out.cpu(), cpu_out, rtol=rtol, atol=atol, equal_nan=True)


def run_case(fn, inputs, dtype, grad):
    cpu_in = [x.clone().requires_grad_(grad) if isinstance(x, torch.Tensor) else x for x in inputs]
    tpu_in = [to_tpu(x).detach().requires_grad_(grad) if isinstance(x, torch.Tensor) else x for x in inputs]
    before = dict(torch_tpu.metrics()["cpu_fallbacks"])
    cpu_out, tpu_out = fn(*cpu_in), fn(*tpu_in)
    compare(tpu_out, cpu_out, dtype)
    if grad:
        up = torch.randn(cpu_out.shape, generator=torch.Generator().manual_seed(3)).to(cpu_out.dtype)
        cpu_out.backward(up)
        tpu_out.backward(up.tpu())
        for a, b in zip(tpu_in, cpu_in):
            if isinstance(b, torch.Tensor) and b.grad is not None:
                compare(a.grad, b.grad, dtype)
    return {k: v for k, v in torch_tpu.metrics()["cpu_fallbacks"].items() if before.get(k) != v}


FLOATS = [torch.float32, torch.bfloat16, torch.float16]
INTS = [torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool]

UNARY_FLOAT = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 1),
    "sqrt": lambda x: torch.sqrt(x.abs() + 1), "rsqrt": lambda x: torch.rsqrt(x.abs() + 1), "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos, "reciprocal": lambda x: torch.reciprocal(x + 10),
    "erf": torch.erf, "log1p": lambda x: torch.log1p(x.abs()), "expm1": torch.expm1, "relu": F.relu,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
    "clamp": lambda x: x.clamp(-0.5, 0.7), "pow2": lambda x: x ** 2, "pow3": lambda x: x.pow(3),
}
NO_GRAD = {"floor", "ceil", "round", "trunc"}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_float(mode, name, dtype, layout):
    x = make((3, 5), dtype, layout)
    grad = dtype == torch.float32 and name not in NO_GRAD
    assert run_case(UNARY_FLOAT[name], [x], dtype, grad) == {}


@pytest.mark.parametrize("shape", [(), (0, 3), (7,)])
def test_unary_edge_shapes(mode, shape):
    x = make(shape, torch.float32)
    for name in ["exp", "relu", "neg", "tanh"]:
        assert run_case(UNARY_FLOAT[name], [x], torch.float32, False) == {}


BINARY = {
    "add": lambda a, b: a + b, "add_alpha": lambda a, b: torch.add(a, b, alpha=2), "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b, "div": lambda a, b: a / (b.abs() + 1), "maximum": torch.maximum,
    "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
    "gt": torch.gt, "ge": torch.ge, "where": lambda a, b: torch.where(a > b, a, b),
    "scalar_mul": lambda a, b: a * 1.5 + b, "scalar_cmp": lambda a, b: (a > 0.25) & (b < 1),
}


@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 1), (1, 5)), ((3, 4, 5), (5,)), ((), (2, 3))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.int64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(mode, name, dtype, shapes):
    if name == "div" and not dtype.is_floating_point:
        pytest.skip("abs()+1 keeps ints; true division covered by test_int_true_division")
    a, b = make(shapes[0], dtype, seed=1), make(shapes[1], dtype, seed=2)
    grad = dtype == torch.float32 and name in {"add", "add_alpha", "sub", "mul", "div", "where", "scalar_mul"}
    assert run_case(BINARY[name], [a, b], dtype, grad) == {}


def test_int_true_division(mode):
    a, b = make((5,), torch.int64), make((5,), torch.int64, seed=4).abs() + 1
    assert run_case(lambda x, y: x / y, [a, b], torch.float32, False) == {}


@pytest.mark.parametrize("name", ["and", "or", "xor", "not", "land", "lor", "lxor", "lnot"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
def test_bitwise_logical(mode, name, dtype):
    fns = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "not": lambda a, b: ~a,
           "land": torch.logical_and, "lor": torch.logical_or, "lxor": torch.logical_xor,
           "lnot": lambda a, b: torch.logical_not(a)}
    assert run_case(fns[name], [make((3, 4), dtype, seed=1), make((3, 4), dtype, seed=2)], dtype, False) == {}


REDUCTIONS = {
    "sum": lambda x: x.sum(), "sum_dim": lambda x: x.sum(1), "sum_keep": lambda x: x.sum((0, 2), keepdim=True),
    "mean": lambda x: x.mean(-1), "amax": lambda x: x.amax(1), "amin": lambda x: x.amin((0, 1)),
    "max": lambda x: x.max(), "min": lambda x: x.min(), "softmax": lambda x: torch.softmax(x, 1),
    "log_softmax": lambda x: torch.log_softmax(x, -1),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(mode, name, dtype, layout):
    x = make((3, 4, 5), dtype, layout)
    grad = dtype == torch.float32 and name not in {"amax", "amin", "max", "min"}
    assert run_case(REDUCTIONS[name], [x], dtype, grad) == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("row", [63, 64, 1024, 65536, 65537])
def test_row_sums_of_every_length(mode, row, dtype):
    """Float32 row sums from 64 to 65536 elements run as products with ones: the
    same sums as CPU (NaN and inf included) on both sides of those bounds, and
    float64 ones as reductions."""
    x = make((3, 2, row), dtype)
    x[1, 0, 5] = float("nan")
    x[2, 1, 7] = float("inf")
    tol = {"rtol": 1e-5, "atol": 1e-6 * row} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-13 * row}
    for fn in [lambda a: (a * 2).sum(-1), lambda a: a.mean(2, keepdim=True), lambda a: (a + 1).var(-1),
               lambda a: a.sum((1, 2))]:
        out = fn(x.tpu())
        assert out.device.type == "tpu" and out.dtype == dtype
        torch.testing.assert_close(out.cpu(), fn(x), equal_nan=True, **tol)


@pytest.mark.parametrize("mode", MODES + ["fused"], indirect=True)
@pytest.mark.parametrize("lead", [(32, 1024), (33, 1024), (8, 256)])
def test_column_sums_of_computed_values(mode, lead):
    """Sums over leading dimensions of products and upcasts (which the CPU backend
    sums through its reduction library once they are large enough, with a
    dimension over 32) agree with CPU, NaN and inf included; in fused mode the
    product is computed in the same program."""
    x = make(lead + (64,), torch.float32)
    x[1, 3, 5] = float("nan")
    x[2, 4, 7] = float("inf")
    w = make((64,), torch.float32, seed=1)
    n = lead[0] * lead[1]
    tol = {"rtol": 1e-5, "atol": 1e-6 * n}
    for fn in [lambda a, b: (a * b).sum((0, 1)), lambda a, b: (a * b).reshape(n, 64).sum(0),
               lambda a, b: (a * b).sum(1), lambda a, b: (a * b).transpose(0, 2).sum((1, 2)),
               lambda a, b: a.bfloat16().float().sum((0, 1)), lambda a, b: (a * b).double().sum((0, 1))]:
        out = fn(x.tpu(), w.tpu())
        torch.testing.assert_close(out.cpu(), fn(x, w), equal_nan=True, **tol)


def test_column_sum_of_product_goes_to_the_library():
    """The sum of a large product over a long leading dimension reads the product
    as its own value (see builder.cpp: summed_by_library); a short one stays fused."""
    x, w = torch.randn(8, 256, 64).tpu(), torch.randn(64).tpu()
    with torch_tpu.eager_mode("fused"):
        (x * w).sum((0, 1)).cpu()
        assert "stablehlo.reduce_precision" in torch_tpu.last_flushed_program()
        (x * w).sum(0).cpu()
        assert "stablehlo.reduce_precision" not in torch_tpu.last_flushed_program()


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
def test_integer_reductions(mode, dtype):
    x = make((4, 6), dtype)
    for fn in [lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.any(), lambda t: t.all(1), lambda t: t.amax(1)]:
        assert run_case(fn, [x], dtype, False) == {}


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_family(mode, dtype):
    a, b = make((4, 6), dtype, seed=1), make((6, 3), dtype, seed=2)
    bias = make((3,), dtype, seed=3)
    batch_a, batch_b = make((2, 4, 6), dtype, seed=4), make((2, 6, 3), dtype, seed=5)
    grad = dtype == torch.float32
    FLOAT_TOL[torch.float32] = (1e-4, 1e-4)
    try:
        assert run_case(torch.mm, [a, b], dtype, grad) == {}
        assert run_case(lambda x, y, z: torch.addmm(z, x, y, beta=0.5, alpha=2), [a, b, bias], dtype, grad) == {}
        assert run_case(torch.bmm, [batch_a, batch_b], dtype, grad) == {}
        assert run_case(lambda x, w, z: F.linear(x, w.t(), z), [a, b, bias], dtype, grad) == {}
        assert run_case(torch.matmul, [batch_a, b], dtype, grad) == {}
    finally:
        FLOAT_TOL[torch.float32] = (1e-5, 1e-5)


def test_nn_ops(mode):
    x = make((4, 6), torch.float32)
    tgt = torch.tensor([0, 5, 2, 2])
    w = make((6,), torch.float32, seed=2).abs() + 0.5
    assert run_case(lambda a: F.cross_entropy(a, tgt.to(a.device)), [x], torch.float32, True) == {}
    assert run_case(lambda a: F.cross_entropy(a, tgt.to(a.device), ignore_index=2, reduction="sum"), [x],
                    torch.float32, True) == {}
    assert run_case(lambda a, c: F.nll_loss(torch.log_softmax(a, 1), tgt.to(a.device), weight=c.detach()),
                    [x, w], torch.float32, True) == {}
    assert run_case(lambda a, b: F.mse_loss(a, b), [x, make((4, 6), torch.float32, seed=3)], torch.float32, True) == {}
    assert run_case(lambda a, g, b: F.layer_norm(a, (6,), g, b), [x, w, make((6,), torch.float32, seed=4)],
                    torch.float32, True) == {}
    emb = make((10, 3), torch.float32)
    ids = torch.tensor([[1, 2, 1], [9, 0, 1]])
    assert run_case(lambda e: F.embedding(ids.to(e.device), e), [emb], torch.float32, True) == {}
    assert run_case(lambda a: a.index_select(1, torch.tensor([0, 5, 3]).to(a.device)), [x], torch.float32, False) == {}
    assert run_case(lambda a, b: torch.cat([a, b], 1), [x, make((4, 2), torch.float32)], torch.float32, True) == {}
    assert run_case(lambda a: a.masked_fill(a > 0, -1.0), [x], torch.float32, False) == {}


@pytest.mark.parametrize("dim", [0, 2])
def test_weight_norm(mode, dim):
    # torch._weight_norm takes the fused kernel (and its backward) for the first or last dim.
    v = make((5, 3, 4), torch.float32)
    g_shape = [1, 1, 1]
    g_shape[dim] = v.shape[dim]
    g = make(tuple(g_shape), torch.float32, seed=2).abs() + 0.5
    assert run_case(lambda a, b: torch._weight_norm(a, b, dim), [v, g], torch.float32, True) == {}


def test_histc_of_integers_counts_as_on_cuda(mode):
    x = torch.tensor([0, 1, 1, 3, 7, 2, 3, 3], dtype=torch.int32)
    out = torch.histc(x.tpu(), bins=4, min=0, max=3)
    assert out.dtype == torch.int32
    assert out.cpu().tolist() == torch.histc(x.float(), bins=4, min=0, max=3).int().tolist()


def test_arg_reductions_and_moments(mode):
    x = make((4, 6, 5), torch.float32)
    x[0, :, 0] = 1.0  # ties: the first index wins
    nan = x.clone()
    nan[1, 2, 3] = float("nan")  # NaN wins, as on CPU
    for fn in [lambda a: a.max(1).indices, lambda a: a.min(-1, keepdim=True).indices, lambda a: a.argmax(),
               lambda a: a.argmin(1)]:
        assert run_case(fn, [x], torch.float32, False) == {}
        assert run_case(fn, [nan], torch.float32, False) == {}
    for fn in [lambda a: a.max(1).values, lambda a: a.var(1), lambda a: a.std((0, 2), correction=0),
               lambda a: a.std()]:
        assert run_case(fn, [x], torch.float32, True) == {}
    assert run_case(lambda a: a.argmax(1), [torch.tensor([[3, 1, 3], [0, 0, 0]])], torch.int64, False) == {}


@pytest.mark.parametrize("p", [2, 1, float("inf"), -float("inf"), 0, 3])
def test_vector_norm(mode, p):
    x = make((4, 6), torch.float32)
    assert run_case(lambda a: torch.linalg.vector_norm(a, p), [x], torch.float32, p in (2, 3)) == {}
    assert run_case(lambda a: a.norm(p, dim=1, keepdim=True), [x], torch.float32, False) == {}


def test_gather_scatter(mode):
    x = make((4, 6, 5), torch.float32)
    index = torch.randint(0, 6, (4, 3, 5), generator=torch.Generator().manual_seed(5))
    assert run_case(lambda a: a.gather(1, index.to(a.device)), [x], torch.float32, True) == {}
    idx = torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])
    assert run_case(lambda s: torch.zeros(3, 4, device=s.device).scatter_add(0, idx.to(s.device), s),
                    [make((2, 4), torch.float32)], torch.float32, False) == {}


def test_creation(mode):
    for args in [(10,), (2, 11, 3), (0.5, 3.2, 0.25), (5, -3, -2)]:
        compare(torch.arange(*args, device="tpu"), torch.arange(*args), torch.float32)
    for dtype in ALL:
        compare(torch.zeros(2, 3, dtype=dtype, device="tpu"), torch.zeros(2, 3, dtype=dtype), dtype)
        compare(torch.ones(2, 3, dtype=dtype, device="tpu"), torch.ones(2, 3, dtype=dtype), dtype)
        compare(torch.full((4,), 3, dtype=dtype, device="tpu"), torch.full((4,), 3, dtype=dtype), dtype)
        e = torch.empty(3, 2, dtype=dtype, device="tpu")
        assert e.shape == (3, 2) and e.dtype == dtype


def test_dropout(mode):
    torch.tpu.manual_seed(0)
    x = torch.ones(4000, device="tpu")
    y = F.dropout(x, 0.25, training=True).cpu()
    assert set(y.unique().tolist()) <= {0.0, torch.tensor(1 / 0.75).item()}
    assert abs((y == 0).float().mean().item() - 0.25) < 0.03
    assert torch.equal(F.dropout(x, 0.25, training=False).cpu(), x.cpu())


def test_inplace_ops_on_views(mode):
    base = make((4, 6), torch.float32)
    t = to_tpu(base)
    for op in [lambda v: v.add_(1.5), lambda v: v.mul_(2), lambda v: v.clamp_(-1, 1), lambda v: v.exp_(),
               lambda v: v.zero_(), lambda v: v.fill_(3)]:
        op(t[1:3, ::2])
        op(base[1:3, ::2])
        torch.testing.assert_close(t.cpu(), base)
        op(t.t()[2])
        op(base.t()[2])
        torch.testing.assert_close(t.cpu(), base)


def test_inplace_type_errors_like_pytorch():
    i = torch.ones(3, dtype=torch.int64, device="tpu")
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.add_(torch.ones(3, device="tpu") * 0.5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.ones(3, device="tpu").add_(torch.ones(2, 3, device="tpu"))


FOREACH = {
    "add_scalar": lambda xs, ys, zs: torch._foreach_add_(xs, 0.5),
    "add_list": lambda xs, ys, zs: torch._foreach_add_(xs, ys, alpha=-0.3),
    "sub_list": lambda xs, ys, zs: torch._foreach_sub_(xs, ys, alpha=2),
    "mul_scalar": lambda xs, ys, zs: torch._foreach_mul_(xs, 0.9),
    "mul_list": lambda xs, ys, zs: torch._foreach_mul_(xs, ys),
    "div_scalarlist": lambda xs, ys, zs: torch._foreach_div_(xs, [2.0, 3.0, 4.0]),
    "lerp": lambda xs, ys, zs: torch._foreach_lerp_(xs, ys, 0.1),
    "addcmul": lambda xs, ys, zs: torch._foreach_addcmul_(xs, ys, zs, value=0.01),
    "addcdiv": lambda xs, ys, zs: torch._foreach_addcdiv_(xs, ys, [z.abs() + 1 for z in zs], value=-0.1),
    "addcdiv_scalarlist": lambda xs, ys, zs: torch._foreach_addcdiv_(xs, ys, [z.abs() + 1 for z in zs], [0.1, 0.2, 0.3]),
    "sqrt_": lambda xs, ys, zs: torch._foreach_sqrt_([x.abs_() for x in xs]),
}


@pytest.mark.parametrize("name", sorted(FOREACH))
def test_foreach_ops_are_native_and_match(mode, name):
    shapes = [(3, 4), (5,), (2, 2, 2)]
    cpu = [[make(s, torch.float32, seed=10 * k + i) for i, s in enumerate(shapes)] for k in range(3)]
    tpu = [[t.tpu() for t in group] for group in cpu]
    before = dict(torch_tpu.metrics()["cpu_fallbacks"])
    FOREACH[name](*cpu)
    FOREACH[name](*tpu)
    assert torch_tpu.metrics()["cpu_fallbacks"] == before
    for a, b in zip(tpu[0], cpu[0]):
        torch.testing.assert_close(a.cpu(), b)
    out = torch._foreach_sqrt([t.abs() for t in tpu[1]])
    for a, b in zip(out, torch._foreach_sqrt([t.abs() for t in cpu[1]])):
        torch.testing.assert_close(a.cpu(), b)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_margin_losses(mode, reduction):
    x = make((5, 7), torch.float32)
    tgt = torch.tensor([0, 6, 3, 3, 1])
    w = make((7,), torch.float32, seed=2).abs() + 0.5
    for p in (1, 2):
        assert run_case(lambda a: F.multi_margin_loss(a, tgt.to(a.device), p=p, margin=0.7, weight=w.to(a.device),
                                                      reduction=reduction), [x], torch.float32, True) == {}
    assert run_case(lambda a: F.multi_margin_loss(a, tgt[1].to(a.device), reduction=reduction), [x[0]],
                    torch.float32, True) == {}
    # Each row's targets end at its first negative entry; repeated targets count twice, as on CPU.
    labels = torch.tensor([[3, 0, -1, 1, 1, 1, 1], [1, 2, 3, 4, -1, 0, 0], [0, 0, 5, -1, 2, 2, 2], [-1] * 7,
                           [6, 5, 4, 3, 2, 1, 0]])
    assert run_case(lambda a: F.multilabel_margin_loss(a, labels.to(a.device), reduction=reduction), [x],
                    torch.float32, True) == {}


def test_class_targets_out_of_range_raise_like_an_index():
    x = torch.randn(3, 4, device="tpu")
    with pytest.raises(IndexError, match="nll_loss_forward: target out of range for 4 classes"):
        F.cross_entropy(x, torch.tensor([0, 4, 1], device="tpu")).item()
    assert F.cross_entropy(x, torch.tensor([0, -100, 1], device="tpu")).isfinite().item()  # ignore_index
    with pytest.raises(IndexError, match="multi_margin_loss: target out of range"):
        F.multi_margin_loss(x, torch.tensor([0, 1, -1], device="tpu")).item()
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multilabel_margin_loss(x, torch.tensor([[0, 7, -1, 0]] * 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fractional_max_pool(mode, dtype):
    # Windows placed by the random samples exactly as PyTorch's CPU kernel places them.
    x = make((2, 3, 9, 11), dtype)
    s2 = torch.rand(2, 3, 2, generator=torch.Generator().manual_seed(1)).to(dtype)
    assert run_case(lambda a: F.fractional_max_pool2d(a, (2, 3), output_size=(4, 5), _random_samples=s2.to(a.device)),
                    [x], dtype, True) == {}
    y = make((2, 7, 8, 9), dtype)  # no batch dim; samples for more than one batch use the first, as on CPU
    s3 = torch.rand(3, 2, 3, generator=torch.Generator().manual_seed(2)).to(dtype)
    assert run_case(lambda a: F.fractional_max_pool3d(a, 2, output_size=(3, 4, 5), _random_samples=s3.to(a.device)),
                    [y], dtype, True) == {}


@pytest.mark.parametrize("targets", ["padded", "concatenated"])
def test_ctc_loss(mode, targets):
    # Samples of different input and target lengths, an empty target, a blank other than 0.
    g = torch.Generator().manual_seed(0)
    log_probs = torch.randn(12, 4, 6, generator=g).log_softmax(2)
    labels = torch.randint(0, 5, (4, 4), generator=g)
    input_lengths, target_lengths = [12, 12, 7, 9], [4, 2, 0, 1]
    if targets == "concatenated":
        labels = torch.cat([labels[n, :target_lengths[n]] for n in range(4)])
    for reduction in ("none", "mean", "sum"):
        assert run_case(lambda lp: F.ctc_loss(lp, labels.to(lp.device), input_lengths, target_lengths, blank=5,
                                              reduction=reduction), [log_probs], torch.float32, True) == {}
    # Lengths as tensors, and an alignment that cannot exist (zeroed by zero_infinity).
    short = torch.tensor([3, 12, 7, 9])
    assert run_case(lambda lp: F.ctc_loss(lp, labels.to(lp.device), short.to(lp.device), torch.tensor(target_lengths),
                                          blank=5, reduction="none", zero_infinity=True),
                    [log_probs], torch.float32, True) == {}
