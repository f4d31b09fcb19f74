#!/usr/bin/env bash
# docs/workloads.md's `perfci.model_workload` example (a torchvision ResNet-50 and a transformers BERT-base, random
# weights) run on a GPU: every variant's case, its accuracy against eager fp32 and its two clocks.
# Usage (device machine, repository root): benchmarks/gpu_model_workload.sh OUTDIR [-k PATTERN ...]
set -uo pipefail
OUTDIR=${1:-gpu-model-workload}
shift || true
mkdir -p "$OUTDIR"
source benchmarks/device_env.sh
WORK=$(mktemp -d)
# the example, as the docs give it
sed -n '/^## Library models in one line/,/^## /p' docs/workloads.md | sed -n '/^```python$/,/^```$/p' | sed '1d;$d' \
  >"$WORK/models.py"
python3 -m perfci list "$WORK/models.py" --device cuda | head -20
python3 -m perfci run "$WORK/models.py" --device cuda --rounds 2 --out "$OUTDIR/run" --exit-zero "$@" \
  >"$OUTDIR/run.log" 2>&1
tail -20 "$OUTDIR/run.log"
python3 - "$OUTDIR/run/results.json" <<'PY'
import sys
from perfci.format.schema import load_results

for c in load_results(sys.argv[1]).cases:
    acc = c.rounds[0].telemetry.get("notes", {}).get("accuracy", {}) if c.rounds else {}
    m = {x.name: x.value for x in c.metrics}
    err = c.errors[0].message[:120] if c.errors else ""
    print(f"{c.id:<50} {c.status.value:<6} rel_l2 {acc.get('rel_l2', float('nan')):.2e} "
          f"latency {m.get('latency.median', float('nan')) * 1e3:8.3f} ms device {m.get('device.time', float('nan')) * 1e3:8.3f} ms {err}")
PY
