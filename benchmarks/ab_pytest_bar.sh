#!/usr/bin/env bash
# The pytest and no-configuration A/B bars, on throw-away git repositories under a temporary folder:
#   1. `perfci ab HEAD~1 HEAD` in a repository whose perf/wl.py got 30% slower, with no configuration;
#   2. `perfci ab HEAD~1 HEAD --pytest bench` on five pytest-benchmark tests, one made 10% slower; its A/A;
#   3. the same with the one test 5% slower, three times (seeds 1-3).
# Prints each command's exit code, time and verdict lines. Usage: bash benchmarks/ab_pytest_bar.sh
set -u
T=$(mktemp -d)
new_repo() { git init -q "$1" && git -C "$1" config user.email bench@perfci && git -C "$1" config user.name bench; }
verdicts() { grep -E "regression|slower|faster|improvement|inconclusive" "$1" | grep -v memory.host || true; }

new_repo "$T/perf" && cd "$T/perf" && mkdir perf
printf 'import perfci\n\n\n@perfci.workload()\ndef loop(ctx):\n    n = 20000\n    return lambda: sum(i * i for i in range(n))\n' > perf/wl.py
git add -A && git commit -qm base && sed -i 's/n = 20000/n = 26000/' perf/wl.py && git commit -qam "30% slower"
/usr/bin/time -f "%e s" perfci ab HEAD~1 HEAD > out.txt 2> err.txt; echo "perf/ 30% slower, no configuration: exit $? in $(tail -1 err.txt)"; verdicts out.txt

five() {
  new_repo "$1" && cd "$1" && mkdir bench && cat > bench/test_five.py <<'PY'
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def test_fib(benchmark): benchmark(fib, 14)
def test_sum(benchmark): benchmark(lambda: sum(range(3000)))
def test_sort(benchmark): benchmark(lambda: sorted(range(3000, 0, -1)))
def test_join(benchmark): benchmark(lambda: "-".join(str(i) for i in range(500)))
def test_dict(benchmark): benchmark(lambda: {i: i * 2 for i in range(1500)})
PY
  git add -A && git commit -qm base && sed -i "s/sum(range(3000))/sum(range($2))/" bench/test_five.py && git commit -qam slower
}
five "$T/p10" 3300
/usr/bin/time -f "%e s" perfci ab HEAD~1 HEAD --pytest bench > o.txt 2> e.txt; echo "pytest, one test 10% slower: exit $? in $(tail -1 e.txt)"; verdicts o.txt
/usr/bin/time -f "%e s" perfci ab HEAD~1 HEAD~1 --pytest bench > a.txt 2> ae.txt; echo "pytest A/A: exit $? in $(tail -1 ae.txt)"; verdicts a.txt
five "$T/p5" 3150
for seed in 1 2 3; do
  /usr/bin/time -f "%e s" perfci ab HEAD~1 HEAD --pytest bench --seed "$seed" > o$seed.txt 2> e$seed.txt
  echo "pytest, one test 5% slower, seed $seed: exit $? in $(tail -1 e$seed.txt)"; verdicts o$seed.txt
done
