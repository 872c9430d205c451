"""The compilation cache (hits, misses, no recompiles for changed Python scalars), the metrics
counters, and the eager-mode API."""
import itertools

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_tpu
from conftest import MODES, assert_close_cpu, make_tensor, run_modes, run_python

COUNTERS = ("compiles", "cache_hits", "cache_misses", "executions")

_fresh_sizes = itertools.count(1001)


def fresh_size():
    """A size no other test uses, so the first op on it cannot be a cache hit."""
    return next(_fresh_sizes)


def delta(before, after):
    return {k: after[k] - before[k] for k in COUNTERS}


def settled_metrics():
    torch.tpu.synchronize()
    return torch_tpu.metrics()


# --------------------------------------------------------------------------- metrics


def test_metrics_keys_and_types():
    m = torch_tpu.metrics()
    assert isinstance(m, dict)
    for key in COUNTERS:
        assert key in m and isinstance(m[key], int) and m[key] >= 0, key
    assert "cpu_fallbacks" in m and isinstance(m["cpu_fallbacks"], dict)
    for name, count in m["cpu_fallbacks"].items():
        assert isinstance(name, str) and isinstance(count, int)


def test_small_programs_compile_quickly_then_optimized_when_they_recur():
    """On the CPU plugin a program whose values are small on average is first compiled for speed
    of compiling and compiled again, optimized, at its 8th reuse (each after a host read); one of large
    values (its runs would cost more in slow code than the quick compile saves) is compiled once,
    optimized."""
    if not torch.tpu.get_device_name(0).startswith("cpu"):
        pytest.skip("the two tiers are the XLA CPU plugin's")
    counters = ("compiles", "quick_compiles", "full_recompiles")
    with torch_tpu.eager_mode("strict"):
        small = torch.randn(fresh_size(), device="tpu")
        torch.tpu.synchronize()
        before = torch_tpu.metrics()
        for i in range(12):
            assert_close_cpu(small * 3.0 - small, small.cpu() * 2)
            m = torch_tpu.metrics()
            d = {k: m[k] - before[k] for k in counters}
            if i < 8:
                assert d == {"compiles": 2, "quick_compiles": 2, "full_recompiles": 0}, (i, d)
            else:
                assert d == {"compiles": 2, "quick_compiles": 2, "full_recompiles": 2}, (i, d)
        large = torch.randn(fresh_size() * 1024, device="tpu")
        torch.tpu.synchronize()
        before = torch_tpu.metrics()
        for i in range(10):
            assert_close_cpu(large * 3.0 - large, large.cpu() * 2)
        m = torch_tpu.metrics()
        assert {k: m[k] - before[k] for k in counters} == {"compiles": 2, "quick_compiles": 0, "full_recompiles": 0}


def test_quick_programs_are_optimized_at_their_8th_reuse_once_past_a_loops_settling():
    """A quick-tier program is compiled again, optimized, at its 8th reuse if by then it ran
    again after 3 host waits (reads, synchronizes: a loop's iterations, the first three of which
    fused mode cuts differently while it learns the loop), or ran 8 times since the last wait
    (a loop that does not read every iteration): one that repeats only within a loop's first
    iterations (fused mode's cuts at repeated layers) is not optimized for nothing."""
    if not torch.tpu.get_device_name(0).startswith("cpu"):
        pytest.skip("the two tiers are the XLA CPU plugin's")
    counters = ("compiles", "quick_compiles", "full_recompiles")
    with torch_tpu.eager_mode("strict"):
        x = torch.randn(fresh_size(), device="tpu")
        torch.tpu.synchronize()
        before = torch_tpu.metrics()
        recompiled_at = []
        for wait in range(4):
            for run in range(5):
                y = x * 3.0
                m = torch_tpu.metrics()
                if m["full_recompiles"] > before["full_recompiles"] and not recompiled_at:
                    recompiled_at.append((wait, run))
            torch.tpu.synchronize()
        m = torch_tpu.metrics()
        assert {k: m[k] - before[k] for k in counters} == {"compiles": 1, "quick_compiles": 1, "full_recompiles": 1}
        assert recompiled_at == [(3, 0)]  # reused 8 times by wait 1, settled at its first run after wait 3
        assert_close_cpu(y, x.cpu() * 3.0)

        x = torch.randn(fresh_size(), device="tpu")
        torch.tpu.synchronize()
        before = torch_tpu.metrics()
        for i in range(12):  # no wait between its runs
            y = x - 2.0
            m = torch_tpu.metrics()
            assert m["full_recompiles"] - before["full_recompiles"] == (i >= 8), i
        assert_close_cpu(y, x.cpu() - 2.0)

        x = torch.randn(fresh_size(), device="tpu")
        y = x + 5.0
        torch.tpu.synchronize()  # one wait, then a loop that never reads
        before = torch_tpu.metrics()
        for i in range(1, 12):
            y = x + 5.0
            m = torch_tpu.metrics()
            assert m["full_recompiles"] - before["full_recompiles"] == (i >= 8), i


