#!/usr/bin/env bash
# The CPU bars of the simple-to-change, no-silent-pass and model-decisions work that no other script checks, on
# inputs the test suite does not use (other tests, another model and other ONNX layers), in a throw-away folder:
#   simple-to-change: the rounds default written once; no defstruct, forked.py, benchmarks/lab, docs/quality/archive;
#                     no module name in two packages outside cli/ and api/; `vulture perfci/` clean; `rounds = 1` in
#                     [tool.perfci] refused by `perfci run` (exit 2); the plugin's rounds from [tool.perfci] = 3;
#                     `--perfci-rounds 1` refused;
#   no-silent-pass:   a baseline outside a configuration-less folder of tests, its path after a space: every case
#                     compared; two results files with no case in common: exit 2 naming an id of each; an 80-column
#                     `perfci compare`: whole ids, whole verdict words, no `…`; `perfci --version` exits 0;
#   model-decisions:  a model workload with two variants and two batch sizes: accuracy metrics on every
#                     non-reference case, the best configuration and time per item in summary.md; an ONNX file's
#                     variants' accuracy in summary.md, and int8 variants far past their tolerance fail the run.
# The A/B bars have their own scripts (ab_pytest_bar.sh, ab_pytest_heldout.sh, ab_images_bar.sh).
# Prints one line per bar: PASS or FAIL, and what was seen. Exit status: the number of FAIL lines (0: all pass).
# Usage, from the repository root, perfci installed: bash benchmarks/bars_cpu.sh
set -u
ROOT=$(pwd)
T=$(mktemp -d)
export PERFCI_CACHE_DIR="$T/cache" NO_COLOR=1
fails=0
bar() {  # bar NAME OK DETAIL
  if [ "$2" = 1 ]; then echo "PASS  $1: $3"; else echo "FAIL  $1: $3"; fails=$((fails + 1)); fi
}
yes_if() { if eval "$1"; then echo 1; else echo 0; fi; }

# --- simple-to-change -------------------------------------------------------------------------------------------
n=$(grep -rnE "(rounds|ROUNDS)[A-Za-z_]*\s*[:=]\s*(int\s*=\s*)?5\b|default=5\b" "$ROOT/perfci" --include=*.py | wc -l)
bar "rounds default written once" "$(yes_if "[ $n -eq 1 ]")" "$n place(s): $(grep -rnE "(rounds|ROUNDS)[A-Za-z_]*\s*[:=]\s*(int\s*=\s*)?5\b|default=5\b" "$ROOT/perfci" --include=*.py | cut -d: -f1,2 | sed "s|$ROOT/||" | tr '\n' ' ')"
d=$(grep -rn "defstruct" "$ROOT/perfci" --include=*.py | wc -l)
gone=0; for p in perfci/forked.py benchmarks/lab docs/quality/archive; do [ -e "$ROOT/$p" ] && gone=$((gone + 1)); done
bar "no defstruct, forked.py, lab, archive" "$(yes_if "[ $d -eq 0 ] && [ $gone -eq 0 ]")" "defstruct $d, of the three paths $gone present"
dups=$(cd "$ROOT" && python3 - <<'PY'
import collections, pathlib
seen = collections.defaultdict(set)
for p in pathlib.Path("perfci").rglob("*.py"):
    package = p.parent.relative_to("perfci").as_posix()
    if p.name != "__init__.py" and not package.startswith(("cli", "api")):
        seen[p.stem].add(package)
print(" ".join(f"{name}({','.join(sorted(pk))})" for name, pk in sorted(seen.items()) if len(pk) > 1))
PY
)
bar "no module name in two packages" "$(yes_if "[ -z '$dups' ]")" "${dups:-none}"
v=$(cd "$ROOT" && vulture perfci/ tests/tools/vulture_allowlist.py 2>&1); vr=$?  # the project's allow-list
bar "vulture perfci/ clean (with the allow-list)" "$(yes_if "[ $vr -eq 0 ] && [ -z \"\$v\" ]")" "exit $vr, $(echo -n "$v" | grep -c .) finding(s)"

mkdir -p "$T/cfg/bench" && cd "$T/cfg"
cat > bench/test_mix.py <<'PY'
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def test_fib(benchmark):
    benchmark(fib, 400)
PY
cat > wl.py <<'PY'
import perfci


@perfci.workload()
def joined(ctx):
    return lambda: "-".join(str(i) for i in range(300))
