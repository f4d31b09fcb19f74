#!/usr/bin/env bash
# The CPU-bound scale benchmarks on a bigger host than the 2-core development VM (issues #18 and #21), run on the
# device machine (16 vCPUs) through the device tool:
#   bash benchmarks/host_scale.sh                       (figures: docs/history.md and docs/scale.md)
# Parts (HOST_SCALE_PARTS, default "ingest compare"):
#   ingest   the history ingest rate (`perfci history ingest` starts one worker per CPU), with every CPU and pinned
#            to two (taskset -c 0,1); HOST_SCALE_FILES results files of 500 cases (default 100)
#   compare  the 5,000-case compare, report and baseline update (single-process)
#   trend    the million-point store and `perfci trend` table and HTML, pinned to two CPUs (a 2-core machine)
set -uo pipefail
source benchmarks/device_env.sh
work=$(mktemp -d)
parts=" ${HOST_SCALE_PARTS:-ingest compare} "
files=${HOST_SCALE_FILES:-100}
echo "cpus: $(nproc); $(lscpu | grep -m1 'Model name' | sed 's/  */ /g'); python $(python3 -c 'import sys; print(sys.version.split()[0])')"
if [[ $parts == *" ingest "* ]]; then
  echo "== ingest, every CPU (benchmarks/history_scale.py --ingest-only --files $files)"
  python3 benchmarks/history_scale.py --ingest-only --files "$files" --repeat 2 --keep "$work/h"
  echo "== ingest pinned to two CPUs (taskset -c 0,1)"
  taskset -c 0,1 python3 benchmarks/history_scale.py --ingest-only --files "$files" --repeat 2 --keep "$work/h"
fi
if [[ $parts == *" compare "* ]]; then
  echo "== compare, 5,000 cases (benchmarks/scale.py)"
  python3 benchmarks/scale.py --sizes 5000 --repeats 3 --no-browser --keep "$work/s" | tail -n 6
fi
if [[ $parts == *" trend "* ]]; then
  echo "== a million points, pinned to two CPUs (taskset -c 0,1 benchmarks/history_scale.py)"
  taskset -c 0,1 python3 benchmarks/history_scale.py --keep "$work/t"
fi
rm -rf "$work"
