"""Bounded compiles for moving windows and growing or varying lengths: views at
runtime offsets, bucketed generate(), BucketPadding, shape-family metrics."""
import pytest
import torch
from conftest import run_modes

import torch_tpu
from torch_tpu.bucketing import BucketPadding, bucket_length

transformers = pytest.importorskip("transformers")


def compiles():
    return torch_tpu.metrics()["compiles"]


@run_modes("strict", "fused")
def test_a_window_that_moves_reuses_its_program(mode):
    x = torch.randn(40, 6, 10)
    xt, yt = x.tpu(), torch.zeros(40, 6, 10).tpu()
    y = torch.zeros(40, 6, 10)
    torch_tpu.reset_metrics()
    for i in range(40):
        yt[i, :, 2:5] = xt[i, :, 1:4] * 2  # strided boxes, read and written at a moving offset
        y[i, :, 2:5] = x[i, :, 1:4] * 2
        assert torch.equal(yt[i].cpu(), y[i])
    assert torch.equal(yt.cpu(), y)
    # Every offset, 0 included, is one program per op (strict) or per iteration.
    assert compiles() <= (4 if mode == "strict" else 2) + 1


@pytest.mark.parametrize("dim", [0, 1])
def test_a_long_loop_of_row_writes_runs_in_recurring_chunks(dim):
    # One write per iteration, never read back: fused mode cuts the run into
    # chunks that repeat, instead of one program per run that XLA would take
    # minutes to compile (PyTorch's test_index_copy_deterministic: 40,000 writes).
    shape = [6, 5, 3]
    shape[dim] = 300
    x = torch.zeros(shape)
    src = torch.randn(shape)
    rows = torch.randint(300, (3000,)).tolist()
    xt, srct = x.tpu(), src.tpu()
    torch_tpu.reset_metrics()
    for i, row in enumerate(rows):
        xt.select(dim, row).copy_(srct.select(dim, i % 300))
        x.select(dim, row).copy_(src.select(dim, i % 300))
    assert torch.equal(xt.cpu(), x)
    m = torch_tpu.metrics()
    assert m["compiles"] <= 6, m["shape_families"]
    assert 3000 / 256 <= m["executions"] <= 3000 / 64, m


def test_shape_families_count_the_programs_of_each_computation():
    x = torch.arange(300.0).tpu()
    torch_tpu.reset_metrics()
    for n in range(5, 25):
        (x[:n] * 3 + 1).sum().item()
    families = torch_tpu.metrics()["shape_families"]
    assert families[0]["programs"] == 20 and "aten::" in families[0]["ops"], families


def test_bucket_padding_pads_causal_lm_batches_to_bucketed_lengths():
    assert [bucket_length(n) for n in (1, 16, 17, 100)] == [16, 16, 32, 128]
    batch = {"input_ids": torch.tensor([[5, 6, 7]]), "attention_mask": torch.tensor([[1, 1, 1]]),
             "labels": torch.tensor([[5, 6, 7]]), "position_ids": torch.tensor([[0, 1, 0]]), "n": torch.tensor([3])}
    padded = BucketPadding(pad_token_id=9, min_bucket=4).pad(batch)
    assert padded["input_ids"].tolist() == [[5, 6, 7, 9]]
    assert padded["attention_mask"].tolist() == [[1, 1, 1, 0]]
    assert padded["labels"].tolist() == [[5, 6, 7, -100]]
    assert padded["position_ids"].tolist() == [[0, 1, 0, 1]]  # the padding continues the last sequence
    assert padded["n"].tolist() == [3]
    samples = [(torch.tensor([1, 2, 3, 4, 5]), 0), (torch.tensor([6, 7, 8, 9, 1]), 1)]
    ids, labels = BucketPadding(min_bucket=8)(samples)
    assert ids.shape == (2, 8) and labels.tolist() == [0, 1]


def _llama(layers=1, width=32, **extra):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=width, intermediate_size=2 * width,
                                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=4096, **extra)
    return transformers.LlamaForCausalLM(config).eval()


def _greedy_on_cpu_then_tpu(model, ids, new_tokens):
    """(CPU's tokens, tpu's tokens) of a greedy generate; the metrics count the tpu run."""
    kw = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    with torch.no_grad():
        expected = model.generate(ids, **kw)
        model.to("tpu")
        torch_tpu.reset_metrics()
        return expected, model.generate(ids.tpu(), **kw).cpu()