def test_fused_programs_not_known_to_recur_are_compiled_quickly_first_whatever_their_size():
    """Only a fused program that is one iteration of a loop delimited by its reads is known to
    recur; others (a loop's first iterations, code that runs once) mostly run once or twice,
    so even one of large values, which strict mode compiles optimized at once, is compiled
    quickly first."""
    if not torch.tpu.get_device_name(0).startswith("cpu"):
        pytest.skip("the two tiers are the XLA CPU plugin's")
    with torch_tpu.eager_mode("fused"):
        large = torch.randn(fresh_size() * 1024, device="tpu")
        torch.tpu.synchronize()
        before = torch_tpu.metrics()
        assert_close_cpu(large * 3.0 - large, large.cpu() * 2)
        m = torch_tpu.metrics()
        assert (m["compiles"] - before["compiles"], m["quick_compiles"] - before["quick_compiles"]) == (1, 1)


def test_metrics_is_a_snapshot():
    m = torch_tpu.metrics()
    (torch.ones(3, device="tpu") + 1).cpu()
    m["compiles"] = -5
    assert torch_tpu.metrics()["compiles"] >= 0


def test_reset_metrics_zeroes_counters():
    x = torch.randn(6, device="tpu")
    torch.tpu.synchronize()  # x computed: the program below reads it in every mode
    (x.exp() + 1).cpu()
    torch_tpu.reset_metrics()
    m = torch_tpu.metrics()
    for key in COUNTERS:
        assert m[key] == 0, key
    assert m["cpu_fallbacks"] == {}
    # the cache itself survives: the same program is a hit, not a new compile
    (x.exp() + 1).cpu()
    m = torch_tpu.metrics()
    assert m["compiles"] == 0 and m["cache_hits"] >= 1 and m["executions"] >= 1


def test_new_shape_is_a_miss_and_compiles(mode):
    n = fresh_size()
    x = torch.randn(n, device="tpu")
    before = settled_metrics()
    torch.sigmoid(x).cpu()
    d = delta(before, settled_metrics())
    assert d["compiles"] >= 1
    assert d["cache_misses"] >= 1
    assert d["executions"] >= 1


REPEATED = {
    "exp": lambda x, y: torch.exp(x),
    "add": lambda x, y: x + y,
    "mm": lambda x, y: x @ y.t(),
    "sum_dim": lambda x, y: x.sum(1),
    "softmax": lambda x, y: torch.softmax(x, -1),
    "chain": lambda x, y: (x * y).relu().mean(0),
    "view_write": lambda x, y: x.clone()[:, 1:3].fill_(2.0),
}


@pytest.mark.parametrize("name", sorted(REPEATED))
def test_same_op_same_shape_hits_cache(mode, name):
    fn = REPEATED[name]
    x, y = make_tensor((5, 7), seed=1).tpu(), make_tensor((5, 7), seed=2).tpu()
    first = fn(x, y).cpu()
    before = settled_metrics()
    second = fn(x, y).cpu()
    d = delta(before, settled_metrics())
    assert d["compiles"] == 0, d
    assert d["cache_misses"] == 0, d
    assert d["cache_hits"] >= 1, d
    assert d["executions"] >= 1, d
    torch.testing.assert_close(first, second)


def test_new_input_values_same_shape_hit_cache(mode):
    a, b = torch.randn(9, 4, device="tpu"), torch.randn(9, 4, device="tpu")
    torch.tpu.synchronize()  # in fused mode the inputs' own program would differ from the second one
    torch.tanh(a).cpu()
    before = settled_metrics()
    assert_close_cpu(torch.tanh(b), torch.tanh(b.cpu()))
    assert delta(before, settled_metrics())["compiles"] == 0


SCALAR_PROGRAMS = {
    "mul": lambda x, s: x * s,
    "add": lambda x, s: x + s,
    "rsub": lambda x, s: s - x,
    "div": lambda x, s: x / s,
    "add_alpha": lambda x, s: torch.add(x, x, alpha=s),
    "clamp_min": lambda x, s: x.clamp(min=s),
    "leaky_relu": lambda x, s: F.leaky_relu(x, s),
    "masked_fill": lambda x, s: x.masked_fill(x > 0, s),
    "lerp": lambda x, s: torch.lerp(x, x * 2, s),
    "cpu_0d_tensor": lambda x, s: x * torch.tensor(s),
    "inplace_mul": lambda x, s: x.clone().mul_(s),
    "full_like": lambda x, s: torch.full_like(x, s),
}


@pytest.mark.parametrize("name", sorted(SCALAR_PROGRAMS))
def test_changing_python_scalar_does_not_recompile(mode, name):
    fn = SCALAR_PROGRAMS[name]
    x_cpu = make_tensor((8, 3), seed=3)
    x = x_cpu.tpu()
    fn(x, 0.5).cpu()
    before = settled_metrics()
    for s in (0.7, -1.25, 3.0, 0.5):
        assert_close_cpu(fn(x, s), fn(x_cpu, s))
    d = delta(before, settled_metrics())
    assert d["compiles"] == 0, d


