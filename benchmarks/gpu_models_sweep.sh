#!/usr/bin/env bash
# The `models` suite on a GPU: fp32 (eager), torch.compile, bf16 and fp16 autocast across batch sizes, with the best
# configuration per sweep as `perfci run --format json` reports it (issue #19's H200 example).
# Usage (on the device machine, from the repository root): benchmarks/gpu_models_sweep.sh OUTDIR [ROUNDS]
set -uo pipefail
OUTDIR=${1:-gpu-models}
ROUNDS=${2:-3}
mkdir -p "$OUTDIR"
source benchmarks/device_env.sh
t0=$(date +%s)
python3 -m perfci run --suite models --device cuda --rounds "$ROUNDS" --out "$OUTDIR/run" --exit-zero --format json \
  >"$OUTDIR/models.json" 2>"$OUTDIR/models.log"
echo "perfci run --suite models --device cuda --rounds $ROUNDS: exit $?, $(($(date +%s) - t0)) s"
tail -3 "$OUTDIR/models.log"
python3 - "$OUTDIR/models.json" <<'PY'
import json, sys
doc = json.loads(open(sys.argv[1]).read())
print(f"{'case':<58} {'median':>10} {'interval of the median':>24}  rounds")
for case in doc["cases"]:
    m = {x["name"]: x for x in case.get("metrics", [])}
    lat = m.get("latency.median")
    if lat is None:
        print(f"{case['id']:<58} {'error':>10}  {[e.get('message', '')[:60] for e in case.get('errors', [])]}")
        continue
    lo, hi = lat.get("low"), lat.get("high")
    ci = f"{lo * 1e6:9.1f} .. {hi * 1e6:9.1f} us" if lo is not None and hi is not None else "-"
    print(f"{case['id']:<58} {lat['value'] * 1e6:8.1f} us {ci:>24}  {len(case.get('rounds', []))}")
print()
for s in doc.get("sweeps", []):
    b = s.get("best") or {}
    print(f"best of {s['workload']} over {s['swept']} ({s['metric']}, {s['better']} is better, {s['cases']} cases): "
          f"{b.get('params')} = {b.get('value')} {s['unit']}; excluded: {s.get('excluded')}")
PY
