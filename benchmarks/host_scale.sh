#!/usr/bin/env bash
# The CPU-bound scale benchmarks on a bigger host than the 2-core development VM (issues #18 and #21): the
# history ingest rate, which grows with the worker processes `perfci history ingest` starts (one per CPU), and
# the 5,000-case compare, which is single-process. Run on the device machine (16 cores) through the device tool:
#   bash benchmarks/host_scale.sh            (figures: docs/history.md and docs/scale.md)
# HOST_SCALE_FILES sets the number of results files ingested (default 100, 500 cases each).
set -uo pipefail
source benchmarks/device_env.sh
work=$(mktemp -d)
echo "cpus: $(nproc); $(lscpu | grep -m1 'Model name' | sed 's/  */ /g')"
python3 -c "import sys; print('python', sys.version.split()[0])"
echo "== ingest (benchmarks/history_scale.py --ingest-only)"
python3 benchmarks/history_scale.py --ingest-only --files "${HOST_SCALE_FILES:-100}" --repeat 3 --keep "$work/h"
echo "== ingest with two workers, as on a 2-core machine (taskset -c 0,1)"
taskset -c 0,1 python3 benchmarks/history_scale.py --ingest-only --files "${HOST_SCALE_FILES:-100}" --repeat 1 \
  --keep "$work/h"
echo "== compare, 5,000 cases (benchmarks/scale.py)"
python3 benchmarks/scale.py --sizes 5000 --repeats 3 --no-browser --keep "$work/s"
rm -rf "$work"
