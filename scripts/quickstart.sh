#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and trains the quickstart MLP on tpu beside CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
python examples/quickstart.py
