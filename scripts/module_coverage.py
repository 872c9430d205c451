"""Runs the whole ModuleInfo sweep (tests/modules) on the tpu device and writes
docs/module_coverage.md.

    python scripts/module_coverage.py                  # every module and sample, float32 and bfloat16
    python scripts/module_coverage.py --max-samples 2 --out /tmp/modules.md

Each sample of each (module, dtype, train/eval) case runs forward, backward and a
state_dict check against CPU in the default (fused) eager mode; see the harness.
Operators without a tpu lowering run on the CPU and are counted as "fell back".
"""
import argparse
import collections
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import torch  # noqa: E402

import torch_tpu  # noqa: E402,F401
from modules import harness  # noqa: E402


def write_report(results, path, command, seconds):
    totals = collections.Counter()
    for r in results:
        totals.update(passed=r.passed, failed=r.failed, fell_back=r.fell_back, skipped=r.skipped)
    ran = totals["passed"] + totals["failed"] + totals["fell_back"]
    lines = [
        "# Module coverage (PyTorch's module_db on tpu against CPU)",
        "",
        f"Written by `{command}` ({seconds / 60:.1f} min); do not edit by hand.",
        "",
        "Each sample: forward, backward (input and parameter gradients) and the state_dict after the",
        "step, against the same module on CPU (tests/modules/harness.py). Samples CPU refuses are skipped.",
        "",
        f"**{totals['passed']} / {ran} samples pass ({100 * totals['passed'] / max(ran, 1):.1f}%)**; "
        f"{totals['fell_back']} ran an operator on the CPU (no tpu lowering), {totals['failed']} failed; "
        f"{totals['skipped']} skipped.",
        "",
        "| module | dtype | mode | passed | fell back | failed | first problem |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        if r.status in ("pass", "skip"):
            continue
        reason = r.reason.replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(f"| {r.module} | {r.dtype} | {'train' if r.training else 'eval'} | {r.passed} | "
                     f"{r.fell_back} | {r.failed} | {reason} |")
    passing = sorted({r.module for r in results} - {r.module for r in results if r.status in ("fail", "fallback")})
    refused = sorted(f"{r.module} ({r.dtype})" for r in results if r.status == "skip" and r.training)
    lines += ["", f"Every sample passes ({len(passing)} modules): " + ", ".join(passing), "",
              "CPU refuses every sample (not counted): " + (", ".join(refused) or "none"), ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return totals


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-samples", type=int, default=None)
    parser.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "module_coverage.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    results = []
    dtypes = tuple(getattr(torch, name) for name in args.dtypes.split(","))
    for info, dtype, training in harness.cases(dtypes=dtypes):
        results.append(harness.run_case(info, dtype, training, max_samples=args.max_samples))
        r = results[-1]
        print(f"{harness.case_id(info, dtype, training):55s} {r.status:8s} {r.passed}/{r.passed + r.failed + r.fell_back}"
              f" {r.seconds:5.1f}s {r.reason[:80]}", flush=True)
    command = "python scripts/module_coverage.py" + (f" --max-samples {args.max_samples}" if args.max_samples else "")
    command += f" --dtypes {args.dtypes}" if args.dtypes != "float32,bfloat16" else ""
    totals = write_report(results, args.out, command, time.perf_counter() - start)
    print(dict(totals))


if __name__ == "__main__":
    main()
