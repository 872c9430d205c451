#!/usr/bin/env bash
# Creates .venv-titan: TorchTitan 0.3.0 beside the project's .venv (made by
# scripts/setup.sh, whose torch and torch_tpu it uses).
#
# TorchTitan 0.3.0 pins datasets<4.8, which needs huggingface-hub<2, and the
# project's transformers 5.25 needs huggingface-hub>=2.4: the two cannot share
# one environment. So .venv-titan holds TorchTitan and its dependencies, and
# reaches everything else (torch, torch_tpu) through .venv's site directory,
# which it searches after its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -d .venv ] || bash scripts/setup.sh
python3 -m venv .venv-titan
main_site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
titan_site=$(.venv-titan/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "import site; site.addsitedir('$main_site')" > "$titan_site/zz_project_venv.pth"
.venv-titan/bin/python -m pip install -q --upgrade pip
# torch stays the one in .venv; pip may warn that .venv's transformers wants a newer huggingface-hub.
.venv-titan/bin/python -m pip install -q -r examples/torchtitan/requirements.txt -c <(echo "torch==2.13.0") 2>&1 \
  | grep -v "dependency resolver\|huggingface-hub" || true
.venv-titan/bin/python -c "import torchtitan, torch, torch_tpu; assert torch.__version__.startswith('2.13.0')"
