#!/usr/bin/env bash
# The clock a GPU holds under sustained load (measured once per runner with the peaks) against the clock cases
# are sampled at, and the two clocks of a plain `perfci run` of ResNet-50 and BERT-base (batch 8, eager).
# Usage (device machine, repository root): benchmarks/gpu_clock_check.sh OUTDIR
set -uo pipefail
OUTDIR=${1:-gpu-clock-check}
mkdir -p "$OUTDIR"
source benchmarks/device_env.sh
WORK=$(mktemp -d)
sed -n '/^models() {/,/^}/p' benchmarks/gpu_two_clocks.sh >"$WORK/models.sh"
source "$WORK/models.sh"
models 0 >"$WORK/models.py"
python3 -m perfci run "$WORK/models.py" --device cuda --rounds 3 --out "$OUTDIR/run" --exit-zero >"$OUTDIR/run.log" 2>&1
tail -12 "$OUTDIR/run.log"
python3 - "$OUTDIR/run/results.json" <<'PY'
import sys
from perfci.reports.gpu_modes import boost_notes, sampled_clock
from perfci.reports.case_rows import device_peaks
from perfci.format.schema import load_results

run = load_results(sys.argv[1])
peaks = device_peaks(run.fingerprint, "cuda")
print("sustained clock (peaks):", peaks.get("sustained_sm_clock_mhz"), "MHz at", peaks.get("sustained_power_w"), "W")
for c in run.cases:
    m = {x.name: x for x in c.metrics}
    dev, host, busy = m.get("device.time"), m.get("host.overhead"), m.get("device.busy")
    print(f"{c.id}: sampled at {sampled_clock(c)} MHz; latency {m['latency.median'].value * 1e3:.3f} ms, "
          f"device {dev.value * 1e3 if dev else float('nan'):.3f} ms, host overhead "
          f"{host.value * 1e3 if host else float('nan'):.3f} ms, busy {busy.value if busy else float('nan'):.2f}")
for n in boost_notes(run):
    print("note:", n)
PY
grep -i "note" "$OUTDIR/run/summary.md" 2>/dev/null | head -5
