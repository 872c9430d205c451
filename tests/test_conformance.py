"""Behaviours PyTorch's own device tests expect of an accelerator (issue 23), in our words:
CPU index tensors into device tensors, the fused RNN cells that nn.LSTM / nn.GRU
call on an accelerator, and the argument checks and edge cases those tests found."""
import pytest
import torch
import torch.nn as nn

import torch_tpu

import copy
import threading

from conftest import assert_close_cpu, run_python


def test_cpu_index_tensors_index_and_write_tpu_tensors():
    # CUDA moves CPU index tensors (integer and boolean) to the indexed tensor's device.
    x = torch.arange(24.0).reshape(4, 6)
    rows, cols, mask = torch.tensor([3, 0, 3]), torch.tensor([1, 5, 2]), x[:, 0] > 5
    t = x.tpu()
    assert_close_cpu(t[rows], x[rows])
    assert_close_cpu(t[rows, cols], x[rows, cols])
    assert_close_cpu(t[:, cols], x[:, cols])
    assert_close_cpu(t[mask], x[mask])
    expected, got = x.clone(), t.clone()
    expected[rows, cols] = -1.0
    got[rows, cols] = -1.0
    assert_close_cpu(got, expected)
    expected.index_put_((rows,), torch.ones(6), accumulate=True)
    got.index_put_((rows,), torch.ones(6, device="tpu"), accumulate=True)
    assert_close_cpu(got, expected)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        t[torch.tensor([1.0])]
    # Out of range: CPU's error, at the call (the indices are on the host).
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        t[torch.tensor([1, 4])]
    with pytest.raises(IndexError, match=r"index -7 is out of bounds for dimension \d with size 6"):
        t[:, torch.tensor([-7])] = 0.0
    assert_close_cpu(t[torch.tensor([-4, 3])], x[torch.tensor([-4, 3])])


def _rnn_cases():
    return {
        "LSTM": lambda: nn.LSTM(5, 7, num_layers=2, batch_first=True),
        "LSTM bidirectional, no bias": lambda: nn.LSTM(5, 7, bidirectional=True, bias=False),
        "GRU": lambda: nn.GRU(5, 7, num_layers=2),
        "LSTMCell": lambda: nn.LSTMCell(5, 7),
        "GRUCell": lambda: nn.GRUCell(5, 7),
    }


