"""Views are metadata over shared storage, exactly as on CPU: every sequence of view-taking,
in-place writes through views and through bases is replayed on CPU and compared."""
import pytest
import torch

from conftest import ALL_DTYPES, LAYOUTS, assert_close_cpu, dtype_id, make_input, make_pair, make_tensor

BASE_SHAPE = (4, 6)

# name -> (view of a (4, 6) base, writable through the view)
VIEWS = {
    "view": (lambda b: b.view(2, 12), True),
    "view_3d": (lambda b: b.view(2, 2, 6), True),
    "reshape": (lambda b: b.reshape(3, 8), True),
    "flatten": (lambda b: b.flatten(), True),
    "permute": (lambda b: b.view(2, 2, 6).permute(2, 0, 1), True),
    "transpose": (lambda b: b.transpose(0, 1), True),
    "t": (lambda b: b.t(), True),
    "expand": (lambda b: b[1:2].expand(3, 6), False),
    "expand_new_dim": (lambda b: b[2].expand(5, 6), False),
    "squeeze": (lambda b: b[1:2].squeeze(0), True),
    "unsqueeze": (lambda b: b.unsqueeze(1), True),
    "narrow": (lambda b: b.narrow(1, 2, 3), True),
    "select": (lambda b: b.select(1, 3), True),
    "select_row": (lambda b: b[2], True),
    "slice": (lambda b: b[1:3], True),
    "slice_step": (lambda b: b[1:, ::2], True),
    "slice_neg": (lambda b: b[-2:, 1:-1], True),
    "diagonal": (lambda b: b.diagonal(), True),
    "unfold": (lambda b: b.unfold(1, 3, 2), False),
    "as_strided": (lambda b: b.as_strided((3, 3), (6, 2), 1), True),
    "chain": (lambda b: b.t()[1:5].narrow(1, 1, 2), True),
    "ellipsis_none": (lambda b: b[None, ..., 2:4], True),
}


def _arange_like(v):
    return (torch.arange(v.numel(), dtype=torch.float32) - 3).reshape(v.shape).to(v.dtype).to(v.device)


# name -> in-place write through a tensor
WRITES = {
    "add_": lambda v: v.add_(1.5),
    "add_tensor_alpha": lambda v: v.add_(_arange_like(v), alpha=0.5),
    "mul_self": lambda v: v.mul_(v),
    "fill_": lambda v: v.fill_(-2.0),
    "zero_": lambda v: v.zero_(),
    "copy_": lambda v: v.copy_(_arange_like(v)),
    "setitem": lambda v: v.__setitem__(..., 3.0),
    "clamp_": lambda v: v.clamp_(-0.5, 0.5),
    "exp_": lambda v: v.exp_(),
    "masked_fill_": lambda v: v.masked_fill_(v > 0, 9.0),
}


def _both(fn, cpu, tpu):
    return fn(cpu), fn(tpu)


def _check(tpu, cpu, what):
    assert_close_cpu(tpu, cpu, msg=f"{what}: ")


WRITABLE_VIEWS = sorted(name for name, (_, writable) in VIEWS.items() if writable)


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("view", WRITABLE_VIEWS)
def test_write_through_view_changes_base(mode, view, write):
    view_fn, _ = VIEWS[view]
    base_c, base_t = make_pair(BASE_SHAPE, seed=1)
    v_c, v_t = _both(view_fn, base_c, base_t)
    _check(v_t, v_c, "view")
    WRITES[write](v_c)
    WRITES[write](v_t)
    _check(v_t, v_c, "view after write")
    _check(base_t, base_c, "base after write through view")


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_write_to_base_shows_in_view(mode, view):
    view_fn, _ = VIEWS[view]
    base_c, base_t = make_pair(BASE_SHAPE, seed=2)
    v_c, v_t = _both(view_fn, base_c, base_t)
    for step in [lambda b: b.mul_(3), lambda b: b[1].fill_(7), lambda b: b[:, 4:].add_(-1), lambda b: b.t()[0].zero_()]:
        step(base_c)
        step(base_t)
        _check(v_t, v_c, "view after writing the base")
    _check(base_t, base_c, "base")


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_view_metadata_matches_cpu(view):
    view_fn, _ = VIEWS[view]
    base_c, base_t = make_pair(BASE_SHAPE, seed=3)
    v_c, v_t = _both(view_fn, base_c, base_t)
    assert v_t.shape == v_c.shape
    assert v_t.stride() == v_c.stride()
    assert v_t.storage_offset() == v_c.storage_offset()
    assert v_t.is_contiguous() == v_c.is_contiguous()
    assert v_t.untyped_storage().data_ptr() == base_t.untyped_storage().data_ptr()
    assert v_t.data_ptr() - base_t.data_ptr() == v_c.data_ptr() - base_c.data_ptr()
    assert v_t._base is base_t


