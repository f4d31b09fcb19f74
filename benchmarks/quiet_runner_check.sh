#!/usr/bin/env bash
# Issue #3 A/A stability on a quiet, dedicated machine (the GPU host's CPU, through the device tool), as the
# counterpart of the same benchmark on the shared 2-vCPU CI VM. Runs benchmarks/aa_stability.py (5 separate
# `perfci run` invocations of the default suite) twice: on the whole host, and pinned to two cores with taskset
# (the CI VM's core count), and with only the workers pinned to one CPU (`--cpus`). Results and the commands are
# written up in docs/measurement.md.
# Usage: benchmarks/quiet_runner_check.sh OUTDIR
set -uo pipefail
OUTDIR=${1:-quiet-out}
mkdir -p "$OUTDIR"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nproc
grep -m1 "model name" /proc/cpuinfo
uptime
echo "== workers pinned to CPU 15 (--cpus 15)"
python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/cpu15" -- --cpus 15 | tee "$OUTDIR/cpu15.md"
echo "== workers pinned to CPU 3 (--cpus 3)"
python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/cpu3" -- --cpus 3 | tee "$OUTDIR/cpu3.md"
echo "== whole host"
python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/host" | tee "$OUTDIR/host.md"
echo "== pinned to cores 2,3 (taskset)"
taskset -c 2,3 python3 benchmarks/aa_stability.py --runs 5 --out "$OUTDIR/pinned" | tee "$OUTDIR/pinned.md"
