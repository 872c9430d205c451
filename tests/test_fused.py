"""Fused eager mode (DeferAndFuse): what defers, what flushes and why, the split rules that make
training loops settle, memory of dead intermediates, errors, and the on-disk compilation cache."""
import os
import random
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_tpu
from conftest import assert_close_cpu, make_tensor, run_modes, run_python


def flushes():
    return dict(torch_tpu.metrics()["flushes"])


def new_flushes(before):
    after = flushes()
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def uploaded(*shape, seed=0):
    """A tpu tensor whose contents are already on the device (nothing pending)."""
    t = make_tensor(shape, seed=seed).tpu()
    torch.tpu.synchronize()
    return t


# --------------------------------------------------------------------------- deferral


@run_modes("fused")
def test_ops_are_deferred_until_a_value_is_needed(mode):
    x = uploaded(8, 8)
    m0 = torch_tpu.metrics()
    y = (x * 2).exp().sum(0)
    m1 = torch_tpu.metrics()
    assert m1["executions"] == m0["executions"], "fused mode ran a program before anything was read"
    assert m1["ops_deferred"] - m0["ops_deferred"] == 3
    assert_close_cpu(y, (x.cpu() * 2).exp().sum(0), kind="reduction")
    m2 = torch_tpu.metrics()
    assert m2["executions"] - m1["executions"] == 1, "the three ops ran as one program"


HOST_READS = {
    "item": (lambda t: t.sum().item(), "item"),
    "cpu": (lambda t: t.cpu(), "to_cpu"),
    "tolist": (lambda t: t.tolist(), "to_cpu"),
    "bool": (lambda t: bool(t.sum() > 0), "item"),
    "print": (lambda t: repr(t), "item"),  # the formatter reads values (masked_select, item) before it copies
    "synchronize": (lambda t: torch.tpu.synchronize(), "synchronize"),
    "numpy": (lambda t: t.cpu().numpy(), "to_cpu"),
}


@run_modes("fused")
@pytest.mark.parametrize("name", sorted(HOST_READS))
def test_flush_reasons(mode, name):
    fn, reason = HOST_READS[name]
    x = uploaded(4, 3)
    y = x + 1
    before = flushes()
    fn(y)
    got = new_flushes(before)
    assert got.get(reason, 0) >= 1, got