@pytest.mark.parametrize("name", list(_rnn_cases()))
def test_rnn_modules_forward_and_backward_match_cpu(name):
    torch.manual_seed(0)
    cpu = _rnn_cases()[name]()
    tpu = _rnn_cases()[name]()
    tpu.load_state_dict(cpu.state_dict())
    tpu.tpu()
    x = torch.randn(3, 4, 5) if "Cell" not in name else torch.randn(4, 5)
    xt = x.tpu().requires_grad_()
    x.requires_grad_()
    out_cpu, out_tpu = cpu(x), tpu(xt)
    first = lambda o: o[0] if isinstance(o, tuple) else o  # noqa: E731
    assert_close_cpu(first(out_tpu), first(out_cpu), rtol=1e-4, atol=1e-5)
    first(out_cpu).square().sum().backward()
    first(out_tpu).square().sum().backward()
    assert_close_cpu(xt.grad, x.grad, rtol=1e-4, atol=1e-5)
    for p, q in zip(tpu.parameters(), cpu.parameters()):
        assert_close_cpu(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    # Without autograd (inference mode skips the autograd kernels).
    with torch.inference_mode():
        assert_close_cpu(first(tpu(x.detach().tpu())), first(cpu(x.detach())), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_unsigned_shell_dtypes_hold_values_and_convert(dtype):
    # PyTorch's uint16/32/64 are "shell" dtypes: storage, copies, views, comparisons and casts.
    top = {torch.uint16: 65535, torch.uint32: 4294967295, torch.uint64: 2**63 + 5}[dtype]
    x = torch.tensor([0, 1, 300, top], dtype=dtype)
    t = x.tpu()
    assert t.dtype == dtype
    assert torch.equal(t.cpu(), x)
    assert torch.equal(torch.cat([t, t]).reshape(2, 4).cpu(), torch.cat([x, x]).reshape(2, 4))
    assert torch.equal((t == t[2]).cpu(), x == x[2])
    assert torch.equal(t[:3].double().cpu(), x[:3].double())
    assert torch.equal(torch.full((2,), 7, dtype=dtype, device="tpu").cpu(), torch.full((2,), 7, dtype=dtype))


def test_flip_of_a_scalar_is_the_scalar():
    assert torch.flip(torch.tensor(-3, device="tpu"), [0]).item() == -3
    assert torch.flip(torch.tensor(2.5, device="tpu"), [-1]).item() == 2.5


def test_nonzero_out_checks_its_out_tensor_like_cuda():
    t = torch.tensor([0, 1, 1, 0, 3]).tpu()
    out = torch.empty(0, dtype=torch.long, device="tpu")
    torch.nonzero(t, out=out)
    assert out.cpu().tolist() == [[1], [2], [4]]
    with pytest.raises(RuntimeError, match="on the same device"):
        torch.nonzero(t, out=torch.empty(0, dtype=torch.long))
    with pytest.raises(RuntimeError, match="scalar type Long"):
        torch.nonzero(t, out=torch.empty(0, device="tpu"))


def test_unfold_backward_rejects_a_bad_step_or_size():
    grad = torch.randn(2, 3, device="tpu")
    with pytest.raises(ValueError, match="step is 0 but must be > 0"):
        torch.ops.aten.unfold_backward(grad, [6], 0, 3, 0)
    with pytest.raises(RuntimeError, match="size is -1 but must be >= 0"):
        torch.ops.aten.unfold_backward(grad, [6], 0, -1, 1)


def test_resize_to_a_memory_format():
    for shape, fmt in (((4, 3, 5, 5), torch.channels_last), ((2, 4, 3, 5, 5), torch.channels_last_3d)):
        flat = torch.randn(torch.Size(shape).numel(), device="tpu")
        flat.resize_(shape, memory_format=fmt)
        assert flat.shape == shape and flat.is_contiguous(memory_format=fmt)


OUT_OF_RANGE_INDEX_OPS = {
    "index": lambda x, i: x[i],
    "index_put_": lambda x, i: x.index_put_((i,), torch.ones(1, device=x.device)),
    "index_select": lambda x, i: x.index_select(0, i),
    "embedding": lambda x, i: nn.functional.embedding(i, x.reshape(5, 1)),
    "gather": lambda x, i: x.gather(0, i),
    "scatter_": lambda x, i: x.scatter_(0, i, torch.ones(1, device=x.device)),
    "scatter_add_": lambda x, i: x.scatter_add_(0, i, torch.ones(1, device=x.device)),
    "index_add_": lambda x, i: x.index_add_(0, i, torch.ones(1, device=x.device)),
    "index_copy_": lambda x, i: x.index_copy_(0, i, torch.ones(1, device=x.device)),
    "index_fill_": lambda x, i: x.index_fill_(0, i, 1.0),
    "take": lambda x, i: x.take(i),
    "put_": lambda x, i: x.put_(i, torch.ones(1, device=x.device)),
}


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
@pytest.mark.parametrize("op", sorted(OUT_OF_RANGE_INDEX_OPS))
@pytest.mark.parametrize("bad", [5, -6])
def test_out_of_range_device_index_raises_at_the_next_synchronization(mode, op, bad):
    # CUDA's device-side asserts: the op returns, the next synchronization raises.
    fn = OUT_OF_RANGE_INDEX_OPS[op]
    with pytest.raises((IndexError, RuntimeError), match="out of (range|bounds)"):
        fn(torch.zeros(5), torch.tensor([bad]))  # CPU raises at the call
    x = torch.zeros(5, device="tpu")
    fn(x, torch.full((1,), bad, device="tpu"))  # computed on the device: the host has not seen it
    with pytest.raises(IndexError, match=r"index out of bounds for a dimension of size 5"):
        torch.tpu.synchronize()
    # Reported once; the device keeps working, and in-range indices pass.
    y = torch.arange(5.0, device="tpu")
    assert y[torch.tensor([4, -5], device="tpu")].tolist() == [4.0, 0.0]


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_an_out_of_range_index_surfaces_at_a_read_of_any_later_result(mode):
    x = torch.arange(5.0, device="tpu")
    y = x[torch.full((1,), 7, device="tpu")] * 2 + 1
    z = torch.ones(3, device="tpu") + 1
    with pytest.raises(IndexError, match=r"aten::index: index out of bounds for a dimension of size 5"):
        z.cpu()
    del y
    assert z.cpu().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
@pytest.mark.parametrize("op", sorted(OUT_OF_RANGE_INDEX_OPS))
def test_an_uploaded_index_tensor_is_checked_at_the_call(mode, op):
    # The host still holds a small upload's values: checked at once, as a CPU index is.
    fn = OUT_OF_RANGE_INDEX_OPS[op]
    x = torch.zeros(5, device="tpu")
    index = torch.tensor([7]).to("tpu")
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension with size 5"):
        fn(x, index)
    index.sub_(3)  # changed on the device: checked there, and now in range
    fn(x, index)
    torch.tpu.synchronize()


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_each_failed_device_check_is_reported(mode):
    x = torch.arange(5.0, device="tpu")
    for _ in range(3):
        y = x[torch.full((1,), 9, device="tpu")]
        with pytest.raises(IndexError, match="index out of bounds"):
            y.cpu()


def test_reading_a_tensor_element_by_element_copies_it_to_the_host_once():
    # all(t) and `for v in t` read one element at a time, as on CUDA; the
    # storage's bytes come to the host once and the elements are read there.
    y = torch.arange(20000.0, device="tpu")
    increasing = y[:-1] < y[1:]
    torch.tpu.synchronize()
    torch_tpu.reset_metrics()
    assert all(increasing)
    assert [v.item() for v in y[:50]] == list(range(50))
    assert torch_tpu.metrics()["executions"] <= 4
    y[3] = -1.0  # new contents: the next read sees them
    assert y[3].item() == -1.0 and y[4].item() == 4.0


def test_index_checks_can_be_turned_off():
    previous = torch_tpu.set_index_checks(False)
    try:
        x = torch.arange(5.0, device="tpu")
        x[torch.tensor([7], device="tpu")].cpu()  # unchecked: whatever the gather clamps to
        torch.tpu.synchronize()
    finally:
        torch_tpu.set_index_checks(previous)
    assert previous is True


def test_index_checks_keep_a_loop_at_one_program():
    table = torch.randn(50, 8, device="tpu")
    torch_tpu.reset_metrics()
    for step in range(6):
        ids = torch.randint(50, (4,), device="tpu")
        (table[ids] * 2).sum().item()
    assert torch_tpu.metrics()["compiles"] <= 3


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_python_threads_issue_tpu_ops_concurrently(mode):
    # Each thread's ops record and run whole (fused mode: one lock around each op's
    # recording; strict: a program per op); results are each thread's own.
    def work(seed, results):
        g = torch.Generator().manual_seed(seed)
        w = torch.randn(16, 16, generator=g)
        x = torch.randn(8, 16, generator=g)
        wt, xt = w.tpu(), x.tpu()
        for _ in range(10):
            xt = torch.tanh(xt @ wt) + 0.5 * xt
            x = torch.tanh(x @ w) + 0.5 * x
        results[seed] = (xt.cpu(), x)

    results = {}
    threads = [threading.Thread(target=work, args=(seed, results)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(results) == [0, 1, 2, 3]
    for tpu_result, cpu_result in results.values():
        torch.testing.assert_close(tpu_result, cpu_result, rtol=1e-3, atol=1e-3)


def test_ctrl_c_in_a_long_fused_loop_leaves_the_device_usable():
    # SIGINT lands between ops as KeyboardInterrupt; what was recorded stays
    # consistent, and the next computation (and a reread of the loop's tensor) works.
    code = """
import os, signal, threading, torch, torch_tpu
x = torch.zeros(256, device="tpu")
threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
steps = 0
try:
    while True:
        x = x + 1
        steps += 1
        if steps % 5000 == 0:
            x.sum().item()
except KeyboardInterrupt:
    pass
value = x.cpu()
assert torch.equal(value, torch.full((256,), float(steps))), (value[:3], steps)
print("ok", steps > 0, (torch.arange(4.0, device="tpu") * 2).tolist())
"""
    out = run_python(code, timeout=120, TORCH_TPU_EAGER_MODE="fused")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "ok True [0.0, 2.0, 4.0, 6.0]", out.stdout


def test_a_mask_and_one_value_is_a_masked_fill_whatever_the_mask_selects():
    # x[mask] = v compiles once, not once per number of selected elements.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 7, generator=g)
    xt = x.tpu()
    torch_tpu.reset_metrics()
    for step in range(6):
        mask = torch.rand(6, 7, generator=g) > 0.5
        x[mask] = float(step)
        xt[mask if step % 2 else mask.tpu()] = float(step)
        col = torch.rand(7, generator=g) > 0.5
        x[:, col] = -1.0
        xt[:, col] = -1.0
    assert torch.equal(xt.cpu(), x)
    assert torch_tpu.metrics()["compiles"] <= 8


def test_uint8_masks_warn_as_on_cpu():
    y = torch.ones(4, 3, device="tpu")
    mask = torch.tensor([1, 0, 1, 0], dtype=torch.uint8, device="tpu")
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        assert y[mask].shape == (2, 3)
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        y[mask] = 0.0
    assert y.sum().item() == 6.0


def test_index_fill_checks_and_cpu_indices():
    x = torch.zeros(2, 5, device="tpu")
    with pytest.raises(RuntimeError, match="Converting complex Scalar to non-complex type is not supported"):
        x.index_fill_(1, torch.tensor([0], device="tpu"), 1 + 1j)
    with pytest.raises(IndexError, match="Expected dtype int64 for index"):
        x.index_fill_(1, torch.tensor([0], dtype=torch.int32, device="tpu"), 1.0)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 5"):
        x.index_fill_(1, torch.tensor([5]), 1.0)
    assert x.index_fill(1, torch.tensor([1, -1]), 2.0).cpu().tolist() == [[0, 2, 0, 0, 2]] * 2


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.uint8, torch.int32])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_extreme_reductions_of_small_integer_types(dtype, reduce):
    x = torch.tensor([[3, 7, 1], [5, 2, 9]], dtype=dtype)
    src = torch.tensor([[4, 8, 0], [6, 1, 2]], dtype=dtype)
    index = torch.tensor([1, 1])
    expected = x.clone().index_reduce_(0, index, src, reduce, include_self=False)
    got = x.tpu().index_reduce_(0, index.tpu(), src.tpu(), reduce, include_self=False)
    assert torch.equal(got.cpu(), expected)
    assert getattr(torch, reduce)(x.tpu(), 1).cpu().tolist() == getattr(torch, reduce)(x, 1).tolist()


def test_topk_and_sort_write_into_strided_out_tensors():
    x = torch.randn(12)
    values = torch.empty(12, device="tpu")[::2]
    indices = torch.empty(18, dtype=torch.long, device="tpu")[::3]
    for sorted_ in (True, False):
        torch.topk(x.tpu(), 6, sorted=sorted_, out=(values, indices))
        v, i = x.tpu().topk(6, sorted=sorted_)
        assert torch.equal(values.cpu(), v.cpu()) and torch.equal(indices.cpu(), i.cpu())
    v, i = torch.empty(0, device="tpu"), torch.empty(0, dtype=torch.long, device="tpu")
    torch.sort(x.tpu().reshape(3, 4), dim=1, descending=True, out=(v, i))
    expected = torch.sort(x.reshape(3, 4), dim=1, descending=True)
    assert torch.equal(v.cpu(), expected.values) and torch.equal(i.cpu(), expected.indices)
    with pytest.raises(RuntimeError, match="expected scalar type Long but got Int for indices"):
        torch.topk(x.tpu(), 2, out=(values, torch.empty(2, dtype=torch.int32, device="tpu")))


def test_sparse_coo_tensors_live_on_tpu():
    indices = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    values = torch.tensor([3.0, 4.0, 5.0, 1.0])
    cpu = torch.sparse_coo_tensor(indices, values, (2, 3))
    tpu = torch.sparse_coo_tensor(indices.tpu(), values.tpu(), (2, 3))
    assert tpu.device.type == "tpu" and tpu.layout == torch.sparse_coo and tpu._nnz() == 4
    assert tpu._indices().device.type == "tpu" and tpu._values().device.type == "tpu"
    # The duplicate (0, 2) adds up, uncoalesced or not.
    assert torch.equal(tpu.to_dense().cpu(), cpu.to_dense())
    assert torch.equal(tpu.to_dense(dtype=torch.float64).cpu(), cpu.to_dense().double())
    coalesced = tpu.coalesce()
    assert coalesced.device.type == "tpu" and coalesced.is_coalesced() and coalesced._nnz() == 3
    assert torch.equal(cpu.tpu().cpu().to_dense(), cpu.to_dense())
    dense = torch.randn(3, 4)
    assert_close_cpu(torch.sparse.mm(tpu, dense.tpu()), torch.sparse.mm(cpu, dense))
    hybrid = torch.sparse_coo_tensor(indices[:1], torch.randn(4, 3), (2, 3))
    assert torch.equal(hybrid.tpu().to_dense().cpu(), hybrid.to_dense())
    # view_as_real / view_as_complex are views of the values, as on the CPU.
    z = torch.sparse_coo_tensor(indices.tpu(), torch.randn(4, dtype=torch.complex64).tpu(), (2, 3))
    real = torch.view_as_real(z)
    assert real._base is z and real.shape == (2, 3, 2)
    assert real._values().untyped_storage().data_ptr() == z._values().untyped_storage().data_ptr()
    assert torch.equal(torch.view_as_complex(real).to_dense().cpu(), z.cpu().to_dense())
    # No sparse dims (a 0-d tensor, masked reductions' masks): the values add up to the tensor.
    for scalar in (torch.tensor(True), torch.tensor(3.5)):
        assert torch.equal(scalar.tpu().to_sparse().to_dense().cpu(), scalar)
    dense_only = torch.sparse_coo_tensor(torch.zeros(0, 2, dtype=torch.long), torch.tensor([[1, 2], [3, 4]]), (2,))
    assert torch.equal(dense_only.tpu().to_dense().cpu(), dense_only.to_dense())


def test_float_to_integer_conversion_out_of_range_matches_cpu():
    big = torch.finfo(torch.float).max
    values = torch.tensor([-big, -3e9, -2.0, -1.5, -0.5, 0.0, 0.5, 1.5, 2.0, 3e9, big, float("nan")])
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        for source in (torch.float32, torch.float64):
            assert torch.equal(values.to(source).tpu().to(dtype).cpu(), values.to(source).to(dtype)), (source, dtype)


def test_random_fills_check_their_bounds_like_the_cpu():
    t = torch.empty(10, dtype=torch.int8, device="tpu")
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
        t.random_(0, 300)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        t.random_(5, 5)
    with pytest.warns(UserWarning, match="Due to precision limitations"):
        torch.empty(4, dtype=torch.float16, device="tpu").random_(0, 2**12)
    f = torch.empty(100, dtype=torch.float64, device="tpu")
    big = torch.finfo(torch.float64).max
    with pytest.raises(RuntimeError, match="uniform_ expects to-from"):
        f.uniform_(-big, big)
    f.uniform_(0, big)  # beyond float32, within float64
    assert bool((f.cpu() >= 0).all())
    with pytest.raises(RuntimeError, match="n is too large for result tensor type"):
        torch.randperm(257, out=torch.empty(0, dtype=torch.uint8, device="tpu"))
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type"):
        torch.randperm(2050, out=torch.empty(0, dtype=torch.float16, device="tpu"))


def test_normal_takes_python_numbers_and_out_tensors():
    std = torch.tensor([1.0, 2.0], device="tpu")
    assert torch.normal(2.0, std).device.type == "tpu"
    out = torch.empty(0, device="tpu")
    torch.normal(torch.zeros(3, device="tpu"), 1.0, out=out)
    assert out.shape == (3,) and "aten::normal.Tensor_float_out" not in torch_tpu.metrics()["cpu_fallbacks"]
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(0.0, torch.tensor([-1.0], device="tpu"))


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_a_dlpack_import_of_a_tpu_tensor_aliases_it(mode):
    from torch.utils.dlpack import to_dlpack
    x = torch.randn(4, 5, device="tpu")
    alias = torch.asarray(to_dlpack(x))
    assert alias.device == x.device and alias.data_ptr() == x.data_ptr()
    assert torch.equal(alias.cpu(), x.cpu())
    alias.add_(1)  # writes go either way
    assert torch.equal(alias.cpu(), x.cpu())
    x.zero_()
    assert alias.abs().sum().item() == 0
    short_lived = torch.asarray(to_dlpack(x))
    short_lived.fill_(3.0)
    del short_lived  # its pending write still lands in x
    assert x.cpu().eq(3.0).all()
    through_protocol = torch.from_dlpack(x)  # __dlpack_device__, then __dlpack__
    through_protocol.sub_(1)
    assert through_protocol.device == x.device and x.cpu().eq(2.0).all()
    # Only whole storages alias through a pointer; a resized source leaves the alias pointing nowhere.
    with pytest.raises(RuntimeError, match="only whole storages can be aliased"):
        torch.asarray(to_dlpack(x[1:])).cpu()
    stale = torch.asarray(to_dlpack(x))
    x.resize_(100)
    with pytest.raises(RuntimeError, match="points into no live tpu storage"):
        stale.cpu()


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_from_dlpack_of_a_tpu_view_aliases_its_elements(mode):
    x = torch.arange(25.0, device="tpu").reshape(5, 5)
    for view in (x[0], x[:, 0], x[1, 2:], x[::2, 1::3]):
        imported = torch.from_dlpack(view)
        assert imported._base is None and imported.stride() == view.stride()
        assert imported.data_ptr() == view.data_ptr()
        torch.testing.assert_close(imported.cpu(), view.cpu())
    column = torch.from_dlpack(x[:, 1])
    column.mul_(-1)  # writes land in the source's elements, and only there
    expected = torch.arange(25.0).reshape(5, 5)
    expected[:, 1] *= -1
    assert torch.equal(x.cpu(), expected)
    with pytest.raises(BufferError, match="require gradient"):
        torch.from_dlpack(x.clone().requires_grad_())


def test_complex_linspace_and_logspace_and_out_tensors_that_keep_their_shape():
    for dtype in (torch.complex64, torch.complex128):
        for start, end, steps in ((1 + 2j, 5 - 3j, 7), (0, 1j, 5), (2j, 3 + 1j, 1)):
            torch.testing.assert_close(torch.linspace(start, end, steps, dtype=dtype, device="tpu").cpu(),
                                       torch.linspace(start, end, steps, dtype=dtype))
            torch.testing.assert_close(torch.logspace(start, end, steps, dtype=dtype, device="tpu").cpu(),
                                       torch.logspace(start, end, steps, dtype=dtype))
    # An out tensor of `steps` elements keeps its shape and is filled in order, as on the CPU.
    for dtype in (torch.int64, torch.float32, torch.complex64):
        x, expected = torch.zeros(2, 3, dtype=dtype, device="tpu"), torch.zeros(2, 3, dtype=dtype)
        torch.linspace(0, 3, 4, out=x.narrow(1, 1, 2))
        torch.linspace(0, 3, 4, out=expected.narrow(1, 1, 2))
        assert torch.equal(x.cpu(), expected)


def test_unary_ops_refuse_dtypes_and_out_dtypes_as_the_cpu_does():
    t = torch.ones(2, device="tpu")
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.neg(t, out=torch.empty(0, dtype=torch.float64, device="tpu"))
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        torch.neg(t.bool())
    with pytest.raises(NotImplementedError, match="floor is not supported for complex inputs"):
        torch.floor(t.to(torch.complex64))
    with pytest.raises(NotImplementedError, match="\"ceil_tpu\" not implemented for 'Bool'"):
        torch.ceil(t.bool())
    with pytest.raises(NotImplementedError, match="\"frac_tpu\" not implemented for 'Int'"):
        torch.frac(t.int())
    with pytest.raises(NotImplementedError, match="\"cross\" not implemented for 'Bool'"):  # at the call
        torch.linalg.cross(torch.ones(2, 3, dtype=torch.bool, device="tpu"), torch.ones(2, 3, dtype=torch.bool, device="tpu"))
    # Float ops still cast into a wider out tensor.
    out = torch.empty(0, dtype=torch.float64, device="tpu")
    torch.sin(t, out=out)
    assert out.dtype == torch.float64


def test_cat_promotes_with_the_empty_tensors_it_skips():
    x, y = torch.tensor([1, 2, 3], dtype=torch.bool), torch.tensor([], dtype=torch.float16)
    assert torch.cat([x.tpu(), y.tpu()]).dtype == torch.cat([x, y]).dtype == torch.float16


def test_clamp_and_add_promote_and_check_as_pytorch():
    inp = torch.tensor([True, False, True])
    low, high = torch.randn(3), torch.randn(3, dtype=torch.float64)[0]
    # One promotion over all operands: the 1-D float32 bound outranks the 0-d float64 one.
    assert torch.clamp(inp.tpu(), low.tpu(), high.tpu()).dtype == torch.clamp(inp, low, high).dtype == torch.float32
    x = torch.ones(4, dtype=torch.int32, device="tpu")
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        torch.add(x, x, alpha=1.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.cat([torch.ones(2, device="tpu"), torch.ones(2, device="tpu")],
                  out=torch.empty(4, dtype=torch.int64, device="tpu"))


def test_cat_keeps_channels_last_and_refuses_overlapping_out():
    x = torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    for dim in range(4):
        got = torch.cat((x.tpu(), x.tpu()), dim=dim)
        assert got.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(got.cpu(), torch.cat((x, x), dim=dim))
    y = torch.rand(3, 3, device="tpu")
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.cat([y, y], out=torch.rand(1, 3, device="tpu").expand(6, 3))
    a = torch.tensor([1.0, 2.0], device="tpu")
    with pytest.raises(RuntimeError, match="Expected object of scalar type ComplexFloat but got scalar type Float"):
        torch.complex(a, a, out=torch.zeros(2, device="tpu"))


def test_arange_checks_its_range_and_fills_an_out_tensor_in_order():
    x, expected = torch.zeros(2, 3, device="tpu"), torch.zeros(2, 3)
    torch.arange(0, 4, out=x.narrow(1, 1, 2))
    torch.arange(0, 4, out=expected.narrow(1, 1, 2))
    assert torch.equal(x.cpu(), expected)
    with pytest.raises(RuntimeError, match="unsupported range"):
        torch.arange(0, float("inf"), device="tpu")
    with pytest.raises(RuntimeError, match="overflow"):
        torch.arange(1.175494351e-38, 3.402823466e38, device="tpu")
    line = torch.zeros(1, 49, device="tpu")
    with pytest.warns(UserWarning, match="The out tensor will be resized"):
        torch.arange(-1, 1, 2.0 / 49, dtype=torch.float32, out=line)
    assert line.shape == (50,)


def test_results_follow_the_stride_order_of_a_non_dense_input():
    for t in (torch.randn(4, 3, 2, device="tpu")[:, :, ::2].permute(2, 0, 1),
              torch.empty_strided((4, 3, 2), (10, 1, 2), device="tpu").fill_(1.0).permute(1, 2, 0)):
        assert torch.exp(t).stride() == torch.empty_like(t).stride()


def test_random_half_values_stay_below_to():
    t = torch.empty(20000, dtype=torch.float16, device="tpu")
    with pytest.warns(UserWarning):
        t.random_(0, 32752)
    assert t.double().max().item() < 32752


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz,
                                   torch.float8_e4m3fnuz, torch.float8_e8m0fnu])
def test_float8_tensors_hold_fill_and_convert_like_cpu(dtype):
    x = torch.rand(7).add(0.25).to(dtype)
    t = x.to("tpu")
    assert torch.equal(t.cpu().view(torch.uint8), x.view(torch.uint8))
    filled = torch.empty(3, dtype=dtype, device="tpu").fill_(1.5)
    assert torch.equal(filled.cpu().view(torch.uint8), torch.full((3,), 1.5, dtype=dtype).view(torch.uint8))
    # Conversions round as the CPU's float8 types do.
    doubled = (t.float() * 3).to(dtype)
    assert torch.equal(doubled.cpu().view(torch.uint8), (x.float() * 3).to(dtype).view(torch.uint8))
    assert torch.equal(torch.cat([t, t]).cpu().view(torch.uint8), torch.cat([x, x]).view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz,
                                   torch.float8_e4m3fnuz])