def _train_steps(model, opt, steps, lr_schedule=None):
    g = torch.Generator().manual_seed(0)
    for i in range(steps):
        if lr_schedule is not None:
            for group in opt.param_groups:
                group["lr"] = lr_schedule(i)
        x = torch.randn(8, 6, generator=g).tpu()
        y = torch.randint(0, 3, (8,), generator=g).tpu()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    torch.tpu.synchronize()


@pytest.mark.parametrize("opt_name", ["sgd", "sgd_momentum", "adamw"])
def test_training_steady_state_does_not_recompile(mode, opt_name):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)).tpu()
    opt = {
        "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
        "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2),
    }[opt_name](model.parameters())
    _train_steps(model, opt, 3)  # warm up: state creation, first-step special cases
    # fused mode defers all three steps into one program: the first holds the
    # state creation, the second is the steady-state one
    _train_steps(model, opt, 3, lr_schedule=lambda i: 0.1 / (i + 1))
    before = settled_metrics()
    # adamw's bias corrections change every step; the lr changes as well
    _train_steps(model, opt, 3, lr_schedule=lambda i: 0.05 / (i + 1))
    d = delta(before, settled_metrics())
    assert d["compiles"] == 0, d
    assert d["cache_hits"] > 0, d


# --------------------------------------------------------------------------- eager modes


def test_mode_fixture_sets_mode(mode):
    assert torch_tpu.get_eager_mode() == mode


@run_modes("debug")
def test_run_modes_narrows_the_fixture(mode):
    assert mode == "debug" and torch_tpu.get_eager_mode() == "debug"


def test_default_mode_is_known():
    assert torch_tpu.get_eager_mode() in MODES


@pytest.mark.parametrize("name", MODES)
def test_set_get_round_trip(name):
    previous = torch_tpu.get_eager_mode()
    try:
        torch_tpu.set_eager_mode(name)
        assert torch_tpu.get_eager_mode() == name
        assert_close_cpu(torch.arange(4.0, device="tpu") * 2, torch.arange(4.0) * 2)
    finally:
        torch_tpu.set_eager_mode(previous)
    assert torch_tpu.get_eager_mode() == previous


@pytest.mark.parametrize("outer, inner", [("debug", "strict"), ("strict", "debug"), ("debug", "debug")])
def test_context_nests_and_restores(outer, inner):
    previous = torch_tpu.get_eager_mode()
    with torch_tpu.eager_mode(outer):
        assert torch_tpu.get_eager_mode() == outer
        with torch_tpu.eager_mode(inner):
            assert torch_tpu.get_eager_mode() == inner
        assert torch_tpu.get_eager_mode() == outer
    assert torch_tpu.get_eager_mode() == previous


def test_context_restores_after_exception():
    previous = torch_tpu.get_eager_mode()
    other = "debug" if previous != "debug" else "strict"
    with pytest.raises(KeyError):
        with torch_tpu.eager_mode(other):
            raise KeyError("boom")
    assert torch_tpu.get_eager_mode() == previous


@pytest.mark.parametrize("bad", ["bogus", "", "debug "])
def test_invalid_mode_raises_value_error(bad):
    previous = torch_tpu.get_eager_mode()
    with pytest.raises(ValueError):
        torch_tpu.set_eager_mode(bad)
    assert torch_tpu.get_eager_mode() == previous
    with pytest.raises(ValueError):
        with torch_tpu.eager_mode(bad):
            pass
    assert torch_tpu.get_eager_mode() == previous


def test_pending_work_finishes_across_mode_switch():
    with torch_tpu.eager_mode("strict"):
        x = torch.randn(64, 64, device="tpu")
        y = x
        for _ in range(10):
            y = torch.tanh(y @ x) * 0.5
    with torch_tpu.eager_mode("debug"):
        z = y + 1
    ref = x.cpu()
    r = ref
    for _ in range(10):
        r = torch.tanh(r @ ref) * 0.5
    assert_close_cpu(z, r + 1, kind="matmul")


def test_modes_give_identical_results():
    x = make_tensor((6, 10), seed=7)
    w = make_tensor((10, 4), seed=8)
    results = []
    for name in MODES:
        with torch_tpu.eager_mode(name):
            t = torch.log_softmax(x.tpu() @ w.tpu(), -1).sum(0)
            results.append(t.cpu())
    for r in results[1:]:
        assert torch.equal(r, results[0])


@pytest.mark.parametrize("name", MODES)
def test_eager_mode_env_var(name):
    r = run_python("import torch, torch_tpu; torch.ones(1, device='tpu').cpu(); print('MODE', torch_tpu.get_eager_mode())",
                   TORCH_TPU_EAGER_MODE=name)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"MODE {name}" in r.stdout


def test_eager_mode_env_var_unset_defaults():
    r = run_python("import torch, torch_tpu; print('MODE', torch_tpu.get_eager_mode())", TORCH_TPU_EAGER_MODE=None)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("MODE ")[1].strip() in MODES
