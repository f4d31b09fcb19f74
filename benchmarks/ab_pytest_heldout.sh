#!/usr/bin/env bash
# The pytest A/B on a file held out from ab_pytest_bar.sh (five other pytest-benchmark tests: primes, words, a
# matrix, strings, floats), with seeds that script does not use: the strings test made 10% slower (seeds 11, 12),
# an A/A (seed 13), and the same test 5% slower from the same base (seeds 14-16). Prints each command's exit code,
# time and the rows that are not `unchanged`. Usage: bash benchmarks/ab_pytest_heldout.sh [FIRST_SEED] (perfci on
# PATH; FIRST_SEED, 11 by default, moves the six seeds: FIRST_SEED..FIRST_SEED+5)
set -u
S=${1:-11}
T=$(mktemp -d)
cd "$T" && git init -q . && git config user.email bench@perfci && git config user.name bench && mkdir bench
cat > bench/test_held.py <<'PY'
import math


def test_primes(benchmark):
    benchmark(lambda: [n for n in range(2, 1200) if all(n % d for d in range(2, int(math.isqrt(n)) + 1))])


def test_words(benchmark):
    text = " ".join(f"w{i % 97}" for i in range(4000))
    benchmark(lambda: sorted(set(text.split())))


def test_matrix(benchmark):
    rows = [[i * j for j in range(40)] for i in range(40)]
    benchmark(lambda: [sum(r) for r in zip(*rows)])


def test_strings(benchmark):
    N = 2000
    benchmark(lambda: "".join(chr(65 + i % 26) for i in range(N)))


def test_floats(benchmark):
    benchmark(lambda: math.fsum(i / 7 for i in range(2500)))
PY
git add -A && git commit -qm base
sed -i 's/    N = 2000/    N = 2200/' bench/test_held.py && git commit -qam "10% slower strings"
for seed in $S $((S + 1)); do
  /usr/bin/time -f "%e s" perfci ab HEAD~1 HEAD --pytest bench --seed $seed > o.txt 2> e.txt; echo "10% slower strings seed $seed: exit $? in $(tail -1 e.txt)"; grep -E "regression|slower|faster|improvement|inconclusive" o.txt | grep -v memory.host
done
/usr/bin/time -f "%e s" perfci ab HEAD~1 HEAD~1 --pytest bench --seed $((S + 2)) > o.txt 2> e.txt; echo "A/A seed $((S + 2)): exit $? in $(tail -1 e.txt)"; grep -E "regression|slower|faster|improvement|inconclusive" o.txt | grep -v memory.host
sed -i 's/    N = 2200/    N = 2100/' bench/test_held.py && git commit -qam "5% slower strings (from base)"
for seed in $((S + 3)) $((S + 4)) $((S + 5)); do
  /usr/bin/time -f "%e s" perfci ab HEAD~2 HEAD --pytest bench --seed $seed > o.txt 2> e.txt; echo "5% slower strings seed $seed: exit $? in $(tail -1 e.txt)"; grep -E "regression|slower|faster|improvement|inconclusive" o.txt | grep -v memory.host
done
