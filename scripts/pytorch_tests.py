"""Runs PyTorch's own device-generic test files on tpu and on CPU; writes docs/pytorch_tests.md.

    python scripts/pytorch_tests.py --tests-dir DIR [--files test_view_ops.py ...] [--test-timeout S]
                                    [--file-timeout S] [--sample N] [--device-tests-only]

DIR holds copies of files from PyTorch's `test/` directory (their code stays out
of this repository; `TORCH_TPU_PYTORCH_TESTS` may name DIR instead). Each file
runs twice with the same torch: `PYTORCH_TESTING_DEVICE_ONLY_FOR=cpu` and
`=privateuse1` (PyTorch's PrivateUse1TestBase, our `tpu` device). A test that
crashes the interpreter or makes no progress for `--test-timeout` seconds is
recorded as such, and the run goes on with the tests after it; the tests a
file has not reached after `--file-timeout` seconds are recorded as not run. Each
file's summary is kept in docs/pytorch_tests.json, so a run of some files
updates their rows and keeps the others. The report
compares the two devices test by test (names with the device taken out): how
many of the tests that pass on CPU pass on tpu, and the most common first lines
of the errors of those that do not. With `--sample N` a file runs one test in N
(chosen by a hash of the test's device-free name, so both devices run the same
ones): an estimate for the files too large to run whole here, marked as such.
`--device-tests-only` leaves out the classes that are not device-generic (most
of test_autograd's tests build CPU tensors whatever the device).
"""
import argparse
import collections
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILES = ["test_view_ops.py", "test_shape_ops.py", "test_indexing.py", "test_tensor_creation_ops.py",
                 "test_sort_and_select.py", "test_type_promotion.py"]
OUTCOMES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_RESULT = re.compile(r"^(\S+::\S+) (" + "|".join(OUTCOMES) + r")\b")
_ERROR_LINE = re.compile(r"^(ERROR|SKIP)-LINE (\S+::\S+) - (.*)$")  # from scripts/pytest_error_lines.py


def device_free_name(nodeid):
    """The test's name without its device: TestFooCPU::test_x_cpu_float32 -> TestFoo::test_x_float32."""
    name = re.sub(r"(CPU|TPU|PRIVATEUSE1)(::)", r"\2", nodeid)
    return re.sub(r"_(cpu|tpu|privateuse1)(?=_|$)", "", name)


def collect(path, env):
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          os.path.basename(path)], cwd=os.path.dirname(path), env=env, capture_output=True,
                         text=True)
    return [line.strip() for line in out.stdout.splitlines() if "::" in line and not line.startswith(" ")]