PY
printf '[project]\nname = "cfg"\n\n[tool.perfci]\nrounds = 1\n' > pyproject.toml
perfci run wl.py --out o1 > run1.log 2>&1; rc=$?
bar "rounds = 1 in [tool.perfci] refused by perfci run" "$(yes_if "[ $rc -eq 2 ]")" "exit $rc: $(grep -m1 -i "rounds" run1.log)"
printf '[project]\nname = "cfg"\n\n[tool.perfci]\nrounds = 3\n' > pyproject.toml
python3 -m pytest -q -p no:cacheprovider bench --perfci-round-time 0.02 --perfci-out o3 > p3.log 2>&1; rc=$?
r=$(python3 -c "import json; print(len(json.load(open('o3/results.json'))['cases'][0]['rounds']))" 2>/dev/null || echo none)
bar "the plugin takes rounds = 3 from [tool.perfci]" "$(yes_if "[ $rc -eq 0 ] && [ '$r' = 3 ]")" "pytest exit $rc, $r rounds recorded"
python3 -m pytest -q -p no:cacheprovider bench --perfci-rounds 1 > p1.log 2>&1; rc=$?
bar "--perfci-rounds 1 refused" "$(yes_if "[ $rc -eq 4 ]")" "pytest exit $rc: $(grep -m1 "perfci-rounds" p1.log)"

# --- no-silent-pass ----------------------------------------------------------------------------------------------
mkdir -p "$T/nsp/proj/suite" && cd "$T/nsp/proj"
cat > suite/test_text.py <<'PY'
def words(n):
    return " ".join(f"w{i}" for i in range(n)).split()


def test_split(benchmark):
    benchmark(words, 500)


def test_measured(perf):
    perf(lambda: sorted(words(300)), name="sorted")
    perf(lambda: set(words(300)), name="unique")


def test_upper(perf):
    perf(lambda: [w.upper() for w in words(200)])
PY
python3 -m pytest -q -p no:cacheprovider suite --perfci-rounds 5 --perfci-round-time 0.03 --perfci-out "$T/nsp/away/base" > b.log 2>&1
python3 -m pytest -q -p no:cacheprovider suite --perfci-rounds 5 --perfci-round-time 0.03 --perfci-compare "$T/nsp/away/base/results.json" \
  --perfci-out "$T/nsp/away/cand" > c.log 2>&1; rc=$?
seen=$(python3 - "$T/nsp/away/base/results.json" "$T/nsp/away/cand/comparison.json" <<'PY'
import json, sys
ids = {c["id"] for c in json.load(open(sys.argv[1]))["cases"]}
rows = {r["case_id"]: r["verdict"] for r in json.load(open(sys.argv[2]))["rows"] if r["metric"].startswith("latency")}
compared = {i for i, v in rows.items() if v not in ("missing", "new")}
print(f"{len(ids)} {len(compared & ids)} {sorted(set(rows.values()))}")
PY
)
set -- $seen
bar "a baseline elsewhere, path after a space: every case compared" "$(yes_if "[ '${1:-0}' = 4 ] && [ '${2:-0}' = 4 ]")" "${1:-?} cases in the baseline, ${2:-?} compared, verdicts ${3:-?}; pytest exit $rc"

cd "$T/nsp"
python3 - <<'PY'
import json
base = json.load(open("away/base/results.json"))
other = json.loads(json.dumps(base))
for c in other["cases"]:
    c["id"] = c["id"].replace("test_text.py", "test_other.py")
    c["workload"] = c["workload"].replace("test_text.py", "test_other.py")
json.dump(other, open("other.json", "w"))
PY
perfci compare away/base/results.json other.json > none.log 2>&1; rc=$?
a=$(python3 -c "import json; print(json.load(open('away/base/results.json'))['cases'][0]['id'])")
b=${a/test_text.py/test_other.py}
bar "two files with no case in common: exit 2, an id of each named" "$(yes_if "[ $rc -eq 2 ] && grep -qF '$a' none.log && grep -qF '$b' none.log")" "exit $rc: $(head -c 160 none.log | tr '\n' ' ')"

python3 - <<'PY'
import json
doc = json.load(open("away/base/results.json"))
for c in doc["cases"]:  # ids of 72-77 characters: each fits in 80 columns, not beside its row
    c["id"] = c["id"].replace("@cpu", "_on_a_descriptively_named_input[size=large]@cpu")
    c["workload"] = c["workload"] + "_on_a_descriptively_named_input"
json.dump(doc, open("wide-base.json", "w"))
cand = json.load(open("away/cand/results.json"))  # another session: separate jobs
for c in cand["cases"]:
    c["id"] = c["id"].replace("@cpu", "_on_a_descriptively_named_input[size=large]@cpu")
    c["workload"] = c["workload"] + "_on_a_descriptively_named_input"
for r in cand["cases"][0]["rounds"]:
    r["samples"] = [s * 20 for s in r["samples"]]  # far beyond what an unsteady machine moves (docs/compare.md)
