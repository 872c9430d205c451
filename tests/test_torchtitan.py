"""TorchTitan's llama3 debug model trains on tpu with FSDP and with tensor parallelism
(2 ranks, 10 steps each) and its losses match the same TorchTitan runs on CPU with gloo:
examples/torchtitan/run.py, in the environment examples/torchtitan/setup.sh makes
(scripts/test.sh makes it). About 2 minutes."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv-titan" / "bin" / "python"


def test_torchtitan_fsdp_and_tensor_parallel_losses_match_cpu(tmp_path):
    assert PYTHON.exists(), "no .venv-titan: run `bash examples/torchtitan/setup.sh` first"
    r = subprocess.run([str(PYTHON), str(ROOT / "examples" / "torchtitan" / "run.py"), "--work-dir", str(tmp_path),
                        "--rtol", "1e-4"], capture_output=True, text=True, cwd=ROOT, timeout=1800)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for name in ("fsdp", "tp"):
        steps = re.findall(rf"^{name} \(2 ranks\)", r.stdout, re.M)
        assert steps, out[-3000:]
    assert len(re.findall(r"^\s+\d+\s+[0-9.]+\s+[0-9.]+\s+[0-9.e+-]+$", r.stdout, re.M)) == 20, r.stdout
