#!/usr/bin/env bash
# Cross-job noise of GPU cases on one GPU runner: N separate `perfci run` jobs of benchmarks/gpu_workloads.py,
# ingested into a fresh SQLite history store, then `perfci history noise` (the learned job term per case, against
# the GPU default of 0.03) and the trend report. Run through the device tool; results in docs/gpu.md.
# Usage: benchmarks/gpu_history.sh OUTDIR [RUNS=10]
set -uo pipefail
OUTDIR=${1:-gpu-history}
RUNS=${2:-10}
mkdir -p "$OUTDIR"
source benchmarks/device_env.sh
DB="sqlite:///$(realpath "$OUTDIR")/history.db"
for i in $(seq 1 "$RUNS"); do
  python3 -m perfci run benchmarks/gpu_workloads.py --rounds 3 --out "$OUTDIR/run-$i" --exit-zero >"$OUTDIR/run-$i.log" 2>&1
  python3 -m perfci history ingest "$OUTDIR/run-$i/results.json" --db "$DB" 2>&1 | tail -1
done
COLUMNS=200 python3 -m perfci history noise --db "$DB" --min-runs 5
python3 -m perfci history noise --db "$DB" --min-runs 5 --format json >"$OUTDIR/noise.json"
COLUMNS=200 python3 -m perfci trend --db "$DB" --html "$OUTDIR/trend.html"
