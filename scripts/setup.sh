#!/usr/bin/env bash
# Creates .venv with the pinned dependencies and builds the C++ core into it.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ccache >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && apt-get install -y -qq ccache) >/dev/null 2>&1 || echo "ccache not installed; building without it"
fi
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip setuptools wheel cmake
python -m pip install -q -r requirements.txt
python -m pip install -q --no-build-isolation -e .