@pytest.mark.parametrize("source", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
def test_conversions_to_float8_round_once_to_nearest_even(dtype, source):
    # XLA converts through float16, rounding twice (2305 to e5m2 gave 2048, not 2560).
    info = torch.finfo(dtype)
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(2000, generator=g) * info.max / 4,
                   torch.rand(500, generator=g) * 2 * info.smallest_normal,  # the subnormals
                   torch.arange(int(info.max)).float(),  # ties between integers
                   torch.tensor([float("inf"), -float("inf"), float("nan"), info.max * 1.05, -0.0])])
    x = x.to(source)
    expected, actual = x.to(dtype).float(), x.to("tpu").to(dtype).float().cpu()
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def test_bits_tensors_copy_and_concatenate_as_bytes():
    for bits, view in [(torch.bits8, torch.uint8), (torch.bits1x8, torch.uint8), (torch.bits4x2, torch.uint8),
                       (torch.bits16, torch.int16)]:
        x = torch.randint(100, (6, 5), dtype=view)
        t = x.to("tpu").view(bits)
        assert t.dtype == bits
        assert torch.equal(t.t().contiguous().view(view).cpu(), x.t().contiguous())
        assert torch.equal(torch.cat([t, t]).view(view).cpu(), torch.cat([x, x]))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_lerp_of_complex_tensors(dtype):
    g = torch.Generator().manual_seed(0)
    a, b, w = (torch.randn(16, dtype=dtype, generator=g) for _ in range(3))
    torch.testing.assert_close(torch.lerp(a.tpu(), b.tpu(), w.tpu()).cpu(), torch.lerp(a, b, w))
    torch.testing.assert_close(torch.lerp(a.tpu(), b.tpu(), 0.7).cpu(), torch.lerp(a, b, 0.7))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.uint16, torch.uint32])
def test_random_without_upper_bound_spans_the_dtype(dtype):
    values = torch.empty(4000, dtype=dtype, device="tpu").random_(0, None).cpu().long()
    top = torch.iinfo(dtype).max
    assert values.min() >= 0 and values.max() <= top
    assert values.max() > 0.9 * top  # the whole range, not a byte's worth


def test_linspace_and_logspace_refuse_an_overlapping_out():
    x = torch.rand(1, device="tpu").expand(10)
    for fn in (torch.linspace, torch.logspace):
        with pytest.raises(RuntimeError, match="unsupported operation"):
            fn(1, 10, 10, out=x)


def test_indexing_shape_errors_read_as_the_cpus():
    a = torch.ones(2, 3, 4, device="tpu")
    # Index tensors that cannot broadcast: the CPU's IndexError.
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together"):
        a[False, [0, 1], ...]
    assert a[True, [0, 1], True, True, [1], [[2]]].shape == (1, 2)
    # Values of the wrong shape are reported before values of the wrong dtype.
    b = torch.arange(4, device="tpu")
    for values in ([], [1.0, 2.0, 3.0]):
        with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
            b[b > -1] = torch.tensor(values, device="tpu")
    with pytest.raises(RuntimeError, match="dtypes match"):
        b[b > -1] = torch.ones(4, device="tpu")
    with pytest.raises(IndexError, match="for dimension with size 0"):
        torch.empty(10, 0, device="tpu")[:, [0, 1]]


def test_reduction_edge_cases_behave_as_on_cpu():
    many_dims = torch.ones([1] * 65, device="tpu")
    for reduce in (lambda t: t.sum(0), lambda t: t.amax(0), lambda t: t.argmax(0), lambda t: t.std(0)):
        with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
            reduce(many_dims)
    assert many_dims.sum().item() == 1.0  # all dims at once is fine
    empty = torch.empty(0, 2, device="tpu")
    for name in ("amax", "amin"):
        with pytest.raises(IndexError, match=rf"{name}\(\): Expected reduction dim 0 to have non-zero size"):
            getattr(torch, name)(empty, 0)
    assert torch.median(torch.tensor([], device="tpu")).isnan().item()
    assert torch.nanmedian(torch.tensor([], device="tpu")).isnan().item()
    x = torch.tensor([1, 3, 3, 2, 3, 1], device="tpu")
    values, indices = torch.empty(0, dtype=torch.long, device="tpu"), torch.empty(0, dtype=torch.long, device="tpu")
    torch.mode(x, 0, out=(values, indices))
    assert (values.item(), indices.item()) == torch.mode(x.cpu(), 0)
    with pytest.raises(RuntimeError, match="expected scalar type Long but got Float for values"):
        torch.mode(x, 0, out=(torch.empty(0, device="tpu"), indices))
    boundaries = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    values_nan = torch.tensor([1.0, float("nan"), 2.0, float("nan")], dtype=torch.float64)
    for right in (False, True):
        assert torch.equal(torch.searchsorted(boundaries.tpu(), values_nan.tpu(), right=right).cpu(),
                           torch.searchsorted(boundaries, values_nan, right=right))


def test_searchsorted_follows_the_cpus_binary_search_on_unsorted_boundaries():
    unsorted = torch.tensor([3.0, 1.0, 2.0, float("nan"), 0.0, 5.0])
    values = torch.tensor([[2.5, -1.0, 7.0, float("nan"), 1.0, 3.0]])
    for right in (False, True):
        assert torch.equal(torch.searchsorted(unsorted.tpu(), values.tpu(), right=right).cpu(),
                           torch.searchsorted(unsorted, values, right=right))
    rows = torch.tensor([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]])
    row_values = torch.tensor([[3, 6, 9, 0], [3, 6, 11, 2]])
    got = torch.searchsorted(rows.tpu(), row_values.tpu(), out_int32=True)
    assert got.dtype == torch.int32 and torch.equal(got.cpu(), torch.searchsorted(rows, row_values, out_int32=True))
    assert torch.searchsorted(torch.tensor([], device="tpu"), torch.tensor([3.0], device="tpu")).tolist() == [0]


def test_complex_max_and_min_and_degrees_of_freedom_as_on_cpu():
    z = torch.tensor([1j, 2.0], device="tpu")
    for reduce in (torch.amax, torch.amin, torch.max, torch.aminmax):
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            reduce(z)
    for reduce in (lambda t: torch.max(t, 0), lambda t: torch.argmin(t)):
        with pytest.raises(RuntimeError, match="does not support complex input"):
            reduce(z)
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim 0 to have non-zero size"):
        torch.argmax(torch.empty(0, 3, device="tpu"), 0)
    x = torch.randn(4, 5, dtype=torch.complex64, device="tpu")
    for name in ("var", "std", "var_mean", "std_mean"):
        with pytest.warns(UserWarning, match=rf"{name}\(\): degrees of freedom is <= 0"):
            getattr(torch, name)(x, dim=-1, correction=5)


