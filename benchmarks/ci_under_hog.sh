#!/usr/bin/env bash
# The suite on a loaded machine (docs/reliability.md): `.ci/run` three times in a row, each on a fresh clone of
# this repository at REV, while two `python3 -c "while True: pass"` processes keep both cores of a 2-core machine
# busy. Stops at the first failing run. Prints one line per run (exit code, seconds, pytest's summary line);
# each run's whole log is in $WORK/run-N.log.
# Usage: benchmarks/ci_under_hog.sh REV [WORK]   (WORK: scratch folder, default /tmp/ci-under-hog)
set -u
REV=${1:?usage: benchmarks/ci_under_hog.sh REV [WORK]}
WORK=${2:-/tmp/ci-under-hog}
REPO=$(git rev-parse --show-toplevel)
mkdir -p "$WORK"
python3 -c "while True: pass" & h1=$!
python3 -c "while True: pass" & h2=$!
trap 'kill $h1 $h2 2>/dev/null' EXIT
echo "rev $REV, hog pids $h1 $h2, start $(date -u +%T)"
for i in 1 2 3; do
  rm -rf "$WORK/clone" && git clone -q "$REPO" "$WORK/clone" && git -C "$WORK/clone" checkout -q "$REV" || exit 2
  start=$(date +%s)
  (cd "$WORK/clone" && bash .ci/run) > "$WORK/run-$i.log" 2>&1
  rc=$?
  echo "run $i: rc $rc, $(( $(date +%s) - start )) s, $(grep -E '[0-9]+ passed' "$WORK/run-$i.log" | tail -1)"
  [ $rc -ne 0 ] && exit 1
done
echo "end $(date -u +%T)"
