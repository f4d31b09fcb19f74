#!/usr/bin/env bash
# Issue #21's GPU bar: a two-case `perfci ab` (a 256 MiB copy and a 4096^3 bf16 GEMM) with default settings,
# three A/A runs (`perfci ab HEAD`) and three runs where the head's copy moves 1% more bytes (`perfci ab HEAD~1
# HEAD`): wall time, where it went (the A/B's phases_s), the verdicts and the exit code of each run.
# Usage (on the device machine, from the repository root): benchmarks/gpu_ab_bar.sh OUTDIR [RUNS] [-- ab options]
set -uo pipefail
OUTDIR=${1:-gpu-ab-bar}
RUNS=${2:-3}
shift 2 2>/dev/null || shift $#
[ "${1:-}" = "--" ] && shift
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
source benchmarks/device_env.sh
source benchmarks/gpu_ab_repo.sh
# The device image runs Python with PYTHONDONTWRITEBYTECODE=1, so every process compiles torch's sources again
# (import torch 3.6-4.3 s there, 2.0-2.2 s with a bytecode cache). A runner with pip-installed torch has the cache;
# GPU_AB_PYCACHE=0 keeps the image's setting.
if [ "${GPU_AB_PYCACHE:-1}" = 1 ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/perfci-pycache}
  python3 -c "import torch, perfci.engine.worker, perfci.cli" 2>/dev/null
  echo "bytecode cache: on ($PYTHONPYCACHEPREFIX)"
else
  echo "bytecode cache: as the environment has it (PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-unset})"
fi
REPO=$(ab_repo)
git_() { git -C "$REPO" -c user.email=x@y -c user.name=x "$@"; }
ab_workload 1.01 >"$REPO/perf/bench_ab.py"
git_ commit -qam "head: the copy moves 1% more bytes"

one() {  # one A/B: name, then the revisions
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  (cd "$REPO" && python3 -m perfci ab "$@" --path perf --out "$OUTDIR/$name" "${EXTRA[@]}" >"$OUTDIR/$name.log" 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$OUTDIR/$name" "$name" "$rc" "$(python3 -c "print($t1-$t0)")" <<'PY'
import json, sys
from pathlib import Path
out, name, rc, wall = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
comp = json.loads((out / "comparison.json").read_text())
ab = comp["settings"]["ab"]
rows = {r["case_id"].split(".")[1].split("@")[0]: r for r in comp["rows"] if r["metric"] == "latency.median"}
cells = []
for case in ("copy", "gemm"):
    r = rows[case]
    cells.append(f"{case} {r['verdict']} {100 * (r['ratio'] - 1):+.2f}% "
                 f"[{100 * (r['ratio_low'] - 1):+.2f}..{100 * (r['ratio_high'] - 1):+.2f}]")
phases = ", ".join(f"{k} {v:.1f}" for k, v in ab.get("phases_s", {}).items())
print(f"{name:<8} exit {rc} wall {wall:5.1f} s, {ab['pairs_run']} pairs/{ab['looks_run']} looks | {' | '.join(cells)}")
print(f"{'':<8} phases (s): {phases}; workers started ahead: {ab.get('workers_started_ahead')}")
iters = {}
for side in ("base", "head"):
    run = json.loads((out / side / "results.json").read_text())
    for c in run["cases"]:
        name = c["id"].split(".")[1].split("@")[0]
        iters.setdefault(name, []).extend(r.get("iterations") for r in c.get("rounds", []))
print(f"{'':<8} iterations per round: " + "; ".join(f"{k} {v}" for k, v in iters.items()))
PY
}
EXTRA=("$@")
echo "A/B options beyond the defaults: ${EXTRA[*]:-(none)}"
for i in $(seq 1 "$RUNS"); do
  one "aa-$i" HEAD --seed "$i"
  one "copy-$i" HEAD~1 HEAD --seed "$i"
done