def test_binary_ops_at_the_edges_as_on_cpu():
    a = torch.tensor([float("inf"), float("nan"), 1.0, float("nan"), -float("inf")])
    b = torch.tensor([float("nan"), float("inf"), float("nan"), 0.0, -float("inf")])
    for op in (torch.maximum, torch.minimum, torch.max, torch.min, torch.fmax, torch.fmin, torch.logaddexp,
               torch.logaddexp2):
        assert torch.equal(op(a.tpu(), b.tpu()).cpu().nan_to_num(7.0), op(a, b).nan_to_num(7.0)), op
    for op in (torch.maximum, torch.fmin):
        with pytest.raises(RuntimeError, match=f"{op.__name__} not implemented for complex tensors."):
            op(torch.tensor([1j], device="tpu"), torch.tensor([True], device="tpu"))
    z1 = torch.tensor([1 + 1j, complex("inf"), complex(-float("inf"), 1), complex(float("nan"), 0), 3 - 2j])
    z2 = torch.tensor([2 - 1j, complex("inf"), complex(-float("inf"), 3), 1 + 1j, complex(0, float("nan"))])
    assert_close_cpu(torch.logaddexp(z1.tpu(), z2.tpu()), torch.logaddexp(z1, z2), equal_nan=True)
    for dtype in (torch.bfloat16, torch.float16):  # the next value in the operands' own precision
        x = torch.tensor([1.0, 0.0, -1.0, 1e4, float("inf")], dtype=dtype)
        y = torch.tensor([2.0, 1.0, -2.0, float("inf"), 0.0], dtype=dtype)
        assert torch.equal(torch.nextafter(x.tpu(), y.tpu()).cpu(), torch.nextafter(x, y))
    u = torch.tensor([200, 13, 0, 255, 7], dtype=torch.uint8), torch.tensor([3, 20, 5, 2, 0], dtype=torch.uint8)
    assert torch.equal(torch.lcm(u[0].tpu(), u[1].tpu()).cpu(), torch.lcm(*u))
    assert torch.equal(torch.gcd(u[0].tpu(), u[1].tpu()).cpu(), torch.gcd(*u))
    with pytest.raises(RuntimeError, match="different dtypes.$"):
        torch.heaviside(torch.ones(2, device="tpu", dtype=torch.bfloat16), torch.ones(2, device="tpu"))
    # The first operand of the output's shape decides its layout, as in TensorIterator.
    m1, m2 = torch.randn(4, 5, device="tpu"), torch.randn(5, 4, device="tpu").t()
    assert (m1 + m2).is_contiguous() and (m2 + m1).stride() == m2.stride()


def test_nan_bounds_and_nans_in_running_log_sums_propagate():
    x = torch.tensor([float("nan"), 1.0, -1.0, 5.0])
    lo, hi = torch.tensor([0.0, float("nan"), 0.0, 0.0]), torch.tensor([2.0, 2.0, float("nan"), 2.0])
    for clamp in (lambda t, a, b: torch.clamp(t, a, b), lambda t, a, b: torch.clamp_min(t, a),
                  lambda t, a, b: torch.clamp_max(t, b)):
        assert torch.equal(clamp(x.tpu(), lo.tpu(), hi.tpu()).cpu().nan_to_num(7.0), clamp(x, lo, hi).nan_to_num(7.0))
    running = torch.tensor([1.0, float("nan"), 3.0, -float("inf"), float("inf")])
    assert torch.equal(torch.logcumsumexp(running.tpu(), 0).cpu().nan_to_num(7.0),
                       torch.logcumsumexp(running, 0).nan_to_num(7.0))


def test_reductions_of_more_than_eight_dimensions_do_not_crash_the_plugin():
    # The CPU plugin's reduction library corrupted memory on these (a segfault in test_unary_ufuncs).
    x = torch.randn(1, 2, 3, 1, 4, 5, 3, 2, 1, 2, 3, 4, 3)
    for reduce in (lambda t: t.sum(-1), lambda t: t.amax((0, 4, 12)), lambda t: t.mean((1, 3, 5, 7, 9, 11)),
                   lambda t: torch.special.multigammaln(t.abs() + 2, 3)):
        assert_close_cpu(reduce(x.tpu()), reduce(x), atol=1e-4, rtol=1e-4)


def test_complex32_computes_in_complex64():
    z = torch.randn(16, dtype=torch.complex64).to(torch.complex32)
    assert torch.equal(torch.sgn(z.tpu()).cpu().to(torch.complex64), torch.sgn(z).to(torch.complex64))


def test_unsigned_abs_and_sign_and_float64_frexp():
    u = torch.tensor([0, 1, 5, 200], dtype=torch.uint8)
    for op in (torch.abs, torch.sign, torch.sgn):
        assert torch.equal(op(u.tpu()).cpu(), op(u))
    x = torch.cat([torch.tensor([0.0, -0.0, 1.0, -3.5, 1e-310, 5e-324, float("inf"), float("nan"), -1e300],
                                dtype=torch.float64), torch.randn(100, dtype=torch.float64) * 1e3])
    mantissa, exponent = torch.frexp(x.tpu())
    assert torch.equal(mantissa.cpu().nan_to_num(7.0), torch.frexp(x).mantissa.nan_to_num(7.0))
    assert exponent.dtype == torch.int32 and torch.equal(exponent.cpu(), torch.frexp(x).exponent)


def test_nn_edge_cases_from_pytorchs_test_nn():
    import torch.nn.functional as F
    assert F.hardshrink(torch.tensor([float("nan"), 0.3, -2.0], device="tpu")).cpu()[0].isnan()
    x = torch.randn(1000, device="tpu")
    y = x.clone()
    F.rrelu(y, training=True, inplace=True)  # rrelu_with_noise_ on the device, not the CPU fallback
    assert "aten::rrelu_with_noise_" not in torch_tpu.metrics()["cpu_fallbacks"]
    negative, slopes = x.cpu() < 0, y.cpu() / x.cpu()
    assert slopes[negative].min() >= 0.125 and slopes[negative].max() <= 1 / 3
    assert torch.equal(y.cpu()[~negative], x.cpu()[~negative])
    # uint8 images resize in float and round, as on the CPU (within one step of its fixed-point kernels).
    images = torch.randint(30, 220, (2, 3, 40, 40), dtype=torch.uint8)
    for mode in ("bilinear", "bicubic"):
        got = F.interpolate(images.tpu(), size=(61, 61), mode=mode)
        assert got.dtype == torch.uint8
        assert (got.cpu().int() - F.interpolate(images, size=(61, 61), mode=mode).int()).abs().max() <= 1
    last = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    for mode in ("bilinear", "nearest"):  # a channels_last image resizes into a channels_last one
        assert F.interpolate(last.tpu(), size=(5, 5), mode=mode).stride() == F.interpolate(last, size=(5, 5), mode=mode).stride()
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        F.interpolate(torch.ones(1, 3, 8, 8, dtype=torch.int32, device="tpu"), size=(4, 4), mode="bilinear")
    for dtype in (torch.uint8, torch.int64):  # rounding an integer is the identity
        ints = torch.tensor([1, 2, 7], dtype=dtype, device="tpu")
        assert torch.equal(torch.floor(ints).cpu(), ints.cpu()) and torch.equal(torch.ceil(ints).cpu(), ints.cpu())
    with pytest.raises(RuntimeError, match="2D or 3D \\(batch mode\\) tensor with possibly 0 batch size"):
        torch.nn.ReflectionPad1d(2)(torch.randn(3, 0, 10, device="tpu"))
    assert torch.nn.ReflectionPad1d(2)(torch.randn(0, 3, 10, device="tpu")).shape == (0, 3, 14)
    # CTC with an empty target in the last sample: its padding indexes stay inside the targets.
    log_probs = torch.randn(50, 3, 15, dtype=torch.double).log_softmax(2)
    targets = torch.randint(1, 15, (9,))
    expected = F.ctc_loss(log_probs, targets, [50, 50, 50], [0, 9, 0], reduction="none")
    assert_close_cpu(F.ctc_loss(log_probs.tpu(), targets.tpu(), [50, 50, 50], [0, 9, 0], reduction="none"), expected)


def test_nll_loss_checks_its_target_and_weight_as_the_cpu_does():
    import torch.nn.functional as F
    scores = torch.randn(3, 4, device="tpu")
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        F.nll_loss(scores, torch.tensor([0, 1, 2], dtype=torch.int32, device="tpu"))
    targets = torch.tensor([0, 1, 2], device="tpu")
    assert_close_cpu(F.nll_loss(scores, targets.byte()), F.nll_loss(scores.cpu(), targets.cpu().byte()))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes or no classes "
                                           "but got weight tensor of shape: \\[3\\]"):
        F.nll_loss(scores, targets, weight=torch.ones(3, device="tpu"))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):  # and per pixel
        F.nll_loss(torch.randn(3, 4, 5, 5, dtype=torch.float64, device="tpu"),
                   torch.zeros(3, 5, 5, dtype=torch.long, device="tpu"), weight=torch.ones(4, device="tpu"))
    # PyTorch's module_db: an empty batch with a weight of another dtype still raises.
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Half"):
        torch.nn.NLLLoss(weight=torch.tensor([], dtype=torch.float16, device="tpu"))(
            torch.tensor([], device="tpu").reshape(0, 0), torch.tensor([], dtype=torch.long, device="tpu"))


def test_amax_out_dtype_and_pooling_shape_errors_read_as_the_cpus():
    import torch.nn.functional as F
    x = torch.randn(3, 4, device="tpu")
    for reduce in (torch.amax, torch.amin):
        with pytest.raises(RuntimeError, match="Expected the dtype for input and out to match, but got Float for "
                                               "input's dtype and Long for out's dtype"):
            reduce(x, 1, out=torch.empty(3, dtype=torch.long, device="tpu"))
    with pytest.raises(RuntimeError, match="Expected input's non-batch dimensions to have positive length"):
        F.max_pool3d(torch.randn(2, 1, 0, 1, 2, device="tpu"), kernel_size=1)
    assert F.max_pool3d(torch.randn(0, 1, 4, 4, 4, device="tpu"), kernel_size=2).shape == (0, 1, 2, 2, 2)
    with pytest.raises(RuntimeError, match="Given input size: \\(1x1x4x4\\). Calculated output size: "
                                           "\\(1x0x2x2\\). Output size is too small"):
        F.max_pool3d(torch.randn(1, 1, 1, 4, 4, device="tpu"), kernel_size=2)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiased_resize_runs_on_the_device_and_matches_cpu(mode):
    import torch.nn.functional as F
    x = torch.randn(2, 3, 32, 40, dtype=torch.float64, requires_grad=True)
    for size, align_corners in (((7, 9), False), ((20, 33), True), ((61, 40), False)):
        expected = F.interpolate(x, size=size, mode=mode, align_corners=align_corners, antialias=True)
        on_tpu = x.detach().tpu().requires_grad_()
        got = F.interpolate(on_tpu, size=size, mode=mode, align_corners=align_corners, antialias=True)
        assert_close_cpu(got, expected, rtol=1e-10, atol=1e-12)
        assert_close_cpu(torch.autograd.grad((got ** 2).sum(), on_tpu)[0], torch.autograd.grad((expected ** 2).sum(), x)[0],
                         rtol=1e-10, atol=1e-12)
    assert not any("upsample" in op for op in torch_tpu.metrics()["cpu_fallbacks"])


def test_writing_into_an_expanded_tensor_is_refused_as_on_cpu():
    import torch.nn.functional as F
    expanded = torch.randn(1, 6, dtype=torch.bfloat16, device="tpu").expand(6, 6)
    for write in (lambda: F.elu(expanded, inplace=True), lambda: F.silu(expanded, inplace=True),
                  lambda: F.leaky_relu(expanded, inplace=True), lambda: expanded.mul_(2),
                  lambda: expanded.copy_(torch.ones(6, 6, device="tpu")),
                  lambda: torch.add(torch.ones(6, 6, device="tpu"), 1, out=expanded)):
        with pytest.raises(RuntimeError, match="unsupported operation: more than one element of the written-to tensor"):
            write()
    expanded.zero_()  # fills may write every element with one value, as on the CPU
    assert expanded.cpu().eq(0).all()
    F.threshold(expanded, 0.5, 0.5, inplace=True)  # idempotent, so allowed in place as on the CPU
    assert expanded.cpu().eq(0.5).all()