def test_views_of_views_chain_of_writes(mode):
    base_c, base_t = make_pair((2, 3, 8), seed=4)
    steps = [
        lambda b: b[0].t()[2:5].mul_(2),
        lambda b: b.view(6, 8)[::2, 1::3].add_(1),
        lambda b: b.permute(2, 0, 1)[3].fill_(0.25),
        lambda b: b[1, :, ::4].copy_(b[0, :, 1::4]),
        lambda b: b.view(-1)[5:40:7].neg_(),
    ]
    for i, step in enumerate(steps):
        step(base_c)
        step(base_t)
        _check(base_t, base_c, f"step {i}")


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_slice_assignment(mode, dtype):
    cache_c, cache_t = make_pair((3, 8, 4), dtype, seed=5)
    for n, seed in [(2, 6), (5, 7), (8, 8)]:
        y = make_tensor((3, n, 4), dtype, seed=seed)
        cache_c[:, :n] = y
        cache_t[:, :n] = y.tpu()
        _check(cache_t, cache_c, f"x[:, :{n}] = y")
    cache_c[1, 2:4] = cache_c[0, :2].clone()
    cache_t[1, 2:4] = cache_t[0, :2].clone()
    _check(cache_t, cache_c, "tpu-to-tpu slice assignment")
    cache_c[:, -1] = True if dtype == torch.bool else 1
    cache_t[:, -1] = True if dtype == torch.bool else 1
    _check(cache_t, cache_c, "scalar slice assignment")


def test_slice_assignment_broadcasts(mode):
    x_c, x_t = make_pair((4, 6), seed=9)
    row = make_tensor((6,), seed=10)
    x_c[1:3] = row
    x_t[1:3] = row.tpu()
    col = make_tensor((4, 1), seed=11)
    x_c[:, ::2] = col
    x_t[:, ::2] = col.tpu()
    _check(x_t, x_c, "broadcast assignment")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=dtype_id)
def test_kv_cache_index_copy(mode, dtype):
    batch, heads, max_len, dim = 2, 3, 8, 4
    k_c = torch.zeros(batch, heads, max_len, dim, dtype=dtype)
    k_t = k_c.tpu()
    for pos in range(5):
        new = make_tensor((batch, heads, 1, dim), dtype, seed=20 + pos)
        idx = torch.tensor([pos])
        k_c.index_copy_(2, idx, new)
        k_t.index_copy_(2, idx.tpu(), new.tpu())
        _check(k_t[:, :, : pos + 1], k_c[:, :, : pos + 1], f"read back at {pos}")
        q = make_tensor((batch, heads, 1, dim), dtype, seed=40 + pos)
        scores_c = q @ k_c[:, :, : pos + 1].transpose(-1, -2)
        scores_t = q.tpu() @ k_t[:, :, : pos + 1].transpose(-1, -2)
        assert_close_cpu(scores_t, scores_c, kind="matmul")
    # several positions at once, in a view of the cache
    idx = torch.tensor([6, 5])
    block = make_tensor((heads, 2, dim), dtype, seed=60)
    k_c[1].index_copy_(1, idx, block)
    k_t[1].index_copy_(1, idx.tpu(), block.tpu())
    _check(k_t, k_c, "index_copy_ into a view")


