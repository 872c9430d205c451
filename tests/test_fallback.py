"""Operators without a tpu lowering run on the CPU: correct values, one warning per op, a counter
in torch_tpu.metrics()["cpu_fallbacks"], and an error naming the op when TORCH_TPU_CPU_FALLBACK=0.

The ops are ones this backend does not lower yet (the incomplete gamma functions, bincount);
each warning test uses an op no other test in the process calls first, because the warning is
emitted once per op per process.
"""
import warnings

import pytest
import torch

import torch_tpu
from conftest import assert_close_cpu, make_tensor, run_python

# name -> (function, name fragment of the ATen op in the counters and messages)
EXOTIC = {
    "gammaincc": (lambda x: torch.special.gammaincc(x.abs() + 0.5, x.abs() + 0.1), "igammac"),
    "bincount": (lambda x: torch.bincount((x.abs() * 3).long().flatten()), "bincount"),
}


def upper_incomplete_gamma(x):
    """Q(1.5, |x| + 0.1), elementwise: its forward has no tpu lowering (PyTorch differentiates it in x only)."""
    return torch.special.gammaincc(torch.full_like(x, 1.5), x.abs() + 0.1)


def _fallback_count(fragment):
    return sum(v for k, v in torch_tpu.metrics()["cpu_fallbacks"].items() if fragment in k)


def _fallback_warnings(record, fragment):
    return [w for w in record if fragment in str(w.message)]


@pytest.mark.parametrize("name", sorted(EXOTIC))
def test_fallback_warns_once_counts_and_is_correct(name):
    fn, fragment = EXOTIC[name]
    x = make_tensor((3, 5), seed=1)
    before = _fallback_count(fragment)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        y1 = fn(x.tpu())
        y2 = fn(x.tpu() * 2)
    assert len(_fallback_warnings(record, fragment)) == 1, [str(w.message) for w in record]
    message = str(_fallback_warnings(record, fragment)[0].message)
    assert "TORCH_TPU_CPU_FALLBACK" in message
    assert_close_cpu(y1, fn(x))
    assert_close_cpu(y2, fn(x * 2))
    assert _fallback_count(fragment) >= before + 2
    assert isinstance(torch_tpu.metrics()["cpu_fallbacks"], dict)


def test_fallback_in_both_modes(mode):
    def fn(x):
        return upper_incomplete_gamma(x)
    x = make_tensor((4, 4), seed=2, low=0.5, high=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(x.tpu())
        z = y * 2 + 1  # native ops consume the fallback's result
    assert_close_cpu(z, fn(x) * 2 + 1)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_fallback_non_contiguous_and_out(mode, layout):
    def fn(t, out=None):
        return torch.special.gammainc(t, t * 0.5 + 0.25, out=out)
    base = make_tensor((6, 8), seed=3, low=0.5, high=3.0)
    view = (lambda b: b.t()) if layout == "transposed" else (lambda b: b[:, 1::2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close_cpu(fn(view(base.tpu())), fn(view(base)))
        out_c = torch.zeros(6, 8)
        out_t = out_c.tpu()
        fn(view(base), out=view(out_c))
        r = fn(view(base.tpu()), out=view(out_t))
    assert_close_cpu(r, view(out_c))
    assert_close_cpu(out_t, out_c)  # written through the view, the rest untouched


def test_fallback_inplace_on_view(mode):
    base_c = make_tensor((4, 6), seed=4)
    base_t = base_c.tpu()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base_c[1:3, ::2].abs_().igamma_(torch.full((2, 3), 1.5))
        base_t[1:3, ::2].abs_().igamma_(torch.full((2, 3), 1.5).tpu())
    assert_close_cpu(base_t, base_c)


def test_fallback_under_autograd(mode):
    def fn(a, b):  # the forward runs on the CPU; its gradient is native ops on its inputs
        return upper_incomplete_gamma(a * b)
    a, b = make_tensor((3, 4), seed=5), make_tensor((3, 4), seed=6, low=0.1, high=2.0)
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    at, bt = a.tpu().requires_grad_(), b.tpu().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(ac, bc).sum().backward()
        yt = fn(at, bt)
        yt.sum().backward()
    assert_close_cpu(yt, fn(a, b))
    assert_close_cpu(at.grad, ac.grad)
    assert_close_cpu(bt.grad, bc.grad)


def test_fallback_with_integer_results(mode):
    x = torch.tensor([0.5, float("nan"), float("inf"), -1.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in [lambda t: torch.bincount(t.nan_to_num(0.0, 0.0).abs().long()),
                   lambda t: torch.histogram(t.nan_to_num(0.0), bins=4, range=(-1.0, 3.0)).hist]:
            assert_close_cpu(fn(x.tpu()), fn(x))


def test_warns_once_in_fresh_process():
    code = (
        "import warnings, torch, torch_tpu\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as rec:\n"
        "    warnings.simplefilter('always')\n"
        "    x = torch.ones(3, device='tpu')\n"
        "    for _ in range(3):\n"
        "        torch.special.gammainc(x, x).cpu()\n"
        "n = sum('igamma' in str(w.message) for w in rec)\n"
        "c = sum(v for k, v in torch_tpu.metrics()['cpu_fallbacks'].items() if 'igamma' in k)\n"
        "print('WARNINGS', n, 'COUNT', c)\n"
    )
    r = run_python(code)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "WARNINGS 1 COUNT 3" in r.stdout, r.stdout


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_fallback_disabled_raises_naming_op(op):
    code = (
        "import torch\n"
        "x = torch.ones(3, device='tpu')\n"
        "assert (x + 1).cpu().tolist() == [2.0, 2.0, 2.0]  # native ops still work\n"
        "try:\n"
        f"    torch.{op}(x, x).cpu()\n"
        "except RuntimeError as e:\n"
        "    print('RAISED', type(e).__name__, str(e).splitlines()[0])\n"
        "else:\n"
        "    print('NO ERROR')\n"
    )
    r = run_python(code, TORCH_TPU_CPU_FALLBACK="0")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RAISED" in r.stdout, r.stdout
    assert op in r.stdout, r.stdout


def test_fallback_enabled_explicitly():
    r = run_python("import torch; x = torch.zeros(2, device='tpu'); print(torch.special.gammainc(x + 1, x).cpu().tolist())",
                   TORCH_TPU_CPU_FALLBACK="1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[0.0, 0.0]" in r.stdout


def test_a_random_operator_on_the_cpu_takes_a_tpu_generator():
    # The CPU kernel refuses a tpu generator; it gets a CPU one seeded from it.
    g = torch.Generator(device="tpu").manual_seed(3)
    count, prob = torch.full((64,), 10.0, device="tpu"), torch.full((64,), 0.5, device="tpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = torch.binomial(count, prob, generator=g).cpu()
        second = torch.binomial(count, prob, generator=g).cpu()
        g.manual_seed(3)
        again = torch.binomial(count, prob, generator=g).cpu()
    assert torch.equal(first, again)  # the tpu generator's seed decides the numbers
    assert not torch.equal(first, second)  # and it advances
    assert 0 <= first.min() and first.max() <= 10