def test_in_place_activations_with_a_negative_slope_refuse_their_backward():
    import torch.nn.functional as F
    for forward in (lambda t: F.elu_(t, alpha=-2), lambda t: F.celu_(t, alpha=-2),
                    lambda t: F.leaky_relu_(t, -0.1)):
        a = torch.tensor([-1.0, 1.0], device="tpu", requires_grad=True)
        out = forward(a.clone())
        with pytest.raises(RuntimeError, match="call out-of-place version"):
            out.backward(torch.ones(2, device="tpu"))


def test_out_and_in_place_forms_without_their_own_kernel_run_the_functional_kernel_on_the_device():
    torch_tpu.reset_metrics()
    x = torch.randn(4, 5)
    t = x.tpu()
    out = torch.empty(0, device="tpu")
    torch.cumsum(t, 1, out=out)
    assert_close_cpu(out, x.cumsum(1))
    in_place = t.clone()
    in_place.cumsum_(0)  # PyTorch routes cumsum_ to cumsum.out
    assert_close_cpu(in_place, x.cumsum(0))
    low, high = torch.empty(0, device="tpu"), torch.empty(0, device="tpu")
    torch.aminmax(t, dim=1, out=(low, high))
    assert torch.equal(low.cpu(), x.amin(1)) and torch.equal(high.cpu(), x.amax(1))
    picked = torch.empty(0, device="tpu")
    torch.index_select(t, 0, torch.tensor([3, 0], device="tpu"), out=picked)
    assert torch.equal(picked.cpu(), x[[3, 0]])
    as_double = torch.empty(0, dtype=torch.float64, device="tpu")
    torch.nansum(t, 1, out=as_double)  # cast into the out dtype, as TensorIterator does
    assert as_double.dtype == torch.float64 and torch.allclose(as_double.cpu(), x.nansum(1).double())
    ints = torch.randint(1, 100, (3, 40))
    as_float = torch.empty(0, device="tpu")
    torch.prod(ints.tpu(), 1, out=as_float)  # computed in out's dtype, as PyTorch does: no int64 overflow
    assert_close_cpu(as_float, torch.prod(ints, 1, out=torch.empty(0)))
    assert torch_tpu.metrics()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cumsum(t, 1, out=torch.empty(0))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.index_select(t, 0, torch.tensor([0], device="tpu"), out=torch.empty(0, dtype=torch.long, device="tpu"))


def test_segment_reduce_backward_treats_nan_as_the_cpu_does():
    data = [1.0, float("nan"), 3.0, 4.0, 5.0, 5.0, 0.0, 2.0]
    for reduce, initial in (("max", None), ("min", 1000.0), ("prod", None), ("prod", 2.0), ("mean", 0.0)):
        grads = []
        for device in ("cpu", "tpu"):
            lengths = torch.tensor([1, 2, 3, 2, 0], device=device)
            x = torch.tensor(data, dtype=torch.float64, device=device, requires_grad=True)
            y = torch._segment_reduce(x, reduce, lengths=lengths, axis=0, initial=initial)
            (y * torch.tensor([1.0, 2.0, -3.0, 4.0, 5.0], dtype=torch.float64, device=device)).sum().backward()
            grads.append(x.grad.cpu())
        torch.testing.assert_close(grads[1], grads[0], equal_nan=True, msg=f"{reduce} {initial}")
    with pytest.raises(RuntimeError, match="Expected all rows of lengths along axis to sum"):
        torch._segment_reduce(torch.arange(6.0, device="tpu"), "sum", lengths=torch.tensor([0, 2, 3, 0], device="tpu"),
                              axis=0, unsafe=False)


def test_complex_scatter_reduce_mean_and_prod():
    base, src = torch.randn(5, 3, dtype=torch.complex128), torch.randn(3, 3, dtype=torch.complex128)
    index = torch.tensor([[0, 1, 2], [0, 0, 4], [3, 3, 3]])
    for reduce in ("mean", "prod", "sum"):
        for include_self in (True, False):
            assert_close_cpu(base.tpu().scatter_reduce(0, index.tpu(), src.tpu(), reduce, include_self=include_self),
                             base.scatter_reduce(0, index, src, reduce, include_self=include_self),
                             rtol=1e-12, atol=1e-12)


def test_deterministic_mode_fills_new_memory_as_the_cpu_does():
    from torch.testing._internal.common_utils import DeterministicGuard
    with DeterministicGuard(True, fill_uninitialized_memory=True):
        assert torch.empty(3, 4, device="tpu").isnan().all().item()
        assert torch.empty_strided((3, 2), (1, 3), device="tpu").isnan().all().item()
        assert torch.empty(5, dtype=torch.int16, device="tpu").eq(torch.iinfo(torch.int16).max).all().item()
        grown = torch.zeros(3, device="tpu")
        grown.resize_(6)  # the old elements keep their values, the new ones read NaN
        assert torch.equal(grown[:3].cpu(), torch.zeros(3)) and grown[3:].isnan().all().item()
    assert torch.empty(3, device="tpu").cpu().eq(0).all()  # outside the mode: no fill


def test_lazy_clone_is_an_independent_copy():
    t = torch.arange(4.0, device="tpu")
    clone = t._lazy_clone()
    clone.add_(1)
    assert torch.equal(t.cpu(), torch.arange(4.0)) and torch.equal(clone.cpu(), torch.arange(4.0) + 1)


def test_logcumsumexp_of_equal_infinities_and_uint64_scalars_past_int64():
    x = torch.tensor([-float("inf"), -float("inf"), 1.0, float("inf"), float("inf"), float("nan"), 1.0])
    torch.testing.assert_close(x.tpu().logcumsumexp(0).cpu(), x.logcumsumexp(0), equal_nan=True)
    biggest = 2**64 - 1
    filled = torch.empty(3, dtype=torch.uint64, device="tpu").fill_(biggest)
    assert filled.cpu().tolist() == [biggest] * 3
    assert torch.full((2,), 2**63 + 5, dtype=torch.uint64, device="tpu").cpu().tolist() == [2**63 + 5] * 2


def test_sparse_coo_tensors_declared_coalesced_and_sparse_out_arguments():
    """PyTorch's test_sparse found: a COO tensor built with is_coalesced=True asserted inside
    PyTorch (its index check's dispatch stub had no tpu kernel), and torch.zeros(..., out=)
    into a sparse tensor of other dims or sizes failed copying the result back."""
    indices, values = torch.tensor([[0, 1, 1], [2, 0, 2]]), torch.tensor([3.0, 4.0, 5.0])
    x = torch.sparse_coo_tensor(indices.tpu(), values.tpu(), (2, 3), is_coalesced=True)
    assert x.is_coalesced() and torch.equal(x.to_dense().cpu(), torch.sparse_coo_tensor(indices, values, (2, 3)).to_dense())
    with pytest.raises(RuntimeError, match="cannot set is_coalesced to true"):
        torch.sparse_coo_tensor(torch.tensor([[1, 0], [0, 0]]).tpu(), values[:2].tpu(), (2, 3), is_coalesced=True,
                                check_invariants=True)
    out = torch.sparse_coo_tensor(indices.tpu(), values.tpu(), (2, 3))
    torch.zeros(4, 5, 6, out=out)
    assert out.shape == (4, 5, 6) and out.sparse_dim() == 3 and out._nnz() == 0 and out.device.type == "tpu"


def test_sparse_operators_with_composite_dense_kernels_run_on_sparse_tpu_tensors():
    # mul, add and sin have a dense composite kernel besides their sparse CPU one:
    # a sparse tpu tensor reaches the sparse kernel, not the composite.
    dense = torch.tensor([[0.0, 1.5], [2.0, 0.0], [0.0, -3.0]])
    coo = dense.to_sparse()
    for tpu, cpu in ((coo.tpu(), coo), (coo.tpu().coalesce(), coo.coalesce())):
        for f in (lambda s: s * 2, lambda s: s + s, torch.sin, lambda s: torch.sparse.sum(s, 0)):
            got, want = f(tpu), f(cpu)
            assert got.device.type == "tpu" and got.layout == want.layout
            assert_close_cpu(got.to_dense(), want.to_dense())


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr"])
def test_sparse_compressed_tensors_live_on_tpu(layout):
    dense = torch.tensor([[0.0, 1.0, 0.0, 2.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 4.0, 5.0], [0.0, 0.0, 0.0, 6.0]])
    convert = {"csr": lambda t: t.to_sparse_csr(), "csc": lambda t: t.to_sparse_csc(),
               "bsr": lambda t: t.to_sparse_bsr((2, 2))}[layout]
    cpu = convert(dense)
    tpu = convert(dense.tpu())
    assert tpu.device.type == "tpu" and tpu.layout == cpu.layout and tpu._nnz() == cpu._nnz()
    assert tpu.values().device.type == "tpu"
    assert torch.equal(tpu.to_dense().cpu(), dense)
    assert torch.equal(cpu.tpu().cpu().to_dense(), dense)  # across devices both ways
    copy = tpu.clone()
    copy.copy_(convert(dense.tpu() * 3))
    assert torch.equal(copy.to_dense().cpu(), dense * 3) and torch.equal(tpu.to_dense().cpu(), dense)
    if layout == "csr":
        assert torch.equal(tpu.crow_indices().cpu(), cpu.crow_indices())
        assert torch.equal(tpu.col_indices().cpu(), cpu.col_indices())
        assert_close_cpu((tpu * 2).to_dense(), (cpu * 2).to_dense())
        assert_close_cpu(torch.sin(tpu).to_dense(), torch.sin(cpu).to_dense())
        assert_close_cpu(tpu @ dense.tpu(), cpu @ dense)
        assert torch.equal(tpu.to_sparse().to_dense().cpu(), dense)
        # A masked reduction with a CSR mask (what torch.masked does with sparse masks).
        mask = (dense != 0).tpu().to_sparse_csr()
        assert_close_cpu(torch.masked._ops.sum(dense.tpu(), 1, mask=mask), dense.sum(1))


def test_nested_tensors_live_on_tpu(mode):
    """PyTorch's test_nestedtensor found every strided nested-tensor op on tpu unregistered
    ("Could not run 'aten::transpose.int' with arguments from the 'NestedTensortpu' backend")."""
    torch.manual_seed(0)
    parts = [torch.randn(2, 3), torch.randn(4, 3), torch.randn(1, 3)]
    cpu = torch.nested.nested_tensor(parts)
    tpu = torch.nested.nested_tensor([p.tpu() for p in parts])
    assert tpu.is_nested and tpu.device.type == "tpu"

    def same(got, want):
        assert got.is_nested and got.device.type == "tpu"
        for g, w in zip(got.unbind(), want.unbind(), strict=True):
            assert_close_cpu(g, w)

    same((tpu * 2 + 1).abs(), (cpu * 2 + 1).abs())
    same(tpu.transpose(1, 2).contiguous(), cpu.transpose(1, 2).contiguous())
    same(torch.nn.functional.softmax(tpu, -1), torch.nn.functional.softmax(cpu, -1))
    weight, bias = torch.randn(5, 3), torch.randn(5)
    same(torch.nn.functional.linear(tpu, weight.tpu(), bias.tpu()), torch.nn.functional.linear(cpu, weight, bias))
    other = [torch.randn(3, 2), torch.randn(3, 4), torch.randn(3, 3)]
    same(torch.bmm(tpu, torch.nested.nested_tensor([o.tpu() for o in other])),
         torch.bmm(cpu, torch.nested.nested_tensor(other)))
    assert_close_cpu(torch.nested.to_padded_tensor(tpu, -1.0), torch.nested.to_padded_tensor(cpu, -1.0))
    filled = tpu.clone().fill_(3.0)
    assert all(torch.equal(t.cpu(), torch.full_like(p, 3.0)) for t, p in zip(filled.unbind(), parts))
    assert all(torch.equal(t.cpu(), p) for t, p in zip(tpu.unbind(), parts))  # the clone's fill left tpu as it was
    # Backward through to_padded_tensor makes a nested tensor from a padded one.
    leaf = torch.nested.nested_tensor([p.tpu() for p in parts], requires_grad=True)
    (torch.nested.to_padded_tensor(leaf * 3, 0.0) ** 2).sum().backward()
    for g, p in zip(leaf.grad.unbind(), parts, strict=True):
        assert_close_cpu(g, 18 * p)