@run_modes("fused")
def test_cpu_fallback_flushes_first(mode):
    x = uploaded(5, 4)
    y = x * 3
    before = flushes()
    fallbacks = sum(torch_tpu.metrics()["cpu_fallbacks"].values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = torch.special.gammaincc(y.abs() + 0.5, y.abs() + 0.5)  # no lowering: runs on the CPU
    assert sum(torch_tpu.metrics()["cpu_fallbacks"].values()) > fallbacks
    assert new_flushes(before).get("cpu_fallback", 0) >= 1
    expected = (x.cpu() * 3).abs() + 0.5
    assert_close_cpu(z, torch.special.gammaincc(expected, expected))


def test_leaving_fused_mode_flushes():
    with torch_tpu.eager_mode("fused"):
        x = uploaded(6)
        y = x.exp()
        before = flushes()
        torch_tpu.set_eager_mode("strict")
        try:
            assert sum(new_flushes(before).values()) >= 1
            assert_close_cpu(y, x.cpu().exp())
        finally:
            torch_tpu.set_eager_mode("fused")


@run_modes("fused")
def test_graph_size_bound_splits(mode):
    old = torch_tpu._C._set_fused_max_nodes(40)
    try:
        # an op sequence without a period, so the loop-period rule stays out of it
        kinds = [torch.tanh, torch.sigmoid, torch.neg, torch.abs, lambda t: t * 0.9]
        order = random.Random(0).choices(kinds, k=60)
        x = uploaded(16)
        before = flushes()
        y = x
        for op in order:
            y = op(y)
        assert new_flushes(before).get("graph_size", 0) >= 1
        ref = x.cpu()
        for op in order:
            ref = op(ref)
        assert_close_cpu(y, ref)
    finally:
        torch_tpu._C._set_fused_max_nodes(old)


@run_modes("fused")
def test_held_bytes_bound_splits_at_live_results(mode):
    """Results still referenced count against the bound: past it the program is
    cut at the next op, and the kept results become buffers."""
    old = torch_tpu._C._set_fused_max_held_bytes(1 << 20)  # 1 MiB: four 256 KiB results
    try:
        x = uploaded(256, 256)
        before = flushes()
        kept = [x * (i + 1.5) for i in range(8)]  # each alive until the end
        assert new_flushes(before).get("held_bytes", 0) == 1
        for i, t in enumerate(kept):
            assert_close_cpu(t, x.cpu() * (i + 1.5))
    finally:
        torch_tpu._C._set_fused_max_held_bytes(old)


@run_modes("fused")
def test_held_bytes_bound_leaves_a_known_iterations_live_results_alone(mode):
    """Once a loop that reads a value every iteration is recognized, each iteration is
    one program: the results it keeps alive are kept in strict mode too, so they no
    longer cut it (only inputs that died do)."""
    old = torch_tpu._C._set_fused_max_held_bytes(1 << 20)
    try:
        x = uploaded(256, 256)
        held = []
        for _ in range(5):
            before = flushes()
            kept = [x * (i + 1.5) for i in range(8)]  # 2 MiB alive until the read
            total = sum(t.sum() for t in kept)
            assert abs(total.item() - float(x.cpu().sum()) * sum(i + 1.5 for i in range(8))) < 1.0
            held.append(new_flushes(before).get("held_bytes", 0))
        assert held[0] == 1 and held[3:] == [0, 0], held
    finally:
        torch_tpu._C._set_fused_max_held_bytes(old)


@run_modes("fused")
def test_held_bytes_bound_counts_inputs_nobody_holds(mode):
    """An input whose tensor died stays allocated until the program that reads it
    runs; enough of them cut the program, as strict mode would have freed them."""
    old = torch_tpu._C._set_fused_max_held_bytes(1 << 20)
    try:
        inputs = [uploaded(256, 256, seed=i) for i in range(8)]
        expected = sum(t.cpu() for t in inputs)
        before = flushes()
        total = torch.zeros(256, 256, device="tpu")
        while inputs:
            total.add_(inputs.pop())  # the popped input dies here
        assert new_flushes(before).get("held_bytes", 0) >= 1
        assert_close_cpu(total, expected)
    finally:
        torch_tpu._C._set_fused_max_held_bytes(old)


@run_modes("fused")
def test_held_bytes_cuts_recur_in_a_loop(mode):
    """Cuts for held bytes fall at the same places every iteration: after the first
    iterations the loop compiles nothing."""
    old = torch_tpu._C._set_fused_max_held_bytes(1 << 20)
    try:
        host_chunks = [torch.randn(256, 256, generator=torch.Generator().manual_seed(i)) for i in range(8)]
        compiles, held = [], []
        for _ in range(6):
            before, before_flushes = torch_tpu.metrics()["compiles"], flushes()
            chunks = [c.to("tpu") for c in host_chunks]
            total = torch.zeros(256, 256, device="tpu")
            while chunks:
                total.add_(chunks.pop().tanh())  # the popped chunk dies here
            torch.tpu.synchronize()
            compiles.append(torch_tpu.metrics()["compiles"] - before)
            held.append(new_flushes(before_flushes).get("held_bytes", 0))
        assert compiles[3:] == [0, 0, 0], compiles
        assert min(held[3:]) >= 1, held
        assert_close_cpu(total, sum(c.tanh() for c in host_chunks))
    finally:
        torch_tpu._C._set_fused_max_held_bytes(old)


@pytest.mark.parametrize("layers_before", [0, 1, 3])
@run_modes("fused")
def test_loop_cut_falls_where_fewest_results_live_wherever_other_cuts_fell(mode, layers_before):
    """The period's cut goes before the first op of an iteration (the fewest results of
    ops alive), however the held-bytes cuts fell in the iteration it was chosen from:
    part of an iteration run before the loop (`layers_before`) moves those."""
    old = torch_tpu._C._set_fused_max_held_bytes(192 << 10)
    try:
        torch.manual_seed(0)
        norms = [nn.LayerNorm(128).tpu() for _ in range(6)]
        x = uploaded(64, 128).requires_grad_()

        def layer(norm, h):
            return F.gelu(norm(h)) + h

        def iteration():
            """Returns how many window cuts ran at its first op."""
            x.grad = None
            before = flushes().get("window", 0)
            h = layer(norms[0], x)
            window_at_first_op = flushes().get("window", 0) - before
            for norm in norms[1:]:
                h = layer(norm, h)
            h.square().mean().backward()
            return window_at_first_op

        h = x
        for norm in norms[:layers_before]:
            h = layer(norm, h)
        del h
        at_first_op = [iteration() for _ in range(8)]
        torch.tpu.synchronize()
        assert at_first_op[4:] == [1, 1, 1, 1], at_first_op
    finally:
        torch_tpu._C._set_fused_max_held_bytes(old)


@run_modes("fused")
def test_held_bytes_bound_rejects_nonpositive(mode):
    with pytest.raises(ValueError, match="must be positive"):
        torch_tpu._C._set_fused_max_held_bytes(0)


@run_modes("fused")
def test_reading_a_computed_tensor_runs_what_is_pending(mode):
    # A read delimits a loop's iterations even when a cut computed the value
    # before it (an LSTM's time steps, taken for the loop's period, cut every
    # step until the loss read ended the iteration), and the pending work runs
    # while the host waits.
    x = uploaded(16)
    y = x * 2
    y_host = y.cpu()  # computes y
    z = x + 1
    before = torch_tpu.metrics()["executions"]
    assert torch.equal(y.cpu(), y_host)
    assert torch_tpu.metrics()["executions"] == before + 1
    assert_close_cpu(z, x.cpu() + 1)
    assert torch_tpu.metrics()["executions"] == before + 1


@run_modes("fused")
def test_results_nobody_holds_are_not_run(mode):
    x = uploaded(32)
    before = torch_tpu.metrics()["executions"]
    for _ in range(5):
        (x * 2).exp()  # discarded at once
    torch.tpu.synchronize()
    assert torch_tpu.metrics()["executions"] == before


# --------------------------------------------------------------------------- memory


@pytest.mark.parametrize("mode_name", ["strict", "fused"])
def test_dead_intermediates_are_never_allocated(mode_name):
    n = 1 << 18  # 1 MiB of float32
    with torch_tpu.eager_mode(mode_name):
        x = uploaded(n)
        import gc
        gc.collect()
        torch.tpu.synchronize()
        base = torch.tpu.memory_allocated()
        torch.tpu.reset_peak_memory_stats()
        y = torch.exp(x * 2 + 1) - 3  # three intermediates die before the flush
        torch.tpu.synchronize()
        peak = torch.tpu.max_memory_allocated() - base
        assert_close_cpu(y, torch.exp(x.cpu() * 2 + 1) - 3)
    nbytes = n * 4
    if mode_name == "fused":
        assert peak < 1.5 * nbytes, f"peak {peak} for one {nbytes}-byte result"
    else:
        assert peak >= 2 * nbytes  # op by op, an input and an output live together


def peak_above_base(fn):
    """Runs fn and synchronizes; the peak device memory above what was allocated before."""
    import gc
    gc.collect()
    torch.tpu.synchronize()
    base = torch.tpu.memory_allocated()
    torch.tpu.reset_peak_memory_stats()
    result = fn()
    torch.tpu.synchronize()
    return result, torch.tpu.max_memory_allocated() - base


def _lstm_training_peak(mode_name, steps=12):
    """The losses and the peak device memory of an LSTM's last training steps, reading the loss every step."""
    with torch_tpu.eager_mode(mode_name):
        torch.manual_seed(0)
        lstm, head = nn.LSTM(64, 64, batch_first=True).tpu(), nn.Linear(64, 16).tpu()
        opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(8, 16, 64, generator=g).tpu(), torch.randint(0, 16, (8, 16), generator=g).tpu()
        losses = []
        for i in range(steps):
            if i == steps - 3:
                torch.tpu.synchronize()
                torch.tpu.reset_peak_memory_stats()
            opt.zero_grad()
            out, _ = lstm(x)
            loss = F.cross_entropy(head(out).flatten(0, 1), y.flatten())
            loss.backward()
            opt.step()
            losses.append(loss.item())
        torch.tpu.synchronize()
        return losses, torch.tpu.max_memory_allocated()


def test_a_long_recurrence_keeps_its_windows_instead_of_unrolling_into_one_program():
    # 48 LSTM time steps, each a window of the period rule: one program per
    # step would unroll them all (compiling for as long as every window) and
    # hold their temporaries together.
    with torch_tpu.eager_mode("fused"):
        torch.manual_seed(0)
        lstm = nn.LSTM(16, 16, batch_first=True).tpu()
        opt = torch.optim.SGD(lstm.parameters(), lr=0.1)
        x = torch.randn(4, 48, 16).tpu()
        compiles, executions = [], []
        for _ in range(6):
            m = torch_tpu.metrics()
            opt.zero_grad()
            lstm(x)[0].square().mean().backward()
            opt.step()
            lstm.weight_hh_l0.sum().item()
            compiles.append(torch_tpu.metrics()["compiles"] - m["compiles"])
            executions.append(torch_tpu.metrics()["executions"] - m["executions"])
    assert compiles[2:] == [0, 0, 0, 0], compiles
    assert min(executions) > 48, executions


def test_a_training_step_whose_program_holds_more_than_op_by_op_is_cut_until_it_does_not():
    # One program per step held 3.5x strict mode's peak: XLA computes the
    # LSTM's 16 per-step weight gradients before summing them.
    strict_losses, strict_peak = _lstm_training_peak("strict")
    fused_losses, fused_peak = _lstm_training_peak("fused")
    assert fused_peak < 1.25 * strict_peak, (fused_peak, strict_peak)
    torch.testing.assert_close(fused_losses, strict_losses, rtol=1e-4, atol=1e-5)


@run_modes("fused")
def test_inputs_that_die_while_pending_hold_results_of_their_type(mode):
    n = 1 << 18  # 1 MiB of float32
    x = uploaded(n)
    x_cpu = x.cpu()

    def consume():
        nonlocal x
        y = (x * 3).exp()
        del x  # the program's input dies before it runs: its buffer can hold y
        return y
    y, peak = peak_above_base(consume)
    assert_close_cpu(y, (x_cpu * 3).exp())
    assert peak < 0.5 * n * 4, f"peak {peak} above the input's {n * 4} bytes"
    # A live input is never reused.
    z = uploaded(n, seed=1)
    w, peak = peak_above_base(lambda: z + 1)
    assert_close_cpu(z, make_tensor((n,), seed=1))
    assert_close_cpu(w, make_tensor((n,), seed=1) + 1)
    assert peak >= n * 4


@run_modes("fused")
def test_in_place_update_after_a_matmul_reading_the_old_value_needs_no_copy(mode):
    # As in a training step: a backward matmul reads a weight that the
    # optimizer then updates in place, and nothing orders the two; XLA would
    # keep the old weight in a copy for the matmul.
    w_cpu = make_tensor((512, 512), seed=2)
    w_cpu[0, :4] = torch.tensor([-0.0, float("nan"), float("inf"), -float("inf")])
    x_cpu = make_tensor((8, 512), seed=3)
    w, x = w_cpu.tpu(), x_cpu.tpu()
    torch.tpu.synchronize()

    def step():
        g = x @ w  # reads the old w; the update below does not depend on it
        w.mul_(0.5)
        return g
    g, peak = peak_above_base(step)
    expected_w = w_cpu.mul(0.5)
    assert_close_cpu(g, x_cpu @ w_cpu, kind="matmul")
    got = w.cpu()
    assert torch.equal(torch.signbit(got[0, :4]), torch.signbit(expected_w[0, :4]))
    assert torch.equal(got.nan_to_num(), expected_w.nan_to_num()) and got.isnan().equal(expected_w.isnan())
    assert peak < 0.5 * w_cpu.nbytes, f"peak {peak} above the weight's {w_cpu.nbytes} bytes"


# --------------------------------------------------------------------------- semantics under deferral


@run_modes("fused")
def test_views_inplace_and_aliasing_across_flushes(mode):
    base_cpu = make_tensor((6, 5), seed=4)
    base = base_cpu.tpu()
    view = base[:, 1:4]
    view.mul_(2)  # pending write through a view
    base_cpu[:, 1:4].mul_(2)
    keep = base.t()  # a view kept alive across the flush
    assert_close_cpu(base.sum(), base_cpu.sum(), kind="reduction")  # flush
    view.add_(1)
    base_cpu[:, 1:4].add_(1)
    assert_close_cpu(keep, base_cpu.t())
    assert_close_cpu(view, base_cpu[:, 1:4])


def test_same_seed_same_numbers_in_every_mode():
    results = {}
    for name in ("debug", "strict", "fused"):
        with torch_tpu.eager_mode(name):
            torch.manual_seed(123)
            a = torch.rand(5, 7, device="tpu")
            b = torch.randn(3, device="tpu")
            d = F.dropout(torch.ones(50, device="tpu"), 0.5)
            results[name] = [a.cpu(), b.cpu(), d.cpu()]
    for name in ("strict", "fused"):
        for got, ref in zip(results[name], results["debug"]):
            assert torch.equal(got, ref), name


@run_modes("fused")
def test_shape_error_raises_at_the_op_and_loses_nothing(mode):
    x = uploaded(3, 4)
    y = x * 2  # pending
    with pytest.raises(RuntimeError, match="size of tensor a|must match|shape"):
        x + torch.ones(5, 7, device="tpu")
    with pytest.raises(RuntimeError, match="mat1 and mat2|shapes cannot be multiplied|size mismatch"):
        x @ x
    assert_close_cpu(y, x.cpu() * 2)


def test_out_of_memory_in_a_fused_program_names_the_op_and_keeps_other_results():
    code = (
        "import torch, torch_tpu\n"
        "torch_tpu.set_eager_mode('fused')\n"
        "a = torch.ones(4, device='tpu')\n"
        "b = a * 2\n"
        "ooms = torch.tpu.memory_stats()['num_ooms']\n"
        "huge = torch.empty(2**38, device='tpu').fill_(1.0)\n"
        "try:\n"
        "    huge[:2].cpu()\n"
        "    print('NO ERROR')\n"
        "except torch.OutOfMemoryError as e:\n"
        "    print('OOM', 'aten::fill_' in str(e), 'fused program' in str(e))\n"
        "print('B', b.cpu().tolist())\n"
        "print('COUNTED', ooms, torch.tpu.memory_stats()['num_ooms'] > ooms)\n"
    )
    r = run_python(code)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "OOM True True" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "COUNTED 0 True" in r.stdout, r.stdout
    assert "B [2.0, 2.0, 2.0, 2.0]" in r.stdout


def test_two_devices_in_fused_mode():
    code = (
        "import torch, torch_tpu\n"
        "a = torch.arange(6.0, device='tpu:1') * 2\n"
        "b = torch.ones(6, device='tpu:0') + 1\n"
        "c = a + 1\n"
        "d = (c.to('tpu:0') + b).cpu().tolist()\n"
        "print('D', d, torch_tpu.metrics()['flushes'])\n"
    )
    r = run_python(code, TORCH_TPU_CPU_DEVICE_COUNT="2", TORCH_TPU_EAGER_MODE="fused")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "D [3.0, 5.0, 7.0, 9.0, 11.0, 13.0]" in r.stdout, r.stdout
    assert "device_change" in r.stdout


# --------------------------------------------------------------------------- steady state


def _mlp_and_opt():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4)).tpu()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def _step(model, opt, g):
    x = torch.randn(8, 12, generator=g).tpu()
    y = torch.randint(0, 4, (8,), generator=g).tpu()
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


