"""Long generation and variable-length training: speed and compile counts, side by side in one run.

    python benchmarks/decode.py [--new-tokens 2048] [--prompt 32] [--batches 200] [--skip-compiled] [--skip-training]

1. Greedy `generate()` of a small Transformers Llama (default dynamic cache),
   prompt `--prompt` tokens, `--new-tokens` new ones: tokens/s on tpu (default
   mode) and in PyTorch CPU eager, the programs compiled on tpu, and whether
   the tokens are identical. Steady state: the median time of the decode steps
   that compiled nothing (a streamer notes each step's time and the compile
   counter), beside the same model's decode at a fixed length: generate() of
   32 tokens after a prompt as long as the long run's mean length, steps timed
   the same way (all its programs compiled by a first run).
2. Compiled decode: greedy `generate()` with Transformers' static KV cache
   (`cache_implementation="static"`) and its decode step compiled through our backend
   (`CompileConfig(backend="tpu")`), batch 1 and 8, prompt 32, 64 new tokens: tokens/s
   beside the same generate() in fused mode (dynamic cache, bucketed) and PyTorch CPU eager,
   all after a first run that compiles, the programs compiled by the timed run, and whether
   the tokens are identical to CPU's.
3. Training the same model on `--batches` batches of random lengths (8 to 512
   tokens), on tpu with and without `torch_tpu.bucketing.BucketPadding`:
   programs compiled, steps/s after the first pass, and the largest shape
   family (`torch_tpu.metrics()["shape_families"]`).

The compilation cache on disk is turned off for the run (TORCH_TPU_CACHE_DIR=""),
so the compile counts are what a fresh machine would compile.
"""
import argparse
import os
import statistics
import sys
import time

os.environ["TORCH_TPU_CACHE_DIR"] = ""

import torch  # noqa: E402

import torch_tpu  # noqa: E402
from torch_tpu.bucketing import BucketPadding  # noqa: E402


def small_llama(vocab):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384)
    return LlamaForCausalLM(config).eval()


def compiles():
    m = torch_tpu.metrics()
    return m["compiles"] + m["disk_cache_hits"]


class StepClock:
    """A streamer: the time of each decode step and whether it compiled."""

    def __init__(self):
        self.steps, self.last, self.compiled = [], None, None

    def put(self, tokens):
        now, c = time.perf_counter(), compiles()
        if self.last is not None:
            self.steps.append((now - self.last, c != self.compiled))
        self.last, self.compiled = now, c

    def end(self):
        pass


def generate(model, ids, new_tokens, streamer=None):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                              streamer=streamer)


def fixed_length_decode(model, prompt_ids, steps):
    """Steady tokens/s of generate() decoding `steps` tokens after `prompt_ids`: every
    step sees about the same cache length (a run first compiles what the timed one uses)."""
    for _ in range(2):
        clock = StepClock()
        generate(model, prompt_ids, steps, clock)
    return 1 / statistics.median(t for t, compiled in clock.steps if not compiled)


def decode_section(prompt, new_tokens):
    vocab = 512
    model = small_llama(vocab)
    ids = torch.randint(0, vocab, (1, prompt), generator=torch.Generator().manual_seed(1))
    start = time.perf_counter()
    expected = generate(model, ids, new_tokens)
    cpu_tps = new_tokens / (time.perf_counter() - start)

    model = model.to("tpu")
    torch_tpu.reset_metrics()
    clock = StepClock()
    start = time.perf_counter()
    got = generate(model, ids.to("tpu"), new_tokens, clock)
    tpu_tps = new_tokens / (time.perf_counter() - start)
    n_compiles = compiles()
    families = torch_tpu.metrics()["shape_families"]
    identical = torch.equal(got.cpu(), expected)
    steady = [t for t, compiled in clock.steps if not compiled]
    steady_tps = 1 / statistics.median(steady)
    fixed_len = prompt + new_tokens // 2
    fixed_tps = fixed_length_decode(model, got[:, :fixed_len], 32)

    print(f"generate: small Llama (2 layers, width 64), prompt {prompt}, {new_tokens} new tokens, greedy")
    print(f"  PyTorch CPU eager   {cpu_tps:8.1f} tokens/s")
    print(f"  tpu (fused)         {tpu_tps:8.1f} tokens/s over the whole run, {n_compiles} programs compiled "
          f"({n_compiles / new_tokens:.3f} per token), tokens identical to CPU: {identical}")
    print(f"  tpu steady state    {steady_tps:8.1f} tokens/s (median of {len(steady)} steps that compiled nothing)")
    print(f"  tpu fixed length    {fixed_tps:8.1f} tokens/s (32 tokens after a prompt of {fixed_len}: "
          f"the run's mean length)")
    print(f"  steady / fixed      {steady_tps / fixed_tps:8.2f}x")
    print(f"  largest shape family: {families[0]['programs']} programs ({families[0]['ops'][:70]})")
    return identical