def test_writes_into_memory_an_input_partly_shares_are_refused():
    data = torch.randn(18, device="tpu", dtype=torch.float64)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        data[0:9].copy_(data[1:10])
    with pytest.raises(RuntimeError, match="unsupported operation"):
        data[0:9].add_(data[1:10])
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.neg(data[1:10], out=data[0:9])
    square = data[:9].view(3, 3)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        square.t().copy_(square)
    data[0:9].copy_(data[0:9])  # the same memory: allowed, as on the CPU
    data[0:9].copy_(data[9:18])
    assert torch.equal(data[0:9].cpu(), data[9:18].cpu())
    # Operators that run on the CPU check before their arguments are copied there.
    x = torch.rand(3, device="tpu")
    with pytest.raises(RuntimeError, match="unsupported operation"):
        x[:-1].__ilshift__(x[1:])


def test_index_copy_and_put_refuse_overlapping_arguments():
    expanded = torch.rand(1, device="tpu").expand(6)
    y = torch.rand(6, device="tpu")
    ind = torch.tensor([2, 1, 0], device="tpu")
    value = torch.rand(3, device="tpu")
    for write in (lambda: expanded.index_copy_(0, ind, value), lambda: y.index_copy_(0, ind, y[:3]),
                  lambda: ind.index_copy_(0, ind, ind.clone()), lambda: ind.index_copy_(0, ind.clone(), ind),
                  lambda: expanded.put_(ind, value), lambda: y.put_(ind[0], y[0]), lambda: ind.put_(ind, ind),
                  lambda: y.index_add_(0, ind, y[:3])):
        with pytest.raises(RuntimeError, match="unsupported operation"):
            write()
    y.index_copy_(0, ind, value)
    assert torch.equal(y[:3].cpu(), value.cpu().flip(0))


def test_gather_takes_a_0d_and_a_1_element_index_alike():
    zero_d, one_d = torch.randn((), device="tpu"), torch.randn(1, device="tpu")
    for src in (zero_d, one_d):
        for index_shape in ((), (1,)):
            index = torch.zeros(index_shape, dtype=torch.long, device="tpu")
            got = torch.gather(src, 0, index)
            assert got.shape == index_shape and got.cpu().item() == src.cpu().reshape(-1)[0].item()
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        torch.gather(torch.randn(2, 3, device="tpu"), 0, torch.zeros(2, dtype=torch.long, device="tpu"))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_raises_the_nondeterministic_alert(dims):
    from torch.testing._internal.common_utils import DeterministicGuard
    module = getattr(torch.nn, f"MaxUnpool{dims}d")(3, 1)
    x = torch.randn((1, 1) + (7,) * dims, device="tpu")
    indices = torch.zeros_like(x, dtype=torch.long)
    with DeterministicGuard(True):
        with pytest.raises(RuntimeError, match=f"max_unpooling{max(dims, 2)}d_forward_out does not have a "
                                               "deterministic implementation"):
            module(x, indices)
    module(x, indices)  # outside the mode: no alert


def test_segment_reduce_takes_amax_and_amin():
    data, lengths = torch.tensor([1.0, 5.0, -2.0, 3.0, 0.5]), torch.tensor([2, 0, 3])
    for reduce in ("amax", "amin"):
        assert_close_cpu(torch._segment_reduce(data.tpu(), reduce, lengths=lengths.tpu()),
                         torch._segment_reduce(data, reduce, lengths=lengths))


def test_foreach_ops_broadcast_the_tensors_at_one_index():
    # ASGD's foreach step multiplies its parameters by 0-d step factors.
    params = [torch.randn(3, 4), torch.randn(5)]
    factors = [torch.tensor(0.5), torch.tensor(2.0)]
    ones = [torch.ones(()), torch.ones(())]
    tpu = [p.tpu() for p in params]
    torch._foreach_addcmul_(tpu, [f.tpu() for f in factors], [o.tpu() for o in ones], value=3)
    torch._foreach_addcmul_(params, factors, ones, value=3)
    for got, want in zip(tpu, params):
        assert_close_cpu(got, want)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch._foreach_add_([torch.zeros((), device="tpu")], [torch.ones(3, device="tpu")])
    grown = torch._foreach_add([torch.zeros((), device="tpu")], [torch.ones(3, device="tpu")])
    assert grown[0].shape == (3,)


