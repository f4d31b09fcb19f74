#!/usr/bin/env bash
# The steady-clock bars on held-out models (benchmarks/gpu_heldout.py: by default OPT-125m and ConvNeXt-Tiny, random
# weights, bf16, held out at first and tuned on since; HELDOUT_MODELS below picks the pairs still held out), `perfci ab`
# with default options, in a throwaway repository:
#   aa-1, aa-2: A/A: exit 0, every device.time row unchanged, <= 60 s each;
#   head:       the head adds N small kernels after OPT-125m, N calibrated for +0.6% summed kernel time per call
#               (the true change is measured afterwards in separate processes): named slower (or regression at a
#               0.5% threshold) in <= 90 s, ConvNeXt unchanged.
# Prints per run what benchmarks/two_clocks_table.py prints, then the true change.
# Never passes --lock-clocks: a shared device's clock settings are left as they are.
# Usage (device machine, repository root): benchmarks/gpu_heldout.sh OUTDIR [FIRST_SEED]  (seeds FIRST_SEED..+2)
#   AB_TIMEOUT=S: stop an A/B that runs past S seconds (a bar missed by far still leaves time for the others)
#   EXTRA=N:      N extra kernels, not calibrated here (the true change is measured all the same)
#   AA_RUNS=1:    one A/A instead of two (0: none);  TRUTH_PROCS=K: K processes a side for the true change (4)
#   AB_OPTS="...": more `perfci ab` options for every A/B (e.g. AB_OPTS="--pairs-at-once 1": one pair at a time)
#   HELDOUT_MODELS=neox-vit: the second pair (a GPT-NeoX of Pythia-160m's size and a ViT-S/16; gpu_heldout.py);
#                  HELDOUT_MODELS=gpt2-swin: the third (a GPT-2 small and a Swin-T);
#                  HELDOUT_MODELS=llama-effnet: the fourth (a Llama of ~160M parameters and an EfficientNet-B0)
#                  HELDOUT_MODELS=bloom-regnet: the fifth (a BLOOM of ~125M parameters and a RegNetY-1.6GF)
#                  HELDOUT_MODELS=qwen-mobilenet: the sixth (a Qwen2 of ~150M parameters and a MobileNetV3-Large)
#                  HELDOUT_MODELS=phi-densenet: the seventh (a Phi of ~150M parameters and a DenseNet-121)
#                  HELDOUT_MODELS=mistral-mixer: the eighth (a Mistral of ~150M parameters and an MLP-Mixer-B/16)
#                  HELDOUT_MODELS=bigcode-inception: the ninth (a GPTBigCode of ~125M parameters and an Inception-v3)
#                  HELDOUT_MODELS=gptj-poolformer: the tenth (a GPT-J of ~125M parameters and a PoolFormer-S12)
#                  HELDOUT_MODELS=gptneo-dla: the eleventh (a GPT-Neo of ~125M parameters and a DLA-34)
#                  HELDOUT_MODELS=falcon-hrnet: the twelfth (a Falcon of ~125M parameters and an HRNet-W18-Small)
#                  HELDOUT_MODELS=codegen-cspdarknet: the thirteenth (a CodeGen of ~125M parameters, a CSPDarkNet-53)
#                  HELDOUT_MODELS=olmo-ghostnet: the fourteenth (an OLMo of ~150M parameters and a GhostNet-1.0)
#   AB_PERFCI=DIR: the A/Bs run the perfci package in DIR (a baseline: `git archive COMMIT perfci | tar -x -C DIR`),
#                  on the same device and in the same call as this checkout's; tables and truth use this checkout
#   SKIP_TRUTH=1: leave out the true-change measurement (then: python3 benchmarks/gpu_heldout.py truth
#                 OUTDIR/models-base.py OUTDIR/models-head.py 4)
set -uo pipefail
OUTDIR=${1:-gpu-heldout}
SEED=${2:-1}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
source benchmarks/device_env.sh
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/perfci-pycache}
t0=$(date +%s)  # bytecode compiled before timing, as pip install does (benchmarks/gpu_two_clocks.sh says why)
python3 -m compileall -q -j 0 "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
  ${PYTHONPATH//:/ } ${AB_PERFCI:-} >/dev/null 2>&1
echo "bytecode compiled into $PYTHONPYCACHEPREFIX in $(($(date +%s) - t0)) s"
python3 -c "import torch, timm, transformers, perfci.engine.worker, perfci.cli" || exit 3

N=${EXTRA:-$(python3 benchmarks/gpu_heldout.py calibrate 0.006 "$OUTDIR/calibration")} || exit 3
echo "head: $N extra kernels after the language model (${HELDOUT_MODELS:-opt-convnext})"
REPO=$(mktemp -d)
mkdir -p "$REPO/perf"
git_() { git -C "$REPO" -c user.email=x@y -c user.name=x "$@"; }
python3 benchmarks/gpu_heldout.py models 0 >"$REPO/perf/models.py"
git_ init -q && git_ add -A && git_ commit -qm base
cp "$REPO/perf/models.py" "$OUTDIR/models-base.py"
python3 benchmarks/gpu_heldout.py models "$N" >"$REPO/perf/models.py"
cp "$REPO/perf/models.py" "$OUTDIR/models-head.py"
git_ commit -qam "head: $N extra kernels after the language model"

one() {  # name, then the revisions and options
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  (cd "$REPO" && PYTHONPATH="${AB_PERFCI:+$AB_PERFCI:}$PYTHONPATH" timeout "${AB_TIMEOUT:-0}" python3 -m perfci ab "$@" ${AB_OPTS:-} \
    --path perf --out "$OUTDIR/$name" >"$OUTDIR/$name.log" 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  python3 benchmarks/two_clocks_table.py "$OUTDIR/$name" "$name" "$rc" "$(python3 -c "print($t1-$t0)")"
  [ -f "$OUTDIR/$name/comparison.json" ] && python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['settings']['ab']; print('  look pairs', a.get('look_pairs'), 'blocks', a.get('pair_blocks'), 'phases', a.get('phases_s'))" \
    "$OUTDIR/$name/comparison.json"
  grep -h "could detect\|device time could detect" "$OUTDIR/$name/summary.md" 2>/dev/null | head -4
}
git_ checkout -q HEAD~1
[ "${AA_RUNS:-2}" = 0 ] || one aa-1 HEAD --seed "$SEED"
[ "${AA_RUNS:-2}" != 2 ] || one aa-2 HEAD --seed $((SEED + 1))
git_ checkout -q -
one head HEAD~1 HEAD --seed $((SEED + 2))
[ -n "${SKIP_TRUTH:-}" ] || python3 benchmarks/gpu_heldout.py truth "$OUTDIR/models-base.py" "$OUTDIR/models-head.py" "${TRUTH_PROCS:-4}"
