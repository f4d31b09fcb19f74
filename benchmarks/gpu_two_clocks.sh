#!/usr/bin/env bash
# The two-clocks GPU bar: a model repository made here (not part of perfci) with a torchvision ResNet-50 and a
# transformers BERT-base (random weights, batch 8, eager), measured by `perfci ab` with default options:
#   aa-1, aa-2: A/A (`perfci ab HEAD` with the base commit checked out): device time should be `unchanged`, within 90 s, exit 0;
#   head:       the head adds 24 small elementwise kernels after ResNet-50 (`perfci ab HEAD~1 HEAD`): device time
#               should be a regression, and host overhead is reported on its own row.
# Prints, per run: exit code, wall time, pairs, and for each case and clock (latency, device.time,
# host.overhead) the verdict, change and interval, plus the round-to-round spread (max/min of round values).
# Usage (device machine, repository root): benchmarks/gpu_two_clocks.sh OUTDIR [FIRST_SEED]  (seeds FIRST_SEED..+2; default 1)
#   AA_RUNS=1: one A/A instead of two;  AB_TIMEOUT=S: stop an A/B that runs past S seconds
#   AB_PERFCI=DIR: the A/Bs run the perfci package in DIR (a baseline: `git archive COMMIT perfci | tar -x -C DIR`),
#                  on the same device and in the same call as this checkout's; tables and truth use this checkout
#   MODELS_ONLY=FILE benchmarks/gpu_two_clocks.sh: write the base's models file to FILE and stop
set -uo pipefail
OUTDIR=${1:-gpu-two-clocks}
SEED=${2:-1}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
source benchmarks/device_env.sh
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-/tmp/perfci-pycache}
# The device image's packages ship without bytecode (and it sets PYTHONDONTWRITEBYTECODE): every fresh process
# compiled the sources it imported, 9.5 s of a worker's start for torch + transformers (3,128 files;
# 4e69623:benchmarks/lab/first_ab_probe.sh). `pip install` compiles bytecode when it installs; so does this, once, into
# the cache folder above, before anything is timed.
if [ -z "${MODELS_ONLY:-}" ]; then
  t0=$(date +%s)
  python3 -m compileall -q -j 0 "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
    ${PYTHONPATH//:/ } ${AB_PERFCI:-} >/dev/null 2>&1
  echo "bytecode compiled into $PYTHONPYCACHEPREFIX in $(($(date +%s) - t0)) s (as pip install does)"
fi
python3 -c "import torch, torchvision, transformers, perfci.engine.worker, perfci.cli" 2>/dev/null

REPO=$(mktemp -d)
mkdir -p "$REPO/perf"
models() {  # $1: extra elementwise kernels after ResNet-50
  cat <<PY
import perfci

EXTRA_KERNELS = $1


@perfci.workload(devices=["cuda"])
def resnet50(ctx):
    import torch
    import torchvision

    torch.manual_seed(ctx.seed)
    model = torchvision.models.resnet50(weights=None).to(ctx.device).eval()
    x = torch.randn(8, 3, 224, 224, device=ctx.device)

    def call():
        with torch.inference_mode():
            y = model(x)
            for _ in range(EXTRA_KERNELS):  # the head: small elementwise kernels on the logits
                y = y * 1.0001
            return y

    return call


@perfci.workload(devices=["cuda"])
def bert(ctx):
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(ctx.seed)
    model = BertModel(BertConfig()).to(ctx.device).eval()
    ids = torch.randint(0, 30000, (8, 128), device=ctx.device)

    def call():
        with torch.inference_mode():
            return model(input_ids=ids).last_hidden_state

    return call
PY
}
git_() { git -C "$REPO" -c user.email=x@y -c user.name=x "$@"; }
if [ -n "${MODELS_ONLY:-}" ]; then  # only write the models file (the base's) to $MODELS_ONLY, for other scripts
  models 0 >"$MODELS_ONLY"
  exit 0
fi
models 0 >"$REPO/perf/models.py"
git_ init -q && git_ add -A && git_ commit -qm base
models 24 >"$REPO/perf/models.py"
git_ commit -qam "head: 24 extra elementwise kernels after ResNet-50"

one() {  # name, then the revisions
  local name=$1
  shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  (cd "$REPO" && PYTHONPATH="${AB_PERFCI:+$AB_PERFCI:}$PYTHONPATH" timeout "${AB_TIMEOUT:-0}" python3 -m perfci ab "$@" --path perf --out "$OUTDIR/$name" \
    >"$OUTDIR/$name.log" 2>&1)
  rc=$?
  t1=$(date +%s.%N)
  python3 benchmarks/two_clocks_table.py "$OUTDIR/$name" "$name" "$rc" "$(python3 -c "print($t1-$t0)")"
  [ -f "$OUTDIR/$name/comparison.json" ] && python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['settings']['ab']; print('  look pairs', a.get('look_pairs'), 'phases', a.get('phases_s'))" \
    "$OUTDIR/$name/comparison.json"
}
git_ checkout -q HEAD~1  # A/A: the base commit against a working tree with the same files
one aa-1 HEAD --seed "$SEED"
[ "${AA_RUNS:-2}" = 1 ] || one aa-2 HEAD --seed $((SEED + 1))
git_ checkout -q -  # back to the head commit
one head HEAD~1 HEAD --seed $((SEED + 2))
