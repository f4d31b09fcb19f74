#!/usr/bin/env bash
# A CUDA model case's own host and device memory (`memory.host`, `memory.device`) per round: `perfci run` of a
# 1024-4096-1024 MLP, eager and bf16 at batch 8 and 64, four rounds (seed 6 puts each case first in one). The host figure should hold no more than the
# case's CPU-side objects: the model is built on the CPU and moved, and that freed CPU copy (32 MiB of weights)
# is not the case's (docs/measurement.md, "Memory").
# Then times the model warm-up against a case set-up (ResNet-50, below).
# Usage (device machine, repository root): bash benchmarks/gpu_host_memory.sh
set -euo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name --format=csv,noheader
WORK=$(mktemp -d)
cat >"$WORK/wl.py" <<'PY'
import perfci
import torch

mlp = perfci.model_workload(
    lambda: torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)),
    inputs=lambda batch: torch.randn(batch, 1024),
    variants=["eager", "bf16"],
    batch=[8, 64],
    devices=["cuda"],
)
PY
(cd "$WORK" && python3 -m perfci run wl.py --out out --rounds 4 --seed 6 --round-time 0.1 >run.log 2>&1) || { tail -20 "$WORK/run.log"; exit 1; }
python3 - "$WORK/out/results.json" <<'PY'
import json
import sys

doc = json.load(open(sys.argv[1]))
for case in doc["cases"]:
    host = [r["telemetry"].get("memory_host_bytes", 0) / 2**20 for r in case["rounds"]]
    dev = [r["telemetry"].get("memory_device_bytes", 0) / 2**20 for r in case["rounds"]]
    print(f"{case['id']:<45} host MiB {' '.join(f'{h:6.2f}' for h in host)}   device MiB {' '.join(f'{d:7.2f}' for d in dev)}")
PY
# What the warm-up costs a worker: torchvision's ResNet-50 (random weights), batch 32, eager and bf16, against one
# case's set-up (with its accuracy check) and one call.
# Then the same in a fresh process with no own-model warm-up: the first set-up pays what the warm-up would have.
python3 benchmarks/case_order_memory.py --cost --device cuda --resnet50
python3 benchmarks/case_order_memory.py --cost --device cuda --resnet50 --bare