def test_kv_cache_index_put(mode):
    cache_c = torch.zeros(2, 6, 4)
    cache_t = cache_c.tpu()
    for pos in range(3):
        new = make_tensor((2, 4), seed=pos)
        cache_c[:, pos] = new
        cache_t[:, pos] = new.tpu()
    rows = torch.tensor([0, 1, 1])
    cols = torch.tensor([5, 4, 5])
    vals = make_tensor((3, 4), seed=9)
    cache_c.index_put_((rows, cols), vals)
    cache_t.index_put_((rows.tpu(), cols.tpu()), vals.tpu())
    _check(cache_t, cache_c, "index_put_")
    cache_c.index_put_((rows, cols), vals, accumulate=True)
    cache_t.index_put_((rows.tpu(), cols.tpu()), vals.tpu(), accumulate=True)
    _check(cache_t, cache_c, "index_put_ accumulate")


def test_set_to_other_tensor(mode):
    a_c, a_t = make_pair((3, 4), seed=1)
    b_c, b_t = make_pair((2, 5), seed=2)
    a_c.set_(b_c)
    a_t.set_(b_t)
    _check(a_t, a_c, "after set_")
    assert a_t.untyped_storage().data_ptr() == b_t.untyped_storage().data_ptr()
    a_c.add_(1)
    a_t.add_(1)
    _check(b_t, b_c, "set_ aliases")


def test_set_storage_with_geometry(mode):
    src_c, src_t = make_pair((12,), seed=3)
    x_c = torch.empty(0)
    x_t = torch.empty(0, device="tpu")
    x_c.set_(src_c.untyped_storage(), 2, (3, 3), (3, 1))
    x_t.set_(src_t.untyped_storage(), 2, (3, 3), (3, 1))
    assert x_t.stride() == x_c.stride() and x_t.storage_offset() == 2
    _check(x_t, x_c, "set_(storage, offset, size, stride)")
    x_c.mul_(-1)
    x_t.mul_(-1)
    _check(src_t, src_c, "write through set_ tensor")


def test_set_empty(mode):
    x_t = make_pair((3,), seed=1)[1]
    x_t.set_()
    assert x_t.shape == (0,) and x_t.is_tpu


def test_resize(mode):
    x_c, x_t = make_pair((12,), seed=4)
    x_c.resize_(3, 4)
    x_t.resize_(3, 4)
    _check(x_t, x_c, "shrink-to-same-numel")
    x_c.resize_(2, 3)
    x_t.resize_(2, 3)
    _check(x_t, x_c, "shrink")
    x_c.resize_(5, 4)
    x_t.resize_(5, 4)
    assert x_t.shape == x_c.shape and x_t.stride() == x_c.stride()
    _check(x_t.view(-1)[:6], x_c.view(-1)[:6], "grow keeps the prefix")
    x_c.fill_(2)
    x_t.fill_(2)
    _check(x_t, x_c, "write after grow")
    e = torch.empty(0, device="tpu")
    e.resize_(4).copy_(torch.arange(4.0))
    assert_close_cpu(e, torch.arange(4.0))


def test_resize_as_and_out_resize(mode):
    a_c, a_t = make_pair((2, 2), seed=1)
    b_c, b_t = make_pair((3, 5), seed=2)
    a_c.resize_as_(b_c).copy_(b_c)
    a_t.resize_as_(b_t).copy_(b_t)
    _check(a_t, a_c, "resize_as_")
    out_t = torch.empty(0, device="tpu")
    torch.add(b_t, 1, out=out_t)
    assert_close_cpu(out_t, b_c + 1)


@pytest.mark.parametrize("args", [((3, 4), (2, 1), 0), ((2, 3), (1, 4), 1), ((4,), (3,), 2), ((2, 2, 2), (6, 1, 3), 0)],
                         ids=["overlap", "offset", "1d_step", "3d"])