def second_of_two_runs(model, ids, new_tokens, **options):
    """Greedy generate() twice: the second run's tokens, seconds and programs compiled."""
    for _ in range(2):
        before = compiles()
        start = time.perf_counter()
        with torch.no_grad():
            tokens = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                    min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, **options)
        elapsed = time.perf_counter() - start
    return tokens, elapsed, compiles() - before


def compiled_decode_section(prompt=32, new_tokens=64):
    from transformers.generation.configuration_utils import CompileConfig

    vocab = 512
    cpu_model = small_llama(vocab)
    model = small_llama(vocab).to("tpu")
    ways = {
        "fused (dynamic cache)": {},
        "compiled (static cache)": dict(cache_implementation="static", compile_config=CompileConfig(backend="tpu")),
    }
    print(f"compiled decode: the same Llama, prompt {prompt}, {new_tokens} new tokens, greedy; "
          f"the second of two runs timed")
    ok = True
    for batch in (1, 8):
        ids = torch.randint(1, vocab, (batch, prompt), generator=torch.Generator().manual_seed(2))
        expected, elapsed, _ = second_of_two_runs(cpu_model, ids, new_tokens)
        rates = {"PyTorch CPU eager": batch * new_tokens / elapsed}
        notes = {}
        for name, options in ways.items():
            got, elapsed, compiled = second_of_two_runs(model, ids.to("tpu"), new_tokens, **options)
            rates[name] = batch * new_tokens / elapsed
            identical = torch.equal(got.cpu(), expected)
            ok &= identical
            notes[name] = f"{compiled} programs compiled, tokens identical to CPU: {identical}"
        for name, rate in rates.items():
            print(f"  batch {batch}  {name:24s} {rate:9.1f} tokens/s" + (f"  ({notes[name]})" if name in notes else ""))
        print(f"  batch {batch}  compiled / fused          {rates['compiled (static cache)'] / rates['fused (dynamic cache)']:9.2f}x")
    return ok


def training_batches(n, vocab):
    g = torch.Generator().manual_seed(3)
    for _ in range(n):
        length = int(torch.randint(8, 513, (1,), generator=g))
        ids = torch.randint(1, vocab, (4, length), generator=g)
        yield {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def train(model, batches, pad):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch_tpu.reset_metrics()
    times, start = [], time.perf_counter()
    for i, batch in enumerate(batches):
        if pad:
            batch = pad.pad(batch)
        batch = {k: v.to("tpu") for k, v in batch.items()}
        loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()
        now = time.perf_counter()
        times.append(now - start)
        start = now
    families = torch_tpu.metrics()["shape_families"]
    return compiles(), times, families


def training_section(n_batches):
    vocab = 512
    batches = list(training_batches(n_batches, vocab))
    distinct = len({b["input_ids"].shape[1] for b in batches})
    print(f"training: the same Llama, AdamW, {n_batches} batches of 4 x (8 to 512) tokens "
          f"({distinct} distinct lengths)")
    for name, pad in (("unbucketed", None), ("BucketPadding", BucketPadding(pad_token_id=0))):
        model = small_llama(vocab).train().to("tpu")
        n_compiles, times, families = train(model, batches, pad)
        second_half = times[len(times) // 2:]
        print(f"  {name:14s} {n_compiles:5d} programs compiled, {len(second_half) / sum(second_half):6.2f} steps/s "
              f"over the second half; largest shape family {families[0]['programs']} programs")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--new-tokens", type=int, default=2048)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--skip-compiled", action="store_true")
    args = parser.parse_args()
    print(f"platform {torch.tpu.platform()}; torch {torch.__version__}")
    identical = decode_section(args.prompt, args.new_tokens)
    if not args.skip_compiled:
        identical &= compiled_decode_section()
    if not args.skip_training:
        training_section(args.batches)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
