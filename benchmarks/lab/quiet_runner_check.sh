#!/usr/bin/env bash
# Issue #3 A/A stability on a second machine (the GPU host's CPU, through the device tool), the counterpart of
# the same benchmark on the shared 2-vCPU CI VM; it turned out to be a shared VM too. Runs benchmarks/aa_stability.py
# (5 separate `perfci run` invocations of the default suite) four times: workers pinned with `--cpus 15`, with
# `--cpus 3`, nothing pinned, and the whole run under `taskset -c 2,3` (the CI VM's core count).
# With ROUNDS given, runs only the last variant (taskset -c 2,3) with `--rounds ROUNDS`.
# Results and commands: docs/quality/aa_pinning.md, docs/quality/aa_rounds.md.
# Usage: bash benchmarks/lab/quiet_runner_check.sh OUTDIR [ROUNDS]
set -uo pipefail
OUTDIR=${1:-quiet-out}
ROUNDS=${2:-}
mkdir -p "$OUTDIR"
OUTDIR=$(realpath "$OUTDIR")
cd "$(dirname "$0")/../.." || exit 2  # the repository root: device_env.sh and aa_stability.py are named from there
source benchmarks/device_env.sh
nproc
grep -m1 "model name" /proc/cpuinfo
uptime
if [ -n "$ROUNDS" ]; then
  echo "== pinned to cores 2,3 (taskset), --rounds $ROUNDS"
  taskset -c 2,3 python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/pinned-r$ROUNDS" -- --rounds "$ROUNDS" \
    | tee "$OUTDIR/pinned-r$ROUNDS.md"
  exit 0
fi
echo "== workers pinned to CPU 15 (--cpus 15)"
python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/cpu15" -- --cpus 15 | tee "$OUTDIR/cpu15.md"
echo "== workers pinned to CPU 3 (--cpus 3)"
python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/cpu3" -- --cpus 3 | tee "$OUTDIR/cpu3.md"
echo "== whole host"
python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/host" | tee "$OUTDIR/host.md"
echo "== pinned to cores 2,3 (taskset)"
taskset -c 2,3 python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/pinned" | tee "$OUTDIR/pinned.md"
