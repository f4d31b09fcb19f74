#!/usr/bin/env bash
# Where the time of a GPU `perfci ab` goes (issue: a two-case A/B on an H200 took 127-268 s).
# Usage (on the device machine, from the repository root): benchmarks/gpu_ab_time.sh OUTDIR [PAIRS] [LOOKS]
# Builds a throwaway git repository with two CUDA workloads (a 256 MiB copy, a 4096^3 bf16 GEMM), runs an A/A
# `perfci ab HEAD` on it, and prints: the cost of one fresh worker's start (python + perfci + torch import, CUDA
# context), the A/B's wall time, worker processes started, and the time spent inside set-up, warm-up and sampling
# (from the results files), so the rest is process start and CUDA initialisation.
set -uo pipefail
OUTDIR=${1:-gpu-ab}
PAIRS=${2:-8}
LOOKS=${3:-3}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
source benchmarks/device_env.sh
source benchmarks/gpu_ab_repo.sh
REPO=$(ab_repo)

echo "== one fresh worker's fixed cost (3 tries each, seconds)"
for what in "import perfci.engine.worker" "import torch" \
  "import torch; torch.empty(1, device='cuda'); torch.cuda.synchronize()"; do
  ts=()
  for _ in 1 2 3; do
    t0=$(date +%s.%N); python3 -c "$what"; t1=$(date +%s.%N)
    ts+=("$(python3 -c "print(f'{$t1-$t0:.2f}')")")
  done
  echo "  ${ts[*]}  <- python -c \"$what\""
done

echo "== one worker measuring both cases, under cProfile"
python3 benchmarks/gpu_worker_profile.py "$REPO/perf/bench_ab.py" cuda 2>&1 | head -40

echo "== A/A perfci ab HEAD (pairs=$PAIRS, looks=$LOOKS)"
t0=$(date +%s.%N)
(cd "$REPO" && python3 -m perfci ab HEAD --path perf --pairs "$PAIRS" --looks "$LOOKS" --out "$OUTDIR/ab" --exit-zero \
  >"$OUTDIR/ab.log" 2>&1)
t1=$(date +%s.%N)
tail -12 "$OUTDIR/ab.log"
python3 - "$OUTDIR/ab" "$(python3 -c "print($t1-$t0)")" <<'PY'
import json, sys
from pathlib import Path
out, wall = Path(sys.argv[1]), float(sys.argv[2])
rounds = warm = sampled = 0.0
workers = 0
for side in ("base", "head"):
    doc = json.loads((out / side / "results.json").read_text())
    per_worker = {}
    for case in doc["cases"]:
        its = [r["iterations"] for r in case.get("rounds", [])]
        print(f"  {side} {case['id']}: iterations per round {its}")
        for r in case.get("rounds", []):
            rounds += 1
            warm += r.get("warmup_s") or 0.0
            sampled += sum(r["samples"]) if r.get("samples") else 0.0
            per_worker[r["index"]] = 1
    workers += len(per_worker)
comp = json.loads((out / "comparison.json").read_text())
ab = comp["settings"].get("ab", {})
print(f"wall {wall:.1f} s; pairs {ab.get('pairs_run')} in {ab.get('looks_run')} looks; worker processes ~{workers}; "
      f"rounds {rounds:.0f}")
print(f"inside workers: warm-up {warm:.1f} s, timed samples {sampled:.1f} s; "
      f"the rest ({wall - warm - sampled:.1f} s) is process start, imports, CUDA init, set-up, calibration, I/O")
print("phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in ab.get("phases_s", {}).items()))
for row in comp["rows"]:
    print(f"  {row['case_id']:<40} {row['metric']:<16} {row['verdict']:<13} ratio {row.get('ratio')} "
          f"ci {row.get('ratio_low')}..{row.get('ratio_high')}")
PY