def test_as_strided_read(mode, args):
    x_c, x_t = make_pair((16,), seed=6)
    assert_close_cpu(x_t.as_strided(*args), x_c.as_strided(*args), check_stride=True)
    assert_close_cpu(x_t.as_strided(*args) * 2, x_c.as_strided(*args) * 2)


# Strided views as models make them: heads of a fused qkv projection (with and
# without an offset), a column, every other row of a transposed block; views no
# box fits (strides that do not divide, rows reaching past the storage's end);
# and one with a broadcast dim.
STRIDED_VIEWS = {
    "qkv_head": ((2, 4, 8, 2), (8 * 24, 2, 24, 1), 16),
    "column": ((6,), (5,), 3),
    "rows_step_transposed": ((4, 3), (1, 10), 2),
    "stride_not_dividing": ((3, 2), (7, 2), 5),
    "rows_past_end": ((2, 2), (200, 1), 180),
    "broadcast": ((3, 2, 4), (8, 0, 2), 1),
}


@pytest.mark.parametrize("args", list(STRIDED_VIEWS.values()), ids=list(STRIDED_VIEWS))
def test_strided_view_read_and_write(mode, args):
    x_c, x_t = make_pair((8 * 24 * 2,), seed=8)
    assert_close_cpu(x_t.as_strided(*args) * 2, x_c.as_strided(*args) * 2)
    if 0 in args[1]:
        return  # written through, a broadcast view would write one element twice
    update_c = torch.randn(args[0], generator=torch.Generator().manual_seed(9))
    x_c.as_strided(*args).copy_(update_c)
    x_t.as_strided(*args).copy_(update_c.to("tpu"))
    assert_close_cpu(x_t, x_c)


def test_as_strided_grad(mode):
    x_c, x_t = make_pair((10,), seed=7)
    x_c.requires_grad_()
    x_t.requires_grad_()
    x_c.as_strided((3, 3), (2, 1), 1).sum().backward()
    x_t.as_strided((3, 3), (2, 1), 1).sum().backward()
    assert_close_cpu(x_t.grad, x_c.grad)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_contiguous(mode, layout):
    x_c, x_t = make_pair((4, 5), layout=layout, seed=8)
    c_c, c_t = x_c.contiguous(), x_t.contiguous()
    assert c_t.is_contiguous()
    assert_close_cpu(c_t, c_c, check_stride=True)
    if layout == "contiguous":
        assert c_t is x_t
    else:
        assert c_t.untyped_storage().data_ptr() != x_t.untyped_storage().data_ptr()
        if layout != "expanded":
            c_t.add_(1)
            c_c.add_(1)
            assert_close_cpu(x_t, x_c)  # the original did not change


@pytest.mark.parametrize("make_view", [lambda t: t.t(), lambda t: t[:, 1:3], lambda t: t[:, ::3], lambda t: t[:1].expand(3, 4)],
                         ids=["transposed", "narrowed", "stepped", "expanded"])
def test_view_of_non_contiguous_errors_like_cpu(make_view):
    x = torch.arange(12.0).reshape(3, 4)
    with pytest.raises(RuntimeError) as cpu_err:
        make_view(x).view(-1)
    with pytest.raises(RuntimeError) as tpu_err:
        make_view(x.tpu()).view(-1)
    assert "view size is not compatible" in str(cpu_err.value)
    assert "view size is not compatible" in str(tpu_err.value)
    assert_close_cpu(make_view(x.tpu()).reshape(-1), make_view(x).reshape(-1))


