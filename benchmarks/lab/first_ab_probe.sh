#!/usr/bin/env bash
# Where a fresh GPU runner's first `perfci ab` spends its time beyond the pairs (issue #30: the first A/A took
# 100.6 s, the next 78.1 s): the SM clock and power of the peaks' bf16 GEMM soak, second by second; the peaks
# subprocess, timed cold; and one worker measuring the two-clocks models (ResNet-50, BERT-base), twice, by phase.
# Usage (device machine, repository root): bash benchmarks/lab/first_ab_probe.sh
set -uo pipefail
source benchmarks/device_env.sh
MODELS=$(mktemp -d)/models.py
MODELS_ONLY=$MODELS bash benchmarks/gpu_two_clocks.sh /tmp/unused
echo "== peaks subprocess, cold (python -m perfci.profilers.peaks cuda 1)"
/usr/bin/time -f "wall %e s" python3 -m perfci.profilers.peaks cuda 1
echo "== the soak: 8192^3 bf16 GEMM in blocks of 8, NVML every block"
python3 - <<'PY'
import time, torch
from perfci.profilers.telemetry import open_probe
probe = open_probe(0)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
torch.cuda.synchronize()
start = time.perf_counter(); rows = []
while (t := time.perf_counter() - start) < 10:
    for _ in range(8):
        a @ b
    torch.cuda.synchronize()
    s = probe.snapshot(); rows.append((t, s.get("sm_clock_mhz"), s.get("power_w")))
for lo in range(10):
    w = [r for r in rows if lo <= r[0] < lo + 1]
    clk = sorted(r[1] for r in w); pw = sorted(r[2] for r in w)
    print(f"  {lo}-{lo+1} s: SM {clk[0]}..{clk[-1]} MHz (median {clk[len(clk)//2]}), power median {pw[len(pw)//2]:.0f} W, {len(w)} readings")
PY
for i in 1 2; do
  echo "== one worker, both models, run $i"
  python3 benchmarks/gpu_worker_profile.py "$MODELS" cuda 2>&1 | head -40
done
