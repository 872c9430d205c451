"""Runs the whole OpInfo sweep on the tpu device and writes docs/op_coverage.md.

    python scripts/op_coverage.py                 # every op, every sample (the full sweep)
    python scripts/op_coverage.py --max-samples 3 # quicker, fewer samples per case
    python scripts/op_coverage.py --ops 'sort|topk' --out /tmp/cov.md

The sweep runs in strict mode with the CPU fallback disabled, so a case that
needs an operator without a tpu lowering is counted as "fallback", never as a
pass. Native overloads are counted from the dispatcher's PrivateUse1 table.

The cases run in worker processes, a slice of ops each: one process that
compiles every sample's program runs out of memory mappings (each loaded XLA
CPU executable keeps its own, and the memory tier of the compilation cache is
not bounded yet).
"""
import argparse
import collections
import dataclasses
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

os.environ["TORCH_TPU_CPU_FALLBACK"] = "0"
os.environ["TORCH_TPU_EAGER_MODE"] = "strict"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

importlib.import_module("torch_tpu")  # registers the tpu device even where autoloading is off
from tests.opinfo import harness  # noqa: E402


def native_overloads():
    """ATen overloads with a tpu kernel of their own (the CPU fallback excluded)."""
    names = torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1")
    return sorted(n for n in names if n.startswith("aten::"))


COMPLEX_NAMES = {harness.dtype_name(d) for d in harness.COMPLEX_DTYPES}


def group(result):
    """The headline a case counts toward: complex dtypes are counted apart."""
    return f"{result.check} ({result.dtype})" if result.dtype in COMPLEX_NAMES else result.check


def summarize(results):
    by_group = collections.defaultdict(collections.Counter)
    for r in results:
        by_group[group(r)][r.status] += 1
    return by_group


def rate(counter):
    tested = counter["pass"] + counter["fail"] + counter["fallback"] + counter["unsupported"] + counter["xfail"]
    return counter["pass"], tested, (100.0 * counter["pass"] / tested if tested else 0.0)


def write_report(path, results, overloads, seconds, max_samples):
    by_check = summarize(results)
    fallback_ops = collections.Counter(r.reason for r in results if r.status == "fallback")
    lines = [
        "# ATen op coverage on the tpu device",
        "",
        "Written by `python scripts/op_coverage.py"
        + (f" --max-samples {max_samples}" if max_samples else "")
        + f"` ({seconds / 60:.1f} min, torch {torch.__version__}). Do not edit by hand.",
        "",
        "Each case is an (OpInfo, dtype) pair from PyTorch's `op_db` (with the linalg, special and foreach",
        "databases): every sample input runs on CPU and on tpu (strict mode, CPU fallback disabled)",
        "and the results are compared. Backward cases compare the gradients of float32 samples.",
        "The forward and backward counts cover float32, bfloat16, float16, int64 and bool; complex64",
        "forward cases are counted on their own line.",
        "Skips and expected failures are declared with reasons in `tests/opinfo/expectations.py`.",
        "",
        "## Counts",
        "",
        f"- Native tpu kernels: **{len(overloads)}** ATen overloads (listed at the end).",
    ]
    for check in ["forward", "backward"] + [f"forward ({name})" for name in sorted(COMPLEX_NAMES)]:
        c = by_check[check]
        passed, tested, pct = rate(c)
        lines.append(
            f"- {check[0].upper() + check[1:]}: **{passed} / {tested}** (op, dtype) cases pass ({pct:.1f}%); "
            f"{c['fallback']} need a missing lowering, "
            + (f"{c['unsupported']} reach a kernel without a complex lowering, " if c["unsupported"] else "")
            + f"{c['fail']} fail, {c['xfail']} expected failures, "
            f"{c['skip']} skipped."
        )
    lines += ["", "## Missing lowerings, by cases affected", "", "| ATen operator | cases |", "| --- | --- |"]
    lines += [f"| `{name}` | {n} |" for name, n in fallback_ops.most_common()]
    lines += ["", "## Every case", "", "| op | check | dtype | status | samples | reason |", "| --- | --- | --- | --- | --- | --- |"]
    for r in sorted(results, key=lambda r: (r.op, r.check, r.dtype)):
        reason = re.sub(r"\s+", " ", r.reason).replace("|", "\\|")[:160]
        lines.append(f"| {r.op} | {r.check} | {r.dtype} | {r.status} | {r.samples} | {reason} |")
    lines += ["", "## Native overloads", ""]
    lines += [", ".join(f"`{n[len('aten::'):]}`" for n in overloads)]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


OPS_PER_WORKER = 60


def run_worker(op_ids, max_samples, out_path):
    """Runs every case of the named ops here and writes the results as JSON."""
    wanted = set(op_ids)
    ops = [op for op in harness.all_opinfos() if harness.op_id(op) in wanted]
    results = [dataclasses.asdict(harness.run_case(op, dtype, check, max_samples))
               for op, dtype, check in harness.cases(ops, complex_dtypes=harness.COMPLEX_DTYPES)]
    with open(out_path, "w") as f:
        json.dump(results, f)


def run_in_workers(ops, max_samples):
    """Every case of `ops`, run in worker processes of OPS_PER_WORKER ops each."""
    results = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for first in range(0, len(ops), OPS_PER_WORKER):
            chunk = [harness.op_id(op) for op in ops[first:first + OPS_PER_WORKER]]
            ids_path, out_path = os.path.join(tmp, "ops.json"), os.path.join(tmp, "results.json")
            with open(ids_path, "w") as f:
                json.dump(chunk, f)
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", ids_path, "--worker-out", out_path]
            if max_samples:
                cmd += ["--max-samples", str(max_samples)]
            subprocess.run(cmd, check=True)
            with open(out_path) as f:
                results += [harness.Result(**r) for r in json.load(f)]
            print(f"{len(results)} cases ({first + len(chunk)} of {len(ops)} ops), "
                  f"{time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-samples", type=int, default=None, help="samples per case (default: all)")
    parser.add_argument("--ops", default=None, help="regular expression over OpInfo ids")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "op_coverage.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a JSON list of op ids to run here
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.worker:
        with open(args.worker) as f:
            run_worker(json.load(f), args.max_samples, args.worker_out)
        return
    ops = harness.all_opinfos()
    if args.ops:
        ops = [op for op in ops if re.search(args.ops, harness.op_id(op))]
    start = time.perf_counter()
    results = run_in_workers(ops, args.max_samples)
    seconds = time.perf_counter() - start
    write_report(args.out, results, native_overloads(), seconds, args.max_samples)
    for check, c in summarize(results).items():
        passed, tested, pct = rate(c)
        print(f"{check}: {passed}/{tested} pass ({pct:.1f}%), {dict(c)}")
    print(f"native overloads: {len(native_overloads())}; {seconds:.0f} s; report: {os.path.normpath(args.out)}")


if __name__ == "__main__":
    main()
