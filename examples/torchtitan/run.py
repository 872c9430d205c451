"""TorchTitan's llama3 debug model trained on tpu and on CPU (gloo), with FSDP and with
tensor parallelism over 2 ranks; the losses of each step must match.

    bash examples/torchtitan/setup.sh                     # .venv-titan: TorchTitan 0.3.0
    .venv-titan/bin/python examples/torchtitan/run.py [--work-dir DIR]

Everything is local: a script-made dataset (JSON lines) and tokenizer (BPE trained
on it), and a seed checkpoint made once on CPU, from which all four runs start.
Each run is `torchrun --nproc-per-node 2` of TorchTitan's own trainer
(examples/torchtitan/train.py) with the config in titan_config.py; the CPU runs
turn torch_tpu off (TORCH_DEVICE_BACKEND_AUTOLOAD=0) and use gloo. Prints each
step's loss on both devices and the largest relative difference; exits 1 when
it is over --rtol.
"""
import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CONFIG = ["--module", "examples.torchtitan.titan_config", "--config", "llama3_debugmodel_local"]
PARALLELISMS = {
    "fsdp": ["--parallelism.data-parallel-shard-degree", "2"],
    "tp": ["--parallelism.tensor-parallel-degree", "2"],
}


def make_assets(work):
    """A JSON-lines dataset of made-up text and a BPE tokenizer trained on it (ids < 2048)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    data, tokenizer_dir = work / "data", work / "tokenizer"
    data.mkdir(parents=True, exist_ok=True)
    tokenizer_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    letters = "etaoinshrdlucmfwypvbgk"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 8))) for _ in range(600)]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(60, 240))) + "." for _ in range(500)]
    with open(data / "data.jsonl", "w") as f:
        for line in lines:
            f.write(json.dumps({"text": line}) + "\n")
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=2000, special_tokens=["<unk>", bos, eos]))
    tokenizer.save(str(tokenizer_dir / "tokenizer.json"))
    (tokenizer_dir / "tokenizer_config.json").write_text(json.dumps({"bos_token": bos, "eos_token": eos}))
    return data, tokenizer_dir


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def titan(nproc, device, dump, args, timeout):
    """Runs TorchTitan's trainer; returns {step: loss} of rank 0."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    env.pop("TORCH_TPU_CPU_DEVICE_COUNT", None)
    if device == "cpu":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}", f"--master-port={free_port()}",
           "--local-ranks-filter", "0", str(HERE / "train.py"), *CONFIG, "--dump-folder", str(dump), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    log = r.stdout + r.stderr
    dump.mkdir(parents=True, exist_ok=True)
    (dump / "run.log").write_text(" ".join(cmd) + "\n\n" + log)
    if r.returncode != 0:
        sys.exit(f"TorchTitan on {device} failed ({' '.join(cmd)}):\n{log[-6000:]}")
    return {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"step:\s*(\d+)\s+loss:\s*([-0-9.eE+]+)", log)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", default="/tmp/torch_tpu_torchtitan")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per TorchTitan run")
    args = parser.parse_args()
    work = Path(args.work_dir)
    data, tokenizer = make_assets(work)
    common = ["--hf-assets-path", str(tokenizer), "--dataloader.dataset", "c4_test",
              "--dataloader.dataset-path", str(data), "--debug.seed", "0"]
    seed = work / "seed"
    titan(1, "cpu", seed, common + ["--checkpoint.enable", "--checkpoint.create-seed-checkpoint",
                                    "--parallelism.data-parallel-shard-degree", "1"], args.timeout)
    load = ["--checkpoint.enable", "--checkpoint.initial-load-path", str(seed / "checkpoint" / "step-0"),
            "--checkpoint.load-only"]
    worst = 0.0
    for name, parallel in PARALLELISMS.items():
        losses = {device: titan(2, device, work / f"{name}_{device}", common + load + parallel, args.timeout)
                  for device in ("cpu", "tpu")}
        cpu, tpu = losses["cpu"], losses["tpu"]
        if not cpu or sorted(cpu) != sorted(tpu):
            sys.exit(f"{name}: steps logged differ: cpu {sorted(cpu)}, tpu {sorted(tpu)}")
        print(f"{name} (2 ranks): step, loss on cpu (gloo), loss on tpu, relative difference")
        for step in sorted(cpu):
            rel = abs(tpu[step] - cpu[step]) / abs(cpu[step])
            worst = max(worst, rel)
            print(f"  {step:3d}  {cpu[step]:.6f}  {tpu[step]:.6f}  {rel:.2e}")
    print(f"largest relative difference: {worst:.2e} (tolerance {args.rtol:.0e})")
    sys.exit(0 if worst <= args.rtol else 1)


if __name__ == "__main__":
    main()