@run_modes("fused")
def test_training_loop_with_item_compiles_nothing_from_iteration_three(mode):
    model, opt = _mlp_and_opt()
    g = torch.Generator().manual_seed(1)
    compiles = []
    for _ in range(5):
        before = torch_tpu.metrics()["compiles"]
        _step(model, opt, g).item()
        compiles.append(torch_tpu.metrics()["compiles"] - before)
    assert compiles[2:] == [0, 0, 0], compiles


@run_modes("fused")
@pytest.mark.parametrize("then_synchronize", [False, True])
def test_loop_that_reads_its_loss_runs_one_program_per_iteration_despite_repeated_layers(mode, then_synchronize):
    """Identical layers repeat a stretch of ops inside each iteration, which alone looks like a
    loop period; the loss read at the end of every iteration delimits the real loop, so once
    two iterations matched, each runs as one program. A synchronize after the read, with
    nothing recorded between, delimits nothing more."""
    def block(c_in, c_out):  # a stretch of ops at least as long as the shortest period fused mode looks for (8)
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.GroupNorm(4, c_out), nn.SiLU(),
                             nn.Conv2d(c_out, c_out, 1), nn.BatchNorm2d(c_out), nn.GELU(), nn.Tanh(), nn.Hardswish())

    torch.manual_seed(0)
    model = nn.Sequential(block(3, 8), block(8, 8), block(8, 8), block(8, 8), nn.Flatten(), nn.Linear(512, 4)).tpu()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(2, 3, 8, 8, generator=g).tpu(), torch.randint(0, 4, (2,), generator=g).tpu()
    executions, windows = [], []
    for _ in range(7):
        before = torch_tpu.metrics()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        if then_synchronize:
            torch.tpu.synchronize()
        after = torch_tpu.metrics()
        executions.append(after["executions"] - before["executions"])
        windows.append(after["flushes"].get("window", 0) - before["flushes"].get("window", 0))
    if not then_synchronize:  # (the loop before this one leaves fused mode knowing more)
        assert windows[0] > 0, (executions, windows)  # the repeated layers were cut at first
    assert executions[-3:] == [1, 1, 1] and windows[-3:] == [0, 0, 0], (executions, windows)