json.dump(cand, open("wide-cand.json", "w"))
PY
script -qec "stty cols 80; perfci compare wide-base.json wide-cand.json" /dev/null > tty.log 2>&1; rc=$?
slow=$(python3 -c "import json; print(json.load(open('wide-cand.json'))['cases'][0]['id'])")
# in characters, not bytes (awk counted the two bytes of each "µ": a line of 79 characters read 81)
width=$(sed 's/\x1b\[[0-9;]*[A-Za-z]//g; s/\r//g' tty.log | python3 -c "import sys; print(max(len(l.rstrip('\n')) for l in sys.stdin))")
ok=$(yes_if "grep -qF '$slow' tty.log && grep -qw regression tty.log && ! grep -q '…' tty.log && [ $width -le 80 ]")
bar "80 columns: whole id, whole verdict, no …" "$ok" "exit $rc, widest line $width, regressed id whole: $(grep -cF "$slow" tty.log) line(s)"
v=$(perfci --version 2>&1); rc=$?
bar "perfci --version exits 0" "$(yes_if "[ $rc -eq 0 ]")" "$v"

# --- model-decisions ---------------------------------------------------------------------------------------------
mkdir -p "$T/md" && cd "$T/md"
cat > conv.py <<'PY'
import perfci
import torch


def net():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
        torch.nn.Linear(256, 10),
    )


convnet = perfci.model_workload(
    net, inputs=lambda batch: torch.randn(batch, 3, 24, 24), variants=["eager", "bf16"], batch=[2, 16],
    devices=["cpu"],
)
PY
perfci run conv.py --out o --rounds 2 --round-time 0.05 > run.log 2>&1; rc=$?
seen=$(python3 - <<'PY'
import json
doc = json.load(open("o/results.json"))
cases = [c for c in doc["cases"] if c["status"] == "ok"]
ref = [c for c in cases if c["params"].get("variant") == "eager"]
others = [c for c in cases if c["params"].get("variant") != "eager"]
with_acc = [c for c in others if any(m["name"].startswith("accuracy.") for m in c.get("metrics", []))]
print(len(cases), len(others), len(with_acc))
PY
)
set -- $seen
s=o/summary.md
ok=$(yes_if "[ $rc -eq 0 ] && [ '${2:-0}' -gt 0 ] && [ '${2:-0}' = '${3:-x}' ] && grep -q 'best configuration' $s && grep -q 'per item' $s")
bar "model workload: accuracy on every non-reference case, best configuration, time per item" "$ok" "exit $rc, ${1:-?} cases, ${3:-?} of ${2:-?} non-reference with accuracy.*; $(grep -m1 'best configuration' $s)"

{ python3 - <<'PY'
import warnings
import torch
torch.manual_seed(3)
good = torch.nn.Sequential(torch.nn.Linear(24, 48), torch.nn.Tanh(), torch.nn.Linear(48, 6)).eval()
first, second = torch.nn.Linear(24, 48), torch.nn.Linear(48, 6)
with torch.no_grad():  # one huge weight sets the int8 scale of its layer; the next layer ignores that unit
    first.weight.mul_(0.01)
    first.weight[5, 3] = 5e3
    second.weight[:, 5] = 0.0
bad = torch.nn.Sequential(first, torch.nn.ReLU(), second).eval()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    torch.onnx.export(good, (torch.randn(4, 24),), "good.onnx")
    torch.onnx.export(bad, (torch.randn(4, 24),), "bad.onnx")
PY
} 2>/dev/null
perfci run good.onnx --out og --rounds 2 --round-time 0.05 > og.log 2>&1; rc=$?
table=$(sed -n '/#### Decision table/,$p' og/summary.md 2>/dev/null)
acc=$(echo "$table" | grep -cE '^\| `(fp16|int8-dynamic|int8-static)( \*)?`.*\(≤ ')  # ` *`: in the best set
bar "ONNX file: its variants' accuracy in summary.md" "$(yes_if "[ $rc -eq 0 ] && [ $acc -eq 3 ]")" "exit $rc, $acc of 3 variants with accuracy and tolerance"
perfci run bad.onnx --out ob --rounds 2 --round-time 0.05 > ob.log 2>&1; rc=$?
failed=$(python3 -c "
import json
for c in json.load(open('ob/results.json'))['cases']:
    if c['status'] != 'ok':
        print(c['params'].get('variant'), '-', (c.get('errors') or [{}])[0].get('message', '?')[:110], end='; ')
" 2>/dev/null)
bar "ONNX int8 far past tolerance: the run exits non-zero" "$(yes_if "[ $rc -ne 0 ] && [ -n '$failed' ]")" "exit $rc; failed: $failed"

echo "$fails bar(s) failed; work folder $T"
exit "$fails"
