#!/usr/bin/env bash
# The GPU comparison in one command: tensorfx against the hand-written loop
# (default, mixed_float16, XLA; batch 1024 and 8192; paired rounds) and
# serving at batch 1 and 1024, printed as one table. Needs an NVIDIA GPU
# that TensorFlow sees (`pip install tensorflow[and-cuda]~=2.21.0` brings
# its CUDA 12 libraries) and no network. Extra arguments go to gpu.py
# (e.g. --rows 100000 --rounds 2).
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
  echo "gpu.sh: nvidia-smi not found: this machine has no NVIDIA GPU driver" >&2
  exit 2
fi
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONUNBUFFERED=1
exec timeout 480 python benchmarks/gpu.py "$@"
