"""Writes docs/model_coverage.md: every architecture of tests/models/catalog.py checked on tpu.

    python scripts/model_coverage.py [--models NAME ...] [--no-generate] [--out PATH]

Each architecture runs in its own process (tests/models/harness.py: Tier 1 forward on tpu,
Tier 2 parity with the CPU in float32, and for decoder LMs three training steps and greedy
generation). The compilation cache on disk is used as usual, so a second run is much faster.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import torch_tpu
import transformers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "models"))
from catalog import MODELS  # noqa: E402
from harness import ATOL, NEW_TOKENS, RTOL, TRAIN_STEPS  # noqa: E402


def run_one(name, generate, timeout):
    cmd = [sys.executable, str(ROOT / "tests" / "models" / "harness.py"), name]
    if not generate:
        cmd.append("--no-generate")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"name": name, "tier1": False, "tier2": False, "errors": {"run": f"timed out after {timeout} s"}}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"name": name, "tier1": False, "tier2": False, "errors": {"run": f"exit {proc.returncode}: {tail[0][:300]}"}}


def mark(value):
    return {True: "pass", False: "**fail**", None: "-"}[value]


def write_report(results, path, seconds, generate):
    decoders = [r for r in results if r.get("kind") == "decoder"]
    n = len(results)
    tier1 = sum(bool(r.get("tier1")) for r in results)
    tier2 = sum(bool(r.get("tier2")) for r in results)
    no_fallback = sum(bool(r.get("tier1")) and not r.get("fallback_ops") for r in results)
    lines = [
        "# Model coverage",
        "",
        f"Written by `python scripts/model_coverage.py` (transformers {transformers.__version__}, "
        f"{torch_tpu.get_eager_mode()} eager mode, "
        f"XLA CPU plugin) in {seconds / 60:.1f} min. Small configurations of each architecture, random weights "
        "from a fixed seed, nothing downloaded (`tests/models/catalog.py`).",
        "",
        f"- Tier 1 (forward runs on tpu): **{tier1} / {n}** ({100 * tier1 / n:.1f}%)",
        f"- Tier 2 (output matches CPU float32 within rtol {RTOL:g}, atol {ATOL:g}, the same for every model): "
        f"**{tier2} / {n}** ({100 * tier2 / n:.1f}%)",
        f"- Forward passes with no CPU fallback: **{no_fallback} / {n}**",
        f"- Decoder LMs, {TRAIN_STEPS} SGD training steps (losses and all gradients within the same tolerance): "
        f"**{sum(bool(r.get('train')) for r in decoders)} / {len(decoders)}**",
    ]
    if generate:
        lines.append(f"- Decoder LMs, greedy `generate()` of {NEW_TOKENS} new tokens with the KV cache equal to the "
                     f"CPU's tokens: **{sum(bool(r.get('generate')) for r in decoders)} / {len(decoders)}**")
    compiled = [r for r in results if "compiled" in r]
    lines.append(f"- Under `torch.compile(backend=\"tpu\")` (forward, and a decoder's training steps, checked the same "
                 f"way): **{sum(bool(r['compiled']) for r in compiled)} / {len(compiled)}** "
                 f"({', '.join(r['name'] for r in compiled)})")
    lines += [
        "",
        "Max error is the largest |tpu - cpu| of the compared output. Seconds are the whole check, compiling",
        "what the on-disk compilation cache does not already hold (a repeated run compiles almost nothing).",
        "",
        "| model | family | tier 1 | tier 2 | max abs error | fallback ops | train | generate | compiled | seconds "
        "| notes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        is_decoder = r.get("kind") == "decoder"
        err = r.get("max_abs_error")
        notes = "; ".join(f"{k}: {v}" for k, v in r.get("errors", {}).items()).replace("|", "\\|")
        if r.get("generate") is False and "generate_first_difference" in r:
            notes += ("; " if notes else "") + f"first different token: {r['generate_first_difference']}"
        lines.append(
            f"| {r['name']} | {r.get('family', '')} | {mark(r.get('tier1'))} | {mark(r.get('tier2'))} | "
            f"{'' if err is None else f'{err:.2e}'} | {', '.join(r.get('fallback_ops', [])) or 'none'} | "
            f"{mark(r.get('train')) if is_decoder else '-'} | "
            f"{mark(r.get('generate')) if is_decoder and generate else '-'} | {mark(r.get('compiled'))} | "
            f"{r.get('seconds', '')} | {notes} |")
    path.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="*", default=None, choices=[m.name for m in MODELS])
    parser.add_argument("--no-generate", action="store_true")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per architecture")
    parser.add_argument("--out", default=str(ROOT / "docs" / "model_coverage.md"))
    args = parser.parse_args()
    names = args.models or [m.name for m in MODELS]
    start = time.perf_counter()
    results = []
    for name in names:
        r = run_one(name, not args.no_generate, args.timeout)
        results.append(r)
        status = " ".join(f"{k}={mark(r.get(k))}" for k in ("tier1", "tier2", "train", "generate") if k in r)
        print(f"{name:12s} {status} {r.get('seconds', '')} s {json.dumps(r.get('errors', {}))[:200]}", flush=True)
    write_report(results, Path(args.out), time.perf_counter() - start, not args.no_generate)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
