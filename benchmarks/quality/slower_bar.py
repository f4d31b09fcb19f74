"""Issue #20 bars on this machine: a real 2.5% slowdown is `slower` (not `unchanged`), and A/A stays quiet.

(a) A throw-away git repo whose head does 2.5% more work in one pure-Python workload of about 5 ms (`slow`; a
    second case, `same`, does not change). `perfci ab HEAD~1 HEAD` runs N times (default 5); per run it prints the
    verdict and the estimate of `slow`, and the exit code (default gate). For the first run it also runs the same
    A/B with `--fail-on slower` (bar: exit 1) and checks that summary.md lists `slow` under "Below the threshold".
    Bar: `slower` with an estimate in +1.5% .. +3.5% in at least 4 of 5 runs, exit 0 by default.
(b) With --aa N: `perfci ab HEAD HEAD --suite default` N times, counting the runs with `slower`/`faster` rows and
    with `regression` rows. Bar: slower/faster in at most 1 of 20 runs, no regression.

Resumable: every run writes its comparison.json and a record.json under --out (run-I/, aa-I/, fail-on/); a run
whose record exists is not measured again, so the loops can be run in pieces (same --out). The test repos are kept
under --out too. Usage:

    python benchmarks/quality/slower_bar.py [--runs 5] [--aa 0] [--out DIR] [--only-aa] [-- extra perfci ab options]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import perfci, sh

SLOWDOWN = 1.025
WORKLOAD = """\
import perfci

FACTORS = {factors}
BLOCKS = 200  # the base does BLOCKS blocks of the same pure-Python work per call (about 5 ms); the head 2.5% more


@perfci.workload(params={{"case": list(FACTORS)}})
def bar(ctx, case):
    blocks = round(BLOCKS * FACTORS[case] * 4) // 4  # 200 -> 205 blocks: whole blocks plus a quarter block
    quarters = round(BLOCKS * FACTORS[case] * 4) % 4
    data = list(range(ctx.seed % 7, ctx.seed % 7 + 800))

    def block(n):
        total = 0
        for x in data[:n]:
            total += x * x
        return total

    def work():
        for _ in range(blocks):
            block(800)
        if quarters:
            block(200 * quarters)

    return work
"""
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "slower_bar"


def make_repo(path: Path) -> Path:
    """A git repo with two commits: base (both cases alike) and head (`slow` does 2.5% more work). Kept if there."""
    if (path / ".git").exists():
        return path
    (path / "perf").mkdir(parents=True)
    git = ["git", "-c", "user.email=bench@perfci", "-c", "user.name=bench"]
    sh(["git", "init", "-q"], path)
    wl = path / "perf" / "bar.py"
    wl.write_text(WORKLOAD.format(factors={"slow": 1.0, "same": 1.0}))
    sh(["git", "add", "."], path)
    sh([*git, "commit", "-qm", "base"], path)
    wl.write_text(WORKLOAD.format(factors={"slow": SLOWDOWN, "same": 1.0}))
    sh([*git, "commit", "-qam", "head: 2.5% more work in slow"], path)
    return path


def make_aa_repo(path: Path) -> Path:
    if (path / ".git").exists():
        return path
    path.mkdir(parents=True)
    sh(["git", "init", "-q"], path)
    (path / "README").write_text("a/a\n")
    sh(["git", "add", "."], path)
    sh(["git", "-c", "user.email=b@p", "-c", "user.name=b", "commit", "-qm", "one"], path)
    return path


def run_once(repo: Path, out: Path, args: list[str]) -> dict[str, Any]:
    """One `perfci ab` into `out` (skipped when its record.json exists): its exit code and its rows."""
    record = out / "record.json"
    if record.exists():
        loaded: dict[str, Any] = json.loads(record.read_text())
        return loaded
    proc = perfci([*args, "--out", str(out)], repo)
    comparison = out / "comparison.json"
    result: dict[str, Any] = {"exit_code": proc.returncode, "args": args}
    if comparison.exists():
        doc = json.loads(comparison.read_text())
        result["rows"] = [
            {k: r.get(k) for k in ("case_id", "metric", "verdict", "ratio", "ratio_low", "ratio_high", "mdc")}
            for r in doc["rows"]
        ]
        result["pairs_run"] = doc["settings"].get("ab", {}).get("pairs_run")
        summary = out / "summary.md"
        result["summary_below"] = summary.exists() and _listed_below(summary.read_text())
    else:
        result["error"] = proc.stderr[-2000:]
    out.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(result, indent=1))
    return result


def _listed_below(summary: str) -> list[str]:
    """Case ids listed in the summary's "Below the threshold" section."""
    if "#### Below the threshold" not in summary:
        return []
    section = summary.split("#### Below the threshold", 1)[1]
    return [line.split("|")[2].strip(" `") for line in section.splitlines() if line.startswith("| slower |")]


