#!/usr/bin/env bash
# Build the environment in which each framework's own parser checks our exports
# (docs/reference/framework-configs.md section 8: one venv, about 80 s and 1.7 GB).
# Usage: bash tests/frameworks/setup.sh [DIR]   (default .venv-frameworks)
# Needs the CPU build of torch 2.13 as a local wheel (WHEELS, default /opt/wheels): PyPI's torch
# is the CUDA build, several GB. Without it this prints why and exits 3 (the tests then skip).
set -euo pipefail
DIR=${1:-.venv-frameworks}
WHEELS=${WHEELS:-/opt/wheels}
TORCH=$(ls "$WHEELS"/torch-2.13.0+cpu-*.whl 2>/dev/null | head -1 || true)
if [ -z "$TORCH" ]; then
  echo "framework parsers: no CPU torch 2.13 wheel in $WHEELS; skipping (see tests/frameworks/setup.sh)" >&2
  exit 3
fi
if [ -x "$DIR/bin/python" ] && [ -f "$DIR/.complete" ]; then exit 0; fi
python3.11 -m venv "$DIR"
"$DIR/bin/pip" install -q --upgrade pip
"$DIR/bin/pip" install -q "$TORCH" deepspeed==0.19.8 accelerate==1.15.0 transformers torchtitan==0.3.0 \
    torchao numpy 'packaging>=24.2' pyyaml
# megatron-core 0.17+ is a Python 3.12 wheel; its argument parser runs on 3.11 (section 2)
"$DIR/bin/pip" install -q --no-deps --ignore-requires-python --only-binary=:all: --python-version 3.12 \
    --implementation cp --target "$DIR/megatron-core" megatron-core==0.19.2
touch "$DIR/.complete"