@run_modes("fused")
def test_loop_that_reads_every_few_iterations_still_cuts_each_iteration(mode):
    """A period that lasts until the read is the loop itself: iterations between reads stay
    programs of their own."""
    model, opt = _mlp_and_opt()
    g = torch.Generator().manual_seed(4)
    for i in range(24):
        loss = _step(model, opt, g)
        if i % 4 == 3:
            loss.item()
    before = torch_tpu.metrics()
    for i in range(8):
        loss = _step(model, opt, g)
        if i % 4 == 3:
            loss.item()
    after = torch_tpu.metrics()
    assert after["flushes"].get("window", 0) - before["flushes"].get("window", 0) >= 4
    assert after["compiles"] == before["compiles"]


@run_modes("fused")
def test_training_loop_without_sync_settles_into_repeating_windows(mode):
    """No host read at all: the size bound splits the stream, the period is detected, and the
    loop then runs the same few programs every iteration."""
    old = torch_tpu._C._set_fused_max_nodes(300)
    try:
        model, opt = _mlp_and_opt()
        g = torch.Generator().manual_seed(2)
        for _ in range(12):
            _step(model, opt, g)
        before = torch_tpu.metrics()
        for _ in range(8):
            _step(model, opt, g)
        after = torch_tpu.metrics()
        torch.tpu.synchronize()
        assert after["compiles"] - before["compiles"] == 0
        assert after["flushes"].get("window", 0) > before["flushes"].get("window", 0)
        assert after["executions"] > before["executions"]
    finally:
        torch_tpu._C._set_fused_max_nodes(old)


