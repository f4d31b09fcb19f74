#!/usr/bin/env bash
# GPU checks on an NVIDIA machine (run through the device tool; see docs/gpu.md for the last results).
# Usage: benchmarks/gpu_check.sh OUTDIR   (GPU_CHECK_SKIP_KERNELS=1: engine checks and GPU tests only)
# Expects torch/triton/nvidia-ml-py in python3; extra wheels (jsonschema, plotly...) may be carried in .whl/.
set -uo pipefail
OUTDIR=${1:-gpu-out}
mkdir -p "$OUTDIR"
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -m perfci env | tee "$OUTDIR/env.txt"

echo "== measurement engine (benchmarks/gpu_workloads.py)"
python3 -m perfci run benchmarks/gpu_workloads.py --rounds 3 --out "$OUTDIR/engine" --exit-zero >"$OUTDIR/engine.log" 2>&1
tail -25 "$OUTDIR/engine.log"
python3 benchmarks/gpu_check.py "$OUTDIR/engine/results.json"
engine=$?

echo "== GPU-marked tests"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu 2>&1 | tail -15

if [ -z "${GPU_CHECK_SKIP_KERNELS:-}" ] && python3 -m perfci list --suite kernels --device cuda >/dev/null 2>&1; then
  echo "== kernels suite on cuda"
  python3 -m perfci run --suite kernels --device cuda --rounds 3 --out "$OUTDIR/kernels" --exit-zero \
    >"$OUTDIR/kernels.log" 2>&1
  tail -60 "$OUTDIR/kernels.log"
fi
echo "== memory per case and GEMMs: burst, sustained against triton do_bench (benchmarks/gpu_memory_check.py)"
python3 benchmarks/gpu_memory_check.py --rounds 3 --out "$OUTDIR/memory_check"
memory_check=$?
echo "gpu_check: engine checks exit $engine, memory/sustained check exit $memory_check"
[ "$engine" -eq 0 ] && [ "$memory_check" -eq 0 ]