def _slow_row(result: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in result.get("rows", []) if "slow" in r["case_id"] and r["metric"] == "latency.median"), None)


def injected(out: Path, runs: int, extra: list[str]) -> None:
    repo = make_repo(out / "repo")
    ok = 0
    for i in range(runs):
        res = run_once(repo, out / f"run-{i}", ["ab", "HEAD~1", "HEAD", "--path", "perf", "--seed", str(i), *extra])
        row = _slow_row(res)
        if row is None:
            print(f"run {i}: no row (exit {res['exit_code']}): {res.get('error', '')[-300:]}", flush=True)
            continue
        change = (row["ratio"] - 1.0) * 100
        hit = row["verdict"] == "slower" and 1.5 <= change <= 3.5
        ok += hit
        mdc = f"{row['mdc'] * 100:.2f}%" if row.get("mdc") is not None else "-"
        print(
            f"run {i}: {row['verdict']} {change:+.2f}% [{(row['ratio_low'] - 1) * 100:+.2f}% .. "
            f"{(row['ratio_high'] - 1) * 100:+.2f}%] detects {mdc}, exit {res['exit_code']}, "
            f"{res.get('pairs_run')} pairs, summary lists it: {bool(res.get('summary_below'))}",
            flush=True,
        )
        if i == 0:
            strict = run_once(
                repo, out / "fail-on", ["ab", "HEAD~1", "HEAD", "--path", "perf", "--seed", "0", "--fail-on", "slower"]
            )
            srow = _slow_row(strict)
            print(f"run 0 with --fail-on slower: exit {strict['exit_code']} ({srow and srow['verdict']})", flush=True)
    print(f"bar (a): slower with +1.5% .. +3.5% in {ok} of {runs} runs (needs >= 4 of 5)", flush=True)


def aa(out: Path, runs: int, extra: list[str]) -> None:
    repo = make_aa_repo(out / "aa-repo")
    small = regress = 0
    for i in range(runs):
        res = run_once(repo, out / f"aa-{i}", ["ab", "HEAD", "HEAD", "--suite", "default", "--seed", str(i), *extra])
        verdicts = [r["verdict"] for r in res.get("rows", [])]
        named = [f"{r['case_id']} {r['verdict']} {(r['ratio'] - 1) * 100:+.2f}%" for r in res.get("rows", [])
                 if r["verdict"] in ("slower", "faster", "regression", "improvement")]  # fmt: skip
        small += any(v in ("slower", "faster") for v in verdicts)
        regress += "regression" in verdicts
        counts = {v: verdicts.count(v) for v in sorted(set(verdicts))}
        print(f"aa {i}: exit {res['exit_code']} {counts} {'; '.join(named)}", flush=True)
    print(f"bar (b): slower/faster in {small} of {runs} runs (needs <= 1 of 20), regression in {regress}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="A/B runs of the 2.5%% slowdown")
    parser.add_argument("--aa", type=int, default=0, help="A/A runs of the default suite (0: none)")
    parser.add_argument("--only-aa", action="store_true", help="skip (a)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where runs are kept (resumable)")
    parser.add_argument("extra", nargs="*", help="extra perfci ab options (after --)")
    ns = parser.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    if not ns.only_aa:
        injected(ns.out.resolve(), ns.runs, ns.extra)
    if ns.aa:
        aa(ns.out.resolve(), ns.aa, ns.extra)


if __name__ == "__main__":
    main()
