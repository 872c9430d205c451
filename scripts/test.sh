#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash examples/torchtitan/setup.sh  # TorchTitan beside .venv, for tests/test_torchtitan.py
. .venv/bin/activate
python -m pytest -q tests "$@"