def run_tests(path, nodeids, env, test_timeout, file_timeout):
    """Runs `nodeids`; returns ({nodeid: outcome}, {nodeid: first error line}). Tests
    still to run after `file_timeout` seconds are recorded as NOT RUN."""
    outcomes, errors = {}, {}
    remaining = list(nodeids)
    deadline = time.monotonic() + file_timeout
    while remaining:
        cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "pytest_error_lines",
               "--tb=no", "-o", "console_output_style=classic"] + remaining
        proc = subprocess.Popen(cmd, cwd=os.path.dirname(path), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        last_output = [time.monotonic()]

        def read():
            for line in proc.stdout:
                last_output[0] = time.monotonic()
                if m := _RESULT.match(line):
                    outcomes[m.group(1)] = m.group(2)
                elif e := _ERROR_LINE.match(line.strip()):
                    errors.setdefault(e.group(2), e.group(3).strip())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        timed_out = out_of_time = False
        while proc.poll() is None:
            time.sleep(1)
            now = time.monotonic()
            # Sticky: the killed process's last partial line must not make a timeout look like a crash.
            timed_out = timed_out or now - last_output[0] > test_timeout
            out_of_time = out_of_time or now > deadline
            if timed_out or out_of_time:
                os.killpg(proc.pid, signal.SIGKILL)
        reader.join(10)
        rest = [n for n in remaining if n not in outcomes]
        if not rest:
            break
        if out_of_time and not timed_out:
            for n in rest:
                outcomes[n] = errors[n] = "NOT RUN"
            break
        if not timed_out and proc.returncode in (0, 1):  # a normal end: outcomes the output did not show
            for n in rest:
                outcomes[n] = errors[n] = "UNKNOWN"
            break
        # Tests run in the order given: the first without an outcome crashed or hung.
        culprit = rest[0]
        outcomes[culprit] = errors[culprit] = "TIMEOUT" if timed_out else f"CRASH ({proc.returncode})"
        remaining = rest[1:]
    return outcomes, errors


def in_sample(nodeid, sample):
    return zlib.crc32(device_free_name(nodeid).encode()) % sample == 0


def is_device_test(nodeid):
    """Whether the test belongs to a class instantiate_device_type_tests made (TestFooCPU; for tpu
    TestFooPRIVATEUSE1, or TestFooTPU where the file instantiates after importing torch_tpu)."""
    return re.search(r"(CPU|TPU|PRIVATEUSE1)::", nodeid) is not None


def run_file(path, device, test_timeout, file_timeout, sample, device_tests_only):
    env = dict(os.environ, PYTORCH_TESTING_DEVICE_ONLY_FOR="privateuse1" if device == "tpu" else "cpu",
               COLUMNS="400", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(os.path.abspath(__file__)),
                                                        os.environ.get("PYTHONPATH")])))
    env.setdefault("TORCH_TPU_CACHE_DIR", os.path.join(ROOT, "build", "pytorch_tests_cache"))
    start = time.monotonic()
    nodeids = [n for n in collect(path, env)
               if in_sample(n, sample) and (is_device_test(n) or not device_tests_only)]
    outcomes, errors = run_tests(path, nodeids, env, test_timeout, file_timeout) if nodeids else ({}, {})
    return {"outcomes": outcomes, "errors": errors, "seconds": time.monotonic() - start, "collected": len(nodeids)}


def cause(message):
    """A failure message without the numbers that vary from test to test."""
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", message)[:160]


def counts(outcomes):
    c = collections.Counter(o if not o.startswith("CRASH") else "CRASH" for o in outcomes.values())
    return {k: c.get(k, 0) for k in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS", "CRASH", "TIMEOUT",
                                     "NOT RUN")}


def summarize(result, sample, device_tests_only):
    """One file's counts on both devices and the causes of the tests that pass on CPU and not on tpu."""
    cpu, tpu = result["cpu"], result["tpu"]
    cpu_pass = {device_free_name(n) for n, o in cpu["outcomes"].items() if o == "PASSED"}
    tpu_by_name = {device_free_name(n): (n, o) for n, o in tpu["outcomes"].items()}
    causes, skips = collections.Counter(), collections.Counter()
    examples = {}
    for n in sorted(cpu_pass):
        nodeid, outcome = tpu_by_name.get(n, (None, "MISSING"))
        if outcome in ("SKIPPED", "MISSING"):
            # MISSING: a test class the file instantiates only for other devices (only_for="cpu").
            key = (cause(tpu["errors"].get(nodeid, "no reason given")) if nodeid
                   else "not instantiated for tpu by the file (only_for / except_for)")
            skips[key] += 1
            examples.setdefault(key, n.split("::")[-1])
        if outcome in ("PASSED", "SKIPPED", "MISSING", "XFAIL", "NOT RUN"):
            continue
        key = cause(tpu["errors"].get(nodeid, outcome))
        causes[key] += 1
        examples.setdefault(key, n.split("::")[-1])
    return {"cpu": counts(cpu["outcomes"]), "tpu": counts(tpu["outcomes"]), "cpu_passed": len(cpu_pass),
            "kept": sum(1 for n in cpu_pass if tpu_by_name.get(n, ("", ""))[1] == "PASSED"),
            "skipped_on_tpu": sum(skips.values()),
            "skips": [[key, n, examples[key]] for key, n in skips.most_common()],
            "seconds": [round(cpu["seconds"]), round(tpu["seconds"])],
            "causes": [[key, n, examples[key]] for key, n in causes.most_common()],
            "date": str(datetime.date.today()), "torch": _torch_version(), "sample": sample,
            "device_tests_only": device_tests_only}


