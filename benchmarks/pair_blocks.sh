#!/usr/bin/env bash
# What starting a block of pairs together (`perfci ab --pairs-at-once N`, engine/lockstep.py) saves, on this
# machine's CPUs: an A/A (`perfci ab HEAD HEAD --pairs 4 --looks 1`) of one workload whose set-up takes S seconds,
# (a) waiting (sleep: loading weights from disk or a network share) and (b) computing on one CPU (a pure-Python
# loop, like building a model), each with 1 pair at a time and with N pairs at once. Prints per run: exit, wall
# time, the blocks, and where the A/B's time went (settings.ab.phases_s).
# Usage: bash benchmarks/pair_blocks.sh [S=2] [N=3]
set -u
S=${1:-2}
N=${2:-3}
T=$(mktemp -d)
git init -q "$T/r" && cd "$T/r" && git config user.email bench@perfci && git config user.name bench && mkdir perf
cat > perf/wl.py <<PY
import time

import perfci

FAST = {"warmup_s": 0.01, "min_samples": 10, "budget_s": 0.2}


@perfci.workload(timing=FAST)
def waits(ctx):
    time.sleep($S)
    return lambda: sum(range(2000))


@perfci.workload(timing=FAST)
def computes(ctx):
    end = time.process_time() + $S
    while time.process_time() < end:
        pass
    return lambda: sum(range(2000))
PY
git add -A && git commit -qm base
for k in waits computes; do
  for n in 1 "$N"; do
    start=$(date +%s.%N)
    perfci ab HEAD HEAD --path perf -k "$k" --pairs 4 --looks 1 --pairs-at-once "$n" --out "out-$k-$n" > "o-$k-$n.txt" 2>&1
    rc=$?
    wall=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
    python3 - "out-$k-$n/comparison.json" "$k" "$n" "$rc" "$wall" <<'PY'
import json, sys
path, k, n, rc, wall = sys.argv[1:]
ab = json.load(open(path))["settings"]["ab"]
phases = {p: round(v, 1) for p, v in ab["phases_s"].items() if p in ("start", "sampling", "finish", "rounds")}
print(f"set-up {k:8} --pairs-at-once {n}: exit {rc}, {wall} s, blocks {ab['pair_blocks']}, phases {phases}")
PY
  done
done