# --------------------------------------------------------------------------- observability


@run_modes("fused")
def test_last_flushed_program_is_stablehlo(mode):
    x = uploaded(3, 3)
    (x.sin() @ x).cpu()
    text = torch_tpu.last_flushed_program()
    assert "func.func public @main" in text and "stablehlo.dot_general" in text and "stablehlo.sine" in text


def test_programs_read_and_write_buffers_in_their_shapes():
    # A buffer is a parameter and a result in the shape it was made in, not as
    # its flat storage: XLA's kernels (its CPU reductions) are faster on them.
    with torch_tpu.eager_mode("fused"):
        x = torch.randn(4, 8).to("tpu")
        y = (x * 2).sum(1)
        y.cpu()
        program = torch_tpu.last_flushed_program()
    signature = next(line for line in program.splitlines() if "@main" in line)
    assert "%arg0: tensor<4x8xf32>" in signature and "-> (tensor<4xf32>)" in signature


def test_flush_log_env_var():
    r = run_python("import torch; x = torch.ones(3, device='tpu'); (x + 1).cpu()",
                   TORCH_TPU_EAGER_MODE="fused", TORCH_TPU_LOG_FLUSHES="1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "torch_tpu: flush (to_cpu):" in r.stderr and "ops" in r.stderr, r.stderr[-2000:]


# --------------------------------------------------------------------------- disk cache

_CACHE_PROGRAM = (
    "import torch, torch_tpu\n"
    "x = torch.arange(24.0, device='tpu').reshape(4, 6)\n"
    "y = (torch.tanh(x @ x.t()) * 3 + 1).sum().item()\n"
    "m = torch_tpu.metrics()\n"
    "print('RESULT', round(y, 4), 'COMPILES', m['compiles'], 'DISK', m['disk_cache_hits'], m['disk_cache_writes'])\n"
)


def _run_cached(cache_dir, **env):
    r = run_python(_CACHE_PROGRAM, TORCH_TPU_CACHE_DIR=str(cache_dir), TORCH_TPU_EAGER_MODE="fused", **env)
    assert r.returncode == 0, r.stderr[-3000:]
    words = r.stdout.split()
    i = words.index("RESULT")
    return float(words[i + 1]), int(words[i + 3]), int(words[i + 5]), int(words[i + 6])


def test_second_process_hits_the_disk_cache(tmp_path):
    y1, compiles1, hits1, writes1 = _run_cached(tmp_path)
    assert compiles1 >= 1 and hits1 == 0 and writes1 == compiles1
    y2, compiles2, hits2, writes2 = _run_cached(tmp_path)
    assert compiles2 == 0 and hits2 == compiles1 and writes2 == 0
    assert y1 == y2


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_cache_entries_are_survived(tmp_path, damage):
    y1, compiles1, _, _ = _run_cached(tmp_path)
    entries = [p for p in tmp_path.iterdir() if p.suffix == ".bin"]
    assert entries
    for p in entries:
        data = p.read_bytes()
        p.write_bytes({"truncate": data[: len(data) // 2], "garbage": os.urandom(len(data)), "empty": b""}[damage])
    y2, compiles2, hits2, _ = _run_cached(tmp_path)
    assert y2 == y1 and compiles2 == compiles1 and hits2 == 0
    y3, compiles3, hits3, _ = _run_cached(tmp_path)  # the damaged entries were replaced
    assert y3 == y1 and compiles3 == 0 and hits3 == compiles1


def test_empty_cache_dir_turns_the_disk_cache_off(tmp_path):
    r = run_python(_CACHE_PROGRAM, TORCH_TPU_CACHE_DIR="", HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert " DISK 0 0" in r.stdout
    assert not any(tmp_path.rglob("*.bin"))


def test_default_cache_dir_is_under_the_user_cache(tmp_path):
    r = run_python(_CACHE_PROGRAM, TORCH_TPU_CACHE_DIR=None, XDG_CACHE_HOME=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert any((tmp_path / "torch_tpu").glob("*.bin"))


def test_cache_size_bound_evicts_old_entries(tmp_path):
    _run_cached(tmp_path, TORCH_TPU_CACHE_MAX_BYTES="1")
    total = sum(p.stat().st_size for p in tmp_path.iterdir() if p.suffix == ".bin")
    assert total <= 1 or len(list(tmp_path.glob("*.bin"))) == 0
    assert not list(tmp_path.glob("*.tmp*"))