def report(summaries, tests_dir):
    lines = ["# PyTorch's own device tests on tpu", "",
             "Written by `python scripts/pytorch_tests.py --tests-dir DIR` from the results it keeps in "
             "`docs/pytorch_tests.json` (one entry per file, replaced when the file is run again). Each file of "
             "PyTorch's `test/` directory ran with `PYTORCH_TESTING_DEVICE_ONLY_FOR=cpu` and `=privateuse1` (the "
             "`tpu` device) with the same torch; tests are matched by name with the device taken out. Sources of "
             f"the files: `{os.path.join(tests_dir, 'SOURCES.txt')}` where present.", "",
             "| file | CPU passed | tpu passed / failed / errors / skipped | crashed / timed out / not run | "
             "tpu passes of CPU's passes | the same, less those the file skips on tpu | seconds (CPU, tpu) | run on |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    causes, skips = collections.Counter(), collections.Counter()
    examples = {}

    def rate(kept, of):
        return f"{kept} / {of} ({100 * kept / max(1, of):.1f}%)"

    for name, s in summaries.items():
        c, t = s["cpu"], s["tpu"]
        runnable = s["cpu_passed"] - s.get("skipped_on_tpu", 0)
        sampled = f" (1 test in {s['sample']})" if s.get("sample", 1) > 1 else ""
        if s.get("device_tests_only"):
            sampled += " (device-type tests only)"
        lines.append(f"| {name}{sampled} | {c['PASSED']} | {t['PASSED']} / {t['FAILED']} / {t['ERROR']} / {t['SKIPPED']} | "
                     f"{t['CRASH']} / {t['TIMEOUT']} / {t['NOT RUN']} | {rate(s['kept'], s['cpu_passed'])} | "
                     f"{rate(s['kept'], runnable)} | {s['seconds'][0]}, {s['seconds'][1]} | "
                     f"{s['date']} (torch {s['torch']}) |")
        for table, entries in ((causes, s["causes"]), (skips, s.get("skips", []))):
            for key, n, example in entries:
                table[key] += n
                examples.setdefault(key, f"{name}::{example}")
    for title, table in (("Most common causes (tests that pass on CPU and not on tpu)", causes),
                         ("Why the files skip on tpu tests that pass on CPU (PyTorch's decorators and checks)", skips)):
        lines += ["", f"## {title}", "", "| tests | first line of the error or reason | e.g. |", "| --- | --- | --- |"]
        for key, n in table.most_common(40):
            lines.append(f"| {n} | {key.replace('|', '/')} | `{examples[key]}` |")
    return "\n".join(lines) + "\n"


def _torch_version():
    import torch

    return torch.__version__


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tests-dir", default=os.environ.get("TORCH_TPU_PYTORCH_TESTS"))
    parser.add_argument("--files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--test-timeout", type=float, default=300)
    parser.add_argument("--file-timeout", type=float, default=3600, help="seconds per file and device")
    parser.add_argument("--sample", type=int, default=1, help="run one test in N of each file")
    parser.add_argument("--device-tests-only", action="store_true",
                        help="leave out the tests of classes that are not device-generic (they run on CPU either way)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "pytorch_tests.md"))
    args = parser.parse_args()
    if not args.tests_dir or not os.path.isdir(args.tests_dir):
        parser.error("give the directory of PyTorch's test files with --tests-dir or TORCH_TPU_PYTORCH_TESTS")
    kept_results = os.path.splitext(args.out)[0] + ".json"
    summaries = {}
    if os.path.exists(kept_results):
        with open(kept_results) as f:
            summaries = json.load(f)
    def write():
        with open(kept_results, "w") as f:
            json.dump(summaries, f, indent=1, sort_keys=True)
        with open(args.out, "w") as f:
            f.write(report(summaries, args.tests_dir))

    for name in args.files:
        path = os.path.join(args.tests_dir, name)
        results = {device: run_file(path, device, args.test_timeout, args.file_timeout, args.sample,
                                    args.device_tests_only) for device in ("cpu", "tpu")}
        summaries[name] = summarize(results, args.sample, args.device_tests_only)
        print(f"{name}: cpu {summaries[name]['cpu']['PASSED']} passed, tpu {summaries[name]['tpu']}", flush=True)
        write()  # after each file: a long run leaves what it has done
    write()  # `--files` alone rewrites the report from the kept results
    print("wrote", args.out)


if __name__ == "__main__":
    main()
