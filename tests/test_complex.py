"""Complex tensors on the tpu device: storage, views over it (view_as_real, .real,
.imag, lazy conjugation), arithmetic and FFTs, compared with the same code on CPU
in every eager mode; and the clear error of a kernel with no complex lowering."""
import pytest
import torch


def make_complex(*shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.complex(torch.randn(*shape, generator=gen), torch.randn(*shape, generator=gen))


def on_both(fn, *cpu_inputs):
    """fn on the CPU inputs and on their tpu copies; returns (tpu result on CPU, CPU result)."""
    expected = fn(*[t.clone() for t in cpu_inputs])
    actual = fn(*[t.to("tpu") for t in cpu_inputs])
    return actual.cpu(), expected


def check(fn, *cpu_inputs, rtol=1e-5, atol=1e-5):
    actual, expected = on_both(fn, *cpu_inputs)
    assert actual.dtype == expected.dtype
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


def test_round_trip_keeps_every_bit(mode):
    z = make_complex(3, 5)
    z[0, 0] = complex(float("nan"), float("-inf"))
    back = z.to("tpu").cpu()
    assert torch.equal(torch.view_as_real(back).isnan(), torch.view_as_real(z).isnan())
    torch.testing.assert_close(back, z, equal_nan=True, rtol=0, atol=0)


def test_view_as_real_shares_storage(mode):
    def fn(z):
        parts = torch.view_as_real(z)
        parts[1:, 0].mul_(3)  # real parts of rows 1.. through the float view
        z.imag[0].fill_(-2)   # imaginary parts of row 0 through .imag
        return torch.view_as_complex(parts * 1) + z
    check(fn, make_complex(3, 4))


def test_conjugate_and_negative_views(mode):
    z = make_complex(4, 3)
    t = z.to("tpu")
    c = t.conj()
    assert c.is_conj() and c.data_ptr() == t.data_ptr()  # lazy, as on CPU
    torch.testing.assert_close(c.cpu(), z.conj().resolve_conj())
    torch.testing.assert_close(c.imag.cpu(), z.conj().imag.resolve_neg())  # a negative view
    torch.testing.assert_close((c * t).cpu(), z.conj() * z)
    # A conjugate CPU tensor copied in, and writing through a conjugate view.
    torch.testing.assert_close(z.conj().to("tpu").cpu(), z.conj().resolve_conj())
    target = torch.zeros(4, 3, dtype=torch.complex64)
    target_tpu = target.to("tpu")
    target.conj().copy_(z)
    target_tpu.conj().copy_(t)
    torch.testing.assert_close(target_tpu.cpu(), target)


def test_arithmetic_and_reductions(mode):
    a, b = make_complex(5, 4, seed=1), make_complex(5, 4, seed=2)
    check(lambda x, y: (x * y - x / y + 2.5j * x).exp().sum(0), a, b, rtol=1e-4)
    check(lambda x, y: x @ y.mT, a, b, rtol=1e-4)
    check(lambda x, y: torch.vdot(x[0], y[0]), a, b, rtol=1e-4)
    check(lambda x, y: x.abs() + x.angle() + y.var(1).unsqueeze(1), a, b, rtol=1e-4)
    check(lambda x, y: torch.polar(x.abs(), y.angle()) + torch.complex(x.real, y.imag), a, b, rtol=1e-4)
    check(lambda x, y: torch.linalg.vector_norm(x, dim=1) + x.sgn().sum(1).real, a, b, rtol=1e-4)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_fft_family(mode, norm):
    z, x = make_complex(4, 6, 8), torch.randn(4, 6, 8)
    check(lambda t: torch.fft.fft(t, norm=norm), z, rtol=1e-4, atol=1e-4)
    check(lambda t: torch.fft.ifftn(t, dim=(0, 2), norm=norm), z, rtol=1e-4, atol=1e-4)
    check(lambda t: torch.fft.rfft2(t, norm=norm), x, rtol=1e-4, atol=1e-4)
    check(lambda t: torch.fft.irfft(t, n=14, norm=norm), z, rtol=1e-4, atol=1e-4)
    check(lambda t: torch.fft.irfftn(torch.fft.rfftn(t, norm=norm), s=t.shape, norm=norm), x, rtol=1e-4, atol=1e-4)


def test_fft_gradient_matches_cpu(mode):
    x = torch.randn(6, 8)

    def grad(t):
        t = t.clone().requires_grad_()
        torch.fft.rfft(t).abs().sum().backward()
        return t.grad
    check(grad, x, rtol=1e-4, atol=1e-4)


def test_kernel_without_complex_lowering_says_so():
    a = make_complex(3, 3).to("tpu")
    with pytest.raises(NotImplementedError, match="aten::logaddexp2 does not support complex tensors yet"):
        torch.logaddexp2(a, a)
    torch.testing.assert_close(torch.logaddexp(a, a).cpu(), torch.logaddexp(a.cpu(), a.cpu()))
    # Ordering complex numbers is an error on CPU too.
    with pytest.raises(RuntimeError):
        torch.maximum(a, a)
    # The tensor is still usable afterwards.
    torch.testing.assert_close((a + a).cpu(), 2 * a.cpu())


def test_complex32_round_trips_computes_and_reinterprets_like_cpu():
    # XLA has no complex32: the device holds it as complex64 and rounds each
    # part to half wherever a value becomes complex32, so results match CPU's.
    x = torch.randn(6, dtype=torch.chalf)
    t = x.to("tpu")
    assert t.dtype == torch.chalf
    assert torch.equal(t.cpu().view(torch.int32), x.view(torch.int32))  # bit-exact round trip
    for tpu_result, cpu_result in [(t + t, x + x), (t * t, x * x), (t.conj(), x.conj())]:
        assert tpu_result.dtype == torch.chalf
        torch.testing.assert_close(tpu_result.cpu().to(torch.complex64), cpu_result.to(torch.complex64))
    # Python complex scalars promote a half tensor to complex32, as on CPU.
    h = torch.tensor([1.0, 2.0], dtype=torch.half)
    promoted = h.to("tpu") + 1j
    assert promoted.dtype == (h + 1j).dtype == torch.chalf
    torch.testing.assert_close(promoted.cpu().to(torch.complex64), (h + 1j).to(torch.complex64))
    # Its bytes are pairs of halves: real views and bit views see them.
    assert torch.equal(torch.view_as_real(t).cpu(), torch.view_as_real(x))
    assert torch.equal(t.view(torch.float32).cpu().view(torch.int32), x.view(torch.float32).view(torch.int32))
    assert torch.equal(torch.view_as_complex(torch.view_as_real(t)).cpu().view(torch.int32), x.view(torch.int32))
    # A complex64 value stored as complex32 keeps what half precision holds.
    z = torch.tensor([1.0001 + 3.14159j], dtype=torch.complex64)
    assert torch.equal(z.to("tpu").to(torch.chalf).cpu().view(torch.int32), z.to(torch.chalf).view(torch.int32))
    t[1] = 3 + 4j
    x[1] = 3 + 4j
    assert torch.equal(t.cpu().view(torch.int32), x.view(torch.int32))
