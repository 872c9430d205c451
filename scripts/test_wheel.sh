#!/usr/bin/env bash
# Builds the wheel, installs it with its [test] extra into a fresh venv, and runs
# the test suite there from a copy of tests/ outside the checkout, so `import
# torch_tpu` can only find the installed package. Extra arguments go to pytest.
#   bash scripts/test_wheel.sh                       # the whole suite
#   bash scripts/test_wheel.sh tests/test_device.py  # a part
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh  # the build environment (.venv: torch, cmake, ccache'd objects)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. .venv/bin/activate
python -m pip wheel -q --no-build-isolation --no-deps -w "$work/wheel" .
deactivate
python3 -m venv "$work/venv"
wheel=$(ls "$work"/wheel/torch_tpu-*.whl)
"$work/venv/bin/python" -m pip install -q "$wheel[test]"
# Tests read csrc/ (layout checks), benchmarks/ and examples/; the package itself stays behind.
mkdir "$work/src"
git ls-files -z tests csrc benchmarks examples | xargs -0 cp --parents -t "$work/src"
cd "$work/src"
# TorchTitan's test runs in .venv-titan, an editable install of the checkout: not the wheel's.
"$work/venv/bin/python" -c "import torch_tpu, sys; assert 'site-packages' in torch_tpu.__file__, torch_tpu.__file__; print('testing', torch_tpu.__file__)"
"$work/venv/bin/python" -m pytest -q --deselect tests/test_torchtitan.py "${@:-tests}"