def test_asgd_foreach_matches_its_for_loop():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    results = []
    for foreach in (False, True):
        m = nn.Linear(4, 3).tpu()
        m.load_state_dict(model.state_dict())
        opt = torch.optim.ASGD(m.parameters(), lr=0.1, foreach=foreach)
        for _ in range(3):
            opt.zero_grad()
            m(torch.ones(2, 4, device="tpu")).square().sum().backward()
            opt.step()
        results.append([p.detach().cpu() for p in m.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


def _train_with(optimizer, options, dtype=torch.float32, steps=4, scaler=False):
    """Parameters after `steps` steps of a small model on tpu, with the optimizer's options."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).to("tpu", dtype)
    opt = getattr(torch.optim, optimizer)(model.parameters(), **options)
    grad_scaler = torch.amp.GradScaler("tpu", init_scale=1024.0) if scaler else None
    x = torch.randn(6, 5).to("tpu", dtype)
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x).square().mean()
        if grad_scaler:
            grad_scaler.scale(loss).backward()
            grad_scaler.step(opt)
            grad_scaler.update()
        else:
            loss.backward()
            opt.step()
    return [p.detach().cpu() if dtype == torch.float64 else p.detach().float().cpu() for p in model.parameters()]


@pytest.mark.parametrize("optimizer,options", [
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("AdamW", {"lr": torch.tensor(0.05), "amsgrad": True}),
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.2, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1}),
])
def test_fused_optimizers_run_on_the_device_and_match_the_for_loop(optimizer, options):
    metrics = torch_tpu.metrics
    torch_tpu.reset_metrics()
    fused = _train_with(optimizer, dict(options, fused=True))
    assert not metrics()["cpu_fallbacks"]
    loop = _train_with(optimizer, dict(options, foreach=False))
    for a, b in zip(fused, loop):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("optimizer", ["Adam", "SGD"])
def test_fused_optimizers_with_grad_scaler_and_half_parameters(optimizer):
    options = {"lr": 0.05, "momentum": 0.9} if optimizer == "SGD" else {"lr": 0.05}
    # GradScaler hands the fused step grad_scale and found_inf; steps with infs are skipped.
    fused = _train_with(optimizer, dict(options, fused=True), scaler=True)
    loop = _train_with(optimizer, dict(options, foreach=False), scaler=True)
    for a, b in zip(fused, loop):
        torch.testing.assert_close(a, b)
    fused16 = _train_with(optimizer, dict(options, fused=True), dtype=torch.bfloat16)
    loop16 = _train_with(optimizer, dict(options, foreach=False), dtype=torch.bfloat16)
    for a, b in zip(fused16, loop16):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)


def test_a_fused_step_skipped_for_found_inf_changes_nothing():
    params = [torch.randn(3, device="tpu")]
    grads = [torch.randn(3, device="tpu")]
    exp_avgs, exp_avg_sqs = [torch.zeros(3, device="tpu")], [torch.zeros(3, device="tpu")]
    steps = [torch.tensor(1.0, device="tpu")]
    before = [t[0].cpu().clone() for t in (params, grads, exp_avgs, exp_avg_sqs)]
    torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, lr=0.1, beta1=0.9, beta2=0.999,
                       weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
                       grad_scale=torch.tensor(4.0, device="tpu"), found_inf=torch.tensor(1.0, device="tpu"))
    for old, t in zip(before, (params, grads, exp_avgs, exp_avg_sqs)):
        assert torch.equal(old, t[0].cpu())
    with pytest.raises(RuntimeError, match="expected 1 exp_avgs, got 0"):
        torch._fused_adam_(params, grads, [], exp_avg_sqs, [], steps, lr=0.1, beta1=0.9, beta2=0.999,
                           weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)


def test_in_place_foreach_ops_refuse_results_their_tensors_cannot_hold():
    ints = [torch.arange(4, dtype=torch.int32, device="tpu"), torch.ones(2, dtype=torch.int32, device="tpu")]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        torch._foreach_add_(ints, 0.5)
    bools = [torch.ones(3, dtype=torch.bool, device="tpu")]
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        torch._foreach_mul_(bools, 3)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        torch._foreach_addcdiv_(ints, ints, ints)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        torch._foreach_div_(ints, [2, 3])
    torch._foreach_add_(ints, 2)
    assert ints[0].cpu().tolist() == [2, 3, 4, 5]


@pytest.mark.parametrize("optimizer,options", [("Adam", {"lr": 0.05, "weight_decay": 0.1}),
                                               ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                               ("Adagrad", {"lr": 0.1, "lr_decay": 0.01})])
def test_fused_optimizers_keep_float64_precision(optimizer, options):
    fused = _train_with(optimizer, dict(options, fused=True), dtype=torch.float64)
    loop = _train_with(optimizer, dict(options, foreach=False), dtype=torch.float64)
    for a, b in zip(fused, loop):
        torch.testing.assert_close(a.double(), b.double(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["cholesky", "inv", "det", "svdvals", "eigvalsh", "matrix_exp", "lu_factor", "qr",
                                  "solve_triangular"])
def test_complex_linear_algebra_runs_on_the_cpu(name):
    # The decompositions are lowered for real dtypes; complex ones take the CPU
    # fallback (with its warning), as an operator without a lowering does.
    g = torch.Generator().manual_seed(0)
    a = torch.randn(2, 4, 4, dtype=torch.complex128, generator=g)
    a = a @ a.mH + 4 * torch.eye(4)
    fn = {"lu_factor": lambda x: torch.linalg.lu_factor(x)[0], "qr": lambda x: torch.linalg.qr(x)[1],
          "solve_triangular": lambda x: torch.linalg.solve_triangular(x.tril(), x, upper=False)}.get(
              name, getattr(torch.linalg, name))
    torch_tpu.reset_metrics()
    with pytest.warns(UserWarning, match="runs on the CPU"):
        got = fn(a.tpu())
    assert_close_cpu(got, fn(a))
    assert torch_tpu.metrics()["cpu_fallbacks"]
    # Real inputs stay on the device.
    torch_tpu.reset_metrics()
    assert_close_cpu(fn(a.real.tpu()), fn(a.real), rtol=1e-9, atol=1e-9)
    assert not torch_tpu.metrics()["cpu_fallbacks"]


def test_cholesky_info_names_the_first_minor_that_is_not_positive_definite():
    g = torch.Generator().manual_seed(1)
    b = torch.randn(6, 7, 7, dtype=torch.float64, generator=g)
    b = b @ b.mT
    for i in range(6):
        b[i] -= 2.0 * i * torch.eye(7, dtype=torch.float64)
    b[1, 3, 3] = -50.0
    for upper in (False, True):
        assert torch.equal(torch.linalg.cholesky_ex(b.tpu(), upper=upper).info.cpu(),
                           torch.linalg.cholesky_ex(b, upper=upper).info)
    singular = torch.eye(3).repeat(5, 1, 1)
    singular[3, 1, 1] = 0
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 3\).*minor of order 2 is"):
        torch.linalg.cholesky(singular.tpu())
    with pytest.raises(torch.linalg.LinAlgError, match=r"^linalg.cholesky_ex: .*order 2"):
        torch.linalg.cholesky_ex(singular[3].tpu(), check_errors=True)


def test_linalg_out_arguments_take_only_the_result_dtype():
    a = (2 * torch.eye(3)).tpu()
    for out_dtype, kind in ((torch.float64, "double"), (torch.int32, "int")):
        with pytest.raises(RuntimeError, match=f"Expected out tensor to have dtype float, but got {kind} instead"):
            torch.linalg.inv(a, out=torch.empty(0, dtype=out_dtype, device="tpu"))
    out = torch.empty(0, device="tpu")
    torch.linalg.cholesky(a, out=out)
    assert_close_cpu(out, torch.linalg.cholesky(2 * torch.eye(3)))
    # Elementwise out= forms still cast as TensorIterator does.
    wide = torch.empty(3, 3, dtype=torch.float64, device="tpu")
    torch.add(a, a, out=wide)
    assert wide.dtype == torch.float64


def test_addr_checks_its_scalars_as_the_device_kernels_do():
    m, v = torch.ones(3, 3, device="tpu"), torch.ones(3, device="tpu")
    with pytest.raises(RuntimeError, match="Boolean beta only supported for Boolean results"):
        torch.addr(m, v, v, beta=True)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        torch.addr(m, v, v, alpha=True)
    with pytest.raises(RuntimeError, match="argument beta must not be a floating point number"):
        torch.addr(m.long(), v.long(), v.long(), beta=0.5)
    assert_close_cpu(torch.addr(m, v, v, beta=0.5, alpha=2), torch.addr(m.cpu(), v.cpu(), v.cpu(), beta=0.5, alpha=2))
    flags = torch.tensor([True, False, True])
    assert_close_cpu(torch.addr(flags.tpu().outer(flags.tpu()), flags.tpu(), flags.tpu(), beta=True, alpha=True),
                     torch.addr(flags.outer(flags), flags, flags, beta=True, alpha=True))


@pytest.mark.parametrize("fn", [torch.tanh, torch.sigmoid, torch.nn.functional.tanhshrink])
def test_complex_gradients_of_tanh_and_sigmoid_are_conjugated(fn):
    # PyTorch's complex gradients are conjugate Wirtinger derivatives: grad * conj(f'(z)).
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, dtype=torch.complex128, generator=g)
    upstream = torch.randn(6, dtype=torch.complex128, generator=g)
    expected, = torch.autograd.grad(fn(z.requires_grad_()), z, upstream)
    zt = z.detach().tpu().requires_grad_()
    got, = torch.autograd.grad(fn(zt), zt, upstream.tpu())
    assert_close_cpu(got, expected, rtol=1e-10, atol=1e-10)


def test_matrix_product_and_linalg_argument_errors_match_the_cpu():
    b, m, v = torch.rand(2, 2, 2, device="tpu"), torch.rand(2, 2, device="tpu"), torch.rand(2, device="tpu")
    with pytest.raises(RuntimeError, match="Input dtypes must be the same, got: input int, batch1: float"):
        torch.baddbmm(b.int(), b, b, beta=0)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Half and Float"):
        torch.addmm(m.half(), m, m)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
        torch.addbmm(m.half(), b, b)
    with pytest.raises(RuntimeError, match="addmv input tensors must have the same dtype"):
        torch.addmv(v.half(), m, v)
    with pytest.raises(RuntimeError, match="Expected a non-complex scalar"):
        torch.linalg.vector_norm(v, ord=1j)
    with pytest.raises(RuntimeError, match="linalg.slogdet: Low precision dtypes not supported. Got BFloat16"):
        torch.linalg.slogdet(m.bfloat16())
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got int instead"):
        out = torch.empty(0, dtype=torch.int, device="tpu")
        torch.triangular_solve(m, m + 2 * torch.eye(2, device="tpu"), out=(out, out.clone()))


def test_geqrf_leaves_its_reflectors_column_major_as_lapack():
    a = torch.randn(2, 5, 3)
    reflectors, tau = torch.geqrf(a.tpu())
    assert reflectors.mT.is_contiguous()
    expected = torch.geqrf(a)
    q = torch.linalg.householder_product(reflectors, tau)
    assert_close_cpu(q, torch.linalg.householder_product(*expected), rtol=1e-4, atol=1e-4)
    c = torch.randn(2, 5, 4)
    assert_close_cpu(torch.ormqr(reflectors, tau, c.tpu()), torch.ormqr(*expected, c), rtol=1e-4, atol=1e-4)


def test_int4_weight_only_matmul_in_cudas_interface():
    # What torchao / gpt-fast call on CUDA: quantize a [k, n] weight to 4 bits per
    # group of 32 along k, pack it, multiply.
    from torch.testing._internal.common_quantization import _group_quantize_tensor

    g = torch.Generator().manual_seed(0)
    m, k, n, group = 16, 64, 48, 32
    a = torch.rand(m, k, generator=g).bfloat16()
    b = torch.rand(k, n, generator=g).bfloat16()
    q, scales_and_zeros = _group_quantize_tensor(b.tpu(), n_bit=4, q_group_size=group)
    packed = torch._convert_weight_to_int4pack(q, 2)
    assert packed.dtype == torch.int32 and packed.shape == (n // 8, k // 32, 32, 1)
    got = torch._weight_int4pack_mm(a.tpu(), packed, group, scales_and_zeros)
    assert got.dtype == torch.bfloat16 and got.device.type == "tpu"
    # Exactly the dequantized weight's product (up to bfloat16 rounding), and near the unquantized one.
    q_cpu = q.cpu().int()
    values = torch.stack([q_cpu >> 4, q_cpu & 15], -1).reshape(n, k).float()
    sz = scales_and_zeros.cpu().float().permute(1, 0, 2).repeat_interleave(group, 1)
    dequantized = (values - 8) * sz[..., 0] + sz[..., 1]
    assert_close_cpu(got, (a.float() @ dequantized.t()).bfloat16(), rtol=1e-2, atol=1e-2)
    reference = a.float() @ b.float()
    assert ((got.cpu().float() - reference).abs() / reference).mean() < 0.05
    with pytest.raises(RuntimeError, match="innerKTiles must be 2, 4, or 8"):
        torch._convert_weight_to_int4pack(q, 3)


def test_python_shift_operators_run_on_the_device():
    x = torch.tensor([1, 2, -8, 100], dtype=torch.int32)
    counts = torch.tensor([1, 2, 3, 0], dtype=torch.int32)
    t = x.tpu()
    torch_tpu.reset_metrics()
    assert_close_cpu(t << 2, x << 2)
    assert_close_cpu(t >> 1, x >> 1)
    assert_close_cpu(t << counts.tpu(), x << counts)
    t <<= 3
    t >>= counts.tpu()
    assert_close_cpu(t, (x << 3) >> counts)
    assert not torch_tpu.metrics()["cpu_fallbacks"]


def test_operators_on_the_cpu_fallback_refuse_cpu_tensors_beside_tpu_ones():
    # As CUDA's kernels: a CPU tensor beside device ones is an error, a CPU 0-d tensor is a scalar.
    a, b = torch.rand(2, 3, 3), torch.rand(2, 3, 2)
    with pytest.raises(RuntimeError, match=r"same device, but found at least two devices, tpu:0 and cpu.*argument b"):
        torch.linalg.lstsq(a.tpu(), b)
    assert_close_cpu(torch.linalg.lstsq(a.tpu(), b.tpu()).solution, torch.linalg.lstsq(a, b).solution,
                     rtol=1e-4, atol=1e-4)
    # In a process of its own: the fallback warns once per operator, which test_fallback.py checks.
    r = run_python("import torch\nx = torch.rand(5) + 0.5\n"
                   "print(torch.allclose(torch.igamma(x.tpu(), torch.tensor(2.0)).cpu(), torch.igamma(x, torch.tensor(2.0))))")
    assert r.returncode == 0 and r.stdout.split()[-1] == "True", r.stderr[-2000:]


def test_lazy_clones_share_contents_until_one_of_them_is_written(mode):
    # Tensor._lazy_clone (what CPU and CUDA make copy-on-write): both storages are COW and share
    # their data pointer; the first write gives the writer its own copy, and the last sharer takes
    # the original memory back.
    t = torch.tensor([[0.0, 1.0], [2.0, 3.0]], device="tpu")
    t.mul_(2)  # the contents may still be pending (fused mode)
    data = torch._C._data_address(t)
    clone = t._lazy_clone()
    assert torch._C._is_cow_tensor(t) and torch._C._is_cow_tensor(clone)
    assert torch._C._data_address(clone) == data and torch._C._storage_address(clone) != torch._C._storage_address(t)
    total = t + clone  # reading does not copy
    assert torch._C._is_cow_tensor(t) and torch._C._is_cow_tensor(clone)
    t.view(4).add_(1)
    assert not torch._C._is_cow_tensor(t) and torch._C._data_address(t) != data
    assert torch._C._is_cow_tensor(clone) and torch._C._data_address(clone) == data
    clone.sub_(1)
    assert not torch._C._is_cow_tensor(clone) and torch._C._data_address(clone) == data
    assert t.cpu().tolist() == [[1.0, 3.0], [5.0, 7.0]]
    assert clone.cpu().tolist() == [[-1.0, 1.0], [3.0, 5.0]]
    assert total.cpu().tolist() == [[0.0, 4.0], [8.0, 12.0]]
    # Every kind of write copies first: copy_ from the host, resize_, a compiled graph's in-place update.
    a = torch.ones(3, device="tpu")
    b, c, d = a._lazy_clone(), a._lazy_clone(), a._lazy_clone()
    b.copy_(torch.tensor([7.0, 8.0, 9.0]))
    c.resize_(6)
    torch.compile(lambda x: x.sub_(0.5), backend="tpu")(d)
    assert a.cpu().tolist() == [1.0] * 3 and b.cpu().tolist() == [7.0, 8.0, 9.0]
    assert c[:3].cpu().tolist() == [1.0] * 3 and d.cpu().tolist() == [0.5] * 3
    # As on CPU: materializing inside an at::parallel_for loop is an error.
    with pytest.raises(RuntimeError, match="Materializing a storage in the loop function of at::parallel_for"):
        torch._test_parallel_materialize(torch.ones(2, device="tpu")._lazy_clone(), 1, False)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_group_norm_takes_any_layout_and_keeps_it(memory_format):
    # PyTorch's composite views the input as [N, G, -1], which a channels_last input cannot be.
    torch.manual_seed(0)
    m = nn.GroupNorm(3, 6)
    nn.init.uniform_(m.weight), nn.init.uniform_(m.bias)
    x = torch.randn(4, 6, 5, 5).to(memory_format=memory_format).requires_grad_()
    t = x.detach().tpu().requires_grad_()
    mt = nn.GroupNorm(3, 6).tpu()
    mt.load_state_dict(m.state_dict())
    y, yt = m(x), mt(t)
    assert yt.is_contiguous(memory_format=memory_format)
    assert_close_cpu(yt, y, rtol=1e-5, atol=1e-5)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    assert_close_cpu(t.grad, x.grad, rtol=1e-4, atol=1e-4)
    assert_close_cpu(mt.weight.grad, m.weight.grad, rtol=1e-4, atol=1e-4)


def test_channels_last_inputs_give_channels_last_outputs_and_gradients():
    # As CPU and CUDA: convolutions (input or weight channels_last), batch norm, pooling,
    # padding and PReLU keep the input's memory format in their results and input gradients.
    torch.manual_seed(0)
    layers = [nn.Conv2d(3, 4, 3), nn.ConvTranspose2d(3, 4, 3, stride=2), nn.BatchNorm2d(3), nn.MaxPool2d(2),
              nn.AvgPool2d(2), nn.AdaptiveMaxPool2d(3), nn.ReflectionPad2d(1), nn.ReplicationPad2d(1), nn.PReLU(3)]
    for layer in layers:
        for weight_format, input_format in [(torch.contiguous_format, torch.channels_last),
                                            (torch.channels_last, torch.contiguous_format)]:
            if weight_format == torch.channels_last and not any(p.dim() == 4 for p in layer.parameters()):
                continue
            m = layer.to(memory_format=weight_format)
            x = torch.randn(2, 3, 8, 8).to(memory_format=input_format).requires_grad_()
            t = x.detach().tpu().requires_grad_()
            mt = copy.deepcopy(m).tpu()
            y, yt = m(x), mt(t)
            assert yt.is_contiguous(memory_format=torch.channels_last), (layer, weight_format)
            assert_close_cpu(yt, y, rtol=1e-4, atol=1e-4)
            y.sum().backward()
            yt.sum().backward()
            assert t.grad.is_contiguous(memory_format=torch.channels_last) == x.grad.is_contiguous(
                memory_format=torch.channels_last), (layer, weight_format)
            assert_close_cpu(t.grad, x.grad, rtol=1e-4, atol=1e-4)
            for p, pt in zip(m.parameters(), mt.parameters()):
                assert pt.grad.is_contiguous(memory_format=torch.channels_last) == p.grad.is_contiguous(memory_format=torch.channels_last)
                p.grad = None


def test_matrix_products_refuse_out_tensors_of_another_dtype():
    # As CPU and CUDA: the matmul family's out= takes only the product's dtype; addr's casts as
    # TensorIterator does (to a dtype the result can be cast to).
    a, b, m, s = torch.randn(3), torch.randn(4), torch.randn(3, 4), torch.randn(3, 3)
    t = lambda x: x.tpu()
    for f in [lambda out: torch.mm(t(s), t(m), out=out), lambda out: torch.addmm(t(m), t(s), t(m), out=out)]:
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got long int instead"):
            f(torch.empty(3, 4, dtype=torch.long, device="tpu"))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.addr(t(m), t(a), t(b), out=torch.empty(3, 4, dtype=torch.long, device="tpu"))
    out = torch.empty(3, 4, dtype=torch.double, device="tpu")
    torch.addr(t(m), t(a), t(b), out=out)
    assert_close_cpu(out, torch.addr(m, a, b).double())


def test_layer_norm_and_pooling_argument_errors_match_the_cpu():
    x = torch.randn(1, 2, 3, device="tpu")
    with pytest.raises(RuntimeError, match="Expected normalized_shape to be at least 1-dimensional"):
        torch.native_layer_norm(x, (), None, None, 1e-5)
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        torch.native_layer_norm(x, (1, 2, 3), torch.ones(1, 2, device="tpu"), None, 1e-5)
    with pytest.raises(RuntimeError, match="Expected bias to be of same shape as normalized_shape"):
        torch.native_layer_norm(x, (1, 2, 3), None, torch.ones(1, 2, device="tpu"), 1e-5)
    with pytest.raises(RuntimeError, match="pad must be non-negative"):
        torch.nn.functional.max_pool3d(torch.randn(1, 2, 4, 4, 4, device="tpu"), 3, padding=-1)


def test_successive_random_draws_are_independent_streams():
    # Each draw gets its own ThreeFry key: with the counter alone telling draws apart, a draw
    # repeated its predecessor's values from the third on (PyTorch's OpInfo samples, made on
    # the device, then held equal inputs: x / x in the floor-division gradient tests).
    torch.manual_seed(0)
    x = torch.rand(1000, device="tpu").cpu()
    for draw in (lambda: torch.rand(1000, device="tpu"), lambda: torch.rand(7, device="tpu"),
                 lambda: torch.rand(3, 5, device="tpu")):
        y = draw().cpu().reshape(-1)
        windows = x.unfold(0, len(y), 1)
        assert not (windows == y).all(1).any()
    torch.manual_seed(0)
    assert torch.equal(torch.rand(1000, device="tpu").cpu(), x)  # the same seed, the same values
    # A double has 53 random bits, as on CPU (it had a float's 24).
    doubles = torch.rand(1000, dtype=torch.float64, device="tpu").cpu()
    assert (doubles != doubles.float().double()).float().mean() > 0.99
    assert 0 <= doubles.min() and doubles.max() < 1


def test_pooling_argument_and_empty_input_errors_read_as_the_cpus():
    # From PyTorch's nn/test_pooling.py: the same checks, in the same order, as CPU.
    import torch.nn.functional as F
    x = torch.ones(1, 2, 4, 4, device="tpu")
    for pool in (F.max_pool2d, F.avg_pool2d):
        with pytest.raises(RuntimeError, match="stride should not be zero"):
            pool(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="3D or 4D \\(batch mode\\) tensor with optional 0 dim batch size"):
        F.avg_pool2d(torch.randn(16, 0, 20, 32, device="tpu"), 3)
    assert F.max_pool2d(torch.randn(0, 16, 20, 32, device="tpu"), 3).shape == (0, 16, 6, 10)
    # Adaptive pooling: floating inputs only, an empty batch is fine, an output size of 0
    # gives an empty result whose gradient is refused.
    for pool in (F.adaptive_avg_pool2d, F.adaptive_max_pool2d):
        with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
            pool(torch.ones(4, 4, 4, dtype=torch.long, device="tpu"), 2)
        y = torch.randn(1, 8, 5, 5, device="tpu", requires_grad=True)
        empty = pool(y, 0)
        assert (empty[0] if isinstance(empty, tuple) else empty).shape == (1, 8, 0, 0)
        with pytest.raises(RuntimeError, match="Expected grad_output to have non-zero size for non-batch dimensions"):
            (empty[0] if isinstance(empty, tuple) else empty).sum().backward()
    assert F.adaptive_max_pool1d(torch.randn(0, 16, 50, device="tpu"), 3).shape == (0, 16, 3)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        F.adaptive_max_pool1d(torch.randn(1, 0, 50, device="tpu"), 3)


def test_fractional_max_pool_checks_and_empty_outputs_read_as_the_cpus():
    import torch.nn.functional as F
    x = torch.randn(1, 16, 32, 32, device="tpu")
    assert nn.FractionalMaxPool2d([2, 2], output_size=[0, 1])(x).shape == (1, 16, 0, 1)
    assert nn.FractionalMaxPool2d(3, output_ratio=0.5)(torch.ones(0, 16, 50, 32, device="tpu")).shape == (0, 16, 25, 16)
    with pytest.raises(RuntimeError, match="Expected input to have non-zero size for non-batch dimensions"):
        nn.FractionalMaxPool2d(3, output_ratio=0.5)(torch.randn(1, 0, 50, 32, device="tpu"))
    samples = torch.rand(0, 16, 2, device="tpu")
    with pytest.raises(RuntimeError, match="Expect _random_samples.size\\(0\\) no less then input batch size"):
        F.fractional_max_pool2d(x, 2, output_size=1, _random_samples=samples)
    with pytest.raises(RuntimeError, match="kernel_size must either be a single int or tuple of Ints"):
        torch._C._nn.fractional_max_pool2d(x, (), (1, 1), torch.rand(1, 16, 2, device="tpu"))
    with pytest.raises(RuntimeError, match="too large relative to input height"):
        F.fractional_max_pool2d(torch.randn(1, 1, 7, 7, device="tpu"), 2, output_size=(9, 1))


def test_max_pool3d_of_an_unbatched_channels_last_input_keeps_its_layout():
    cpu = torch.randn(1, 6, 14, 12, 13).contiguous(memory_format=torch.channels_last_3d).squeeze(0)
    pool = nn.MaxPool3d((5, 6, 7), return_indices=True)
    (out, idx), (want, want_idx) = pool(cpu.tpu()), pool(cpu)
    assert out.stride() == want.stride() and idx.stride() == want_idx.stride()
    assert_close_cpu(out, want)
    assert torch.equal(idx.cpu(), want_idx)


def test_embedding_bag_checks_indices_and_dimensions_and_makes_sparse_gradients():
    import torch.nn.functional as F
    weight = torch.randn(10, 3, device="tpu")
    for bad in ([[-1, 1]], [[11, 8]]):
        with pytest.raises(RuntimeError, match="Expected idx >= 0 && idx < num_embeddings"):
            F.embedding_bag(torch.tensor(bad, device="tpu"), weight, mode="max")
    with pytest.raises(RuntimeError, match="input has to be a 1D or 2D Tensor"):
        torch.embedding_bag(weight, torch.zeros(2, 2, 2, dtype=torch.long, device="tpu"),
                            torch.zeros(2, dtype=torch.long, device="tpu"))
    # sparse=True: the gradient is a sparse COO tensor equal to the dense one.
    indices, offsets = torch.tensor([1, 2, 2, 5, 9]), torch.tensor([0, 2])
    dense, sparse = nn.EmbeddingBag(10, 3, mode="mean"), nn.EmbeddingBag(10, 3, mode="mean", sparse=True).tpu()
    sparse.weight.data.copy_(dense.weight.data)
    dense(indices, offsets).square().sum().backward()
    sparse(indices.tpu(), offsets.tpu()).square().sum().backward()
    assert sparse.weight.grad.layout == torch.sparse_coo
    assert_close_cpu(sparse.weight.grad.to_dense(), dense.weight.grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_weighted_embedding_bag_rounds_each_weighted_row_before_summing(dtype):
    # PyTorch's test compares a half-precision weighted bag with embedding(), a multiply
    # and a sum in that dtype: each weighted row is rounded before the bag sums it.
    weight = torch.arange(1, 11, dtype=dtype).view(5, 2)
    indices, offsets = torch.tensor([3, 1, 1, 1, 4, 0]), torch.tensor([0, 0, 3, 3, 6])
    per_sample = torch.randn(6, generator=torch.Generator().manual_seed(3)).to(dtype)
    rows = (weight[indices].float() * per_sample.float()[:, None]).to(dtype).float()
    want = torch.stack([rows[a:b].sum(0) for a, b in zip(offsets[:-1], offsets[1:])]).to(dtype)
    got = torch.nn.functional.embedding_bag(indices.tpu(), weight.tpu(), offsets.tpu(), mode="sum",
                                            per_sample_weights=per_sample.tpu(), include_last_offset=True)
    assert torch.equal(got.cpu(), want)


def test_dropout_results_are_laid_out_as_empty_like_lays_out_its_input():
    for fmt in (torch.contiguous_format, torch.channels_last):
        x = torch.empty(2, 3, 3, 6, device="tpu", memory_format=fmt)[..., ::2]
        x.copy_(torch.ones(2, 3, 3, 3))
        out = nn.Dropout(1e-10)(x)
        assert out.is_contiguous(memory_format=fmt) and torch.equal(out.cpu(), x.cpu())
        permuted = torch.randn(4, 5, 6, 7, device="tpu").permute(0, 2, 1, 3).contiguous().permute(0, 2, 1, 3)[1:]
        out = nn.Dropout(0.5)(permuted)
        assert out.stride() == torch.empty_like(permuted).stride()


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_a_value_read_twice_reads_the_same(mode, dtype):
    """PyTorch's test_testing found it: a complex tensor filled through its real view
    (make_tensor's way) read back differed from its next read by an ulp in fused mode, where
    the first read was computed in the filling program (XLA computes a value in each user's
    fusion, rounding each its own way) and the second from the stored contents."""
    torch.manual_seed(0)
    z = torch.empty(64, device="tpu", dtype=dtype)
    torch.view_as_real(z).uniform_(-5, 5)
    first = z.cpu()
    assert torch.equal(first, z.cpu())
    x = torch.randn(1000, device="tpu", dtype=torch.float64)
    y = (x * 1.7 + 0.3).exp()
    part = y[3:60:3].cpu()
    assert torch.equal(part, y.cpu()[3:60:3])


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_a_tensor_written_through_a_view_of_another_dtype_reads_the_same_in_every_op(mode, dtype):
    """PyTorch's test_scatter_gather found it: scatter_ of a complex tensor filled through its
    real view (make_tensor's way) did not copy its values exactly in fused mode. Its copy was
    computed in the filling program, where XLA computed the values again in the copy's fusion
    and rounded them differently there; a clone differed from the tensor in 1 of 10 elements."""
    torch.manual_seed(0)
    z = torch.empty(17, 13, 11, device="tpu", dtype=dtype)
    torch.view_as_real(z).uniform_(-9, 9)
    index = torch.arange(5, device="tpu").view(5, 1, 1).expand(5, 13, 11)
    copies = {"clone": z.clone(), "slice": z[:5].clone(), "gather": z[torch.tensor([1, 2], device="tpu")],
              "scatter": torch.zeros_like(z).scatter_(0, index, z[:5])}
    host = z.cpu()
    expected = {"clone": host, "slice": host[:5], "gather": host[[1, 2]],
                "scatter": torch.zeros_like(host).scatter_(0, index.cpu(), host[:5])}
    for name, copy in copies.items():
        assert torch.equal(copy.cpu(), expected[name]), name