INPLACE = {
    "add_": lambda v, o: v.add_(o),
    "sub_alpha": lambda v, o: v.sub_(o, alpha=2),
    "mul_": lambda v, o: v.mul_(o),
    "div_": lambda v, o: v.div_(o.abs() + 1),
    "addcmul_": lambda v, o: v.addcmul_(o, o, value=0.5),
    "lerp_": lambda v, o: v.lerp_(o, 0.3),
    "sigmoid_": lambda v, o: v.sigmoid_(),
    "tanh_": lambda v, o: v.tanh_(),
    "relu_": lambda v, o: v.relu_(),
    "clamp_": lambda v, o: v.clamp_(min=-0.2),
    "copy_": lambda v, o: v.copy_(o),
    "masked_fill_": lambda v, o: v.masked_fill_(o > 0, -3.0),
    "pow_": lambda v, o: v.pow_(2),
}


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_non_contiguous(mode, op, layout):
    base, view = make_input((4, 5), layout=layout, seed=11)
    base_c, base_t = base.clone(), base.tpu()
    other = make_tensor((4, 5), seed=12)
    v_c, v_t = view(base_c), view(base_t)
    out_c = INPLACE[op](v_c, other)
    out_t = INPLACE[op](v_t, other.tpu())
    assert out_t is v_t and out_c is v_c
    assert v_t.stride() == v_c.stride()
    _check(v_t, v_c, "view")
    _check(base_t, base_c, "base")


@pytest.mark.parametrize("src_dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("src_shape", [(4,), (3, 1), (1, 1), ()], ids=["row", "col", "ones", "0d"])
def test_copy_broadcast_and_convert(mode, src_shape, src_dtype):
    src = make_tensor(src_shape, src_dtype, seed=13)
    dst_c = torch.zeros(3, 4)
    dst_t = dst_c.tpu()
    dst_c.copy_(src)
    dst_t.copy_(src.tpu())
    _check(dst_t, dst_c, "tpu->tpu copy_")
    dst_t.zero_()
    dst_t.copy_(src)  # cpu source
    _check(dst_t, dst_c, "cpu->tpu copy_")
    back = torch.zeros(3, 4, dtype=src_dtype)
    back.copy_(dst_t)  # tpu source into cpu destination
    torch.testing.assert_close(back, dst_c.to(src_dtype))


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_copy_into_non_contiguous_destination(mode, layout):
    base, view = make_input((3, 4), layout=layout, seed=14)
    base_c, base_t = base.clone(), base.tpu()
    src = make_tensor((4,), torch.int64, seed=15)
    view(base_c).copy_(src)
    view(base_t).copy_(src.tpu())
    _check(base_t, base_c, "base after copy_ into view")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("memory_format", [torch.preserve_format, torch.contiguous_format], ids=["preserve", "contig"])
def test_clone_strides_like_cpu(mode, layout, memory_format):
    x_c, x_t = make_pair((3, 4, 5), layout=layout, seed=16)
    assert_close_cpu(x_t.clone(memory_format=memory_format), x_c.clone(memory_format=memory_format),
                     check_stride=True)
    assert_close_cpu(torch.empty_like(x_t).fill_(1), torch.empty_like(x_c).fill_(1), check_stride=True)


def test_clone_channels_last(mode):
    x_c, x_t = make_pair((2, 3, 4, 5), seed=17)
    assert_close_cpu(x_t.clone(memory_format=torch.channels_last), x_c.clone(memory_format=torch.channels_last),
                     check_stride=True)
    assert_close_cpu(x_t.contiguous(memory_format=torch.channels_last),
                     x_c.contiguous(memory_format=torch.channels_last), check_stride=True)


@pytest.mark.parametrize("fn", [lambda x: x + 1, lambda x: torch.exp(x), lambda x: x * x],
                         ids=["add_scalar", "exp", "mul"])
def test_elementwise_output_strides_follow_input(mode, fn):
    x_c, x_t = make_pair((4, 5), layout="transposed", seed=18)
    assert_close_cpu(fn(x_t), fn(x_c), check_stride=True)


def test_clone_is_independent(mode):
    x_c, x_t = make_pair((3, 3), seed=19)
    y_c, y_t = x_c.clone(), x_t.clone()
    y_c.add_(5)
    y_t.add_(5)
    _check(x_t, x_c, "original")
    _check(y_t, y_c, "clone")


def test_detach_shares_storage(mode):
    x_c, x_t = make_pair((5,), seed=20)
    x_t.requires_grad_()
    d = x_t.detach()
    d.mul_(2)
    assert_close_cpu(x_t, x_c * 2)