def test_long_generate_compiles_per_bucket_not_per_token():
    ids = torch.randint(0, 128, (1, 32), generator=torch.Generator().manual_seed(0))
    expected, got = _greedy_on_cpu_then_tpu(_llama(), ids, 1024)
    assert torch.equal(got, expected)
    # 5 buckets (64 to 1024 positions), a few programs each (the step, the
    # stop check, growing the buffers), and the prefill's.
    assert compiles() <= 40, torch_tpu.metrics()["shape_families"]


def test_bucketed_generate_keeps_transformers_semantics():
    model = _llama(layers=2, pad_token_id=0)
    ids = torch.randint(1, 128, (2, 20), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :7] = 0  # a left-padded row
    ids[1, :7] = 0
    kw = dict(max_new_tokens=70, do_sample=False, return_dict_in_generate=True, output_scores=True)
    with torch.no_grad():
        expected = model.generate(ids, attention_mask=mask, **kw)
        model.to("tpu")
        torch_tpu.reset_metrics()
        got = model.generate(ids.tpu(), attention_mask=mask.tpu(), **kw)
        assert torch.equal(got.sequences.cpu(), expected.sequences)
        assert len(got.scores) == len(expected.scores)
        for a, b in zip(got.scores, expected.scores):
            finite = torch.isfinite(b)
            assert torch.equal(torch.isfinite(a.cpu()), finite)
            torch.testing.assert_close(a.cpu()[finite], b[finite], rtol=1e-4, atol=1e-4)
        # The returned cache reads as Transformers' own: the tokens decoded so far.
        for got_layer, layer in zip(got.cache.layers, expected.cache.layers):
            assert got_layer.keys.shape == layer.keys.shape and got_layer.get_seq_length() == layer.get_seq_length()
            torch.testing.assert_close(got_layer.keys.cpu(), layer.keys, rtol=1e-4, atol=1e-5)
        sampled = model.generate(ids.tpu(), attention_mask=mask.tpu(), max_new_tokens=100, min_new_tokens=100,
                                 do_sample=True, top_k=10)
    assert sampled.shape == (2, 120) and bool(((sampled >= 0) & (sampled < 128)).all())


def test_bucketed_generate_of_a_sliding_window_model_matches_cpu():
    torch.manual_seed(0)
    config = transformers.MistralConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, sliding_window=8)
    model = transformers.MistralForCausalLM(config).eval()
    ids = torch.randint(1, 96, (1, 12), generator=torch.Generator().manual_seed(3))
    expected, got = _greedy_on_cpu_then_tpu(model, ids, 100)
    assert torch.equal(got, expected)  # 100 tokens, far past the window of 8
    assert compiles() <= 25


def test_bucketed_generate_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("TORCH_TPU_BUCKETED_GENERATE", "0")
    model = _llama().to("tpu")
    with torch.no_grad():
        torch_tpu.reset_metrics()
        model.generate(torch.zeros(1, 4, dtype=torch.long).tpu(), max_new_tokens=12, min_new_tokens=12)
    assert torch_tpu.metrics()["shape_families"][0]["programs"] >= 10  # a program per length again


def test_variable_length_training_with_bucket_padding_compiles_per_bucket():
    lengths = [5, 9, 17, 30, 12, 64, 33, 7, 50, 20, 61, 3, 40, 25, 15, 58]
    g = torch.Generator().manual_seed(2)
    batches = [{"input_ids": (ids := torch.randint(1, 128, (2, n), generator=g)),
                "attention_mask": torch.ones_like(ids), "labels": ids.clone()} for n in lengths]
    cpu, tpu = _llama(), _llama().tpu()
    cpu.train()
    tpu.train()
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (cpu, tpu)]
    padding = BucketPadding(pad_token_id=0)
    torch_tpu.reset_metrics()
    for batch in batches:
        losses = []
        for model, opt, b in ((cpu, opts[0], batch), (tpu, opts[1], padding.pad(batch))):
            loss = model(**{k: v.to(model.device) for k, v in b.items()}).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-4, losses  # padding changes nothing
    # Buckets 16, 32 and 64: a few programs each (the first steps of a loop
    # settle into its steady programs), not one set per length.
    assert compiles() <= 3 * 8, torch_tpu.metrics()["shape_families"]
