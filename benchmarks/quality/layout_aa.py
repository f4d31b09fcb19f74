"""A/A of pure-Python loops under `perfci ab`, at chosen checkout paths: does a layout favour one side?

A layout bias shows as an A/A estimate with the same sign in every run at one checkout path. The bar
(docs/measurement.md, "Layout"): over 20 runs at a path, the mean estimate is within +-0.5%, no run says
`regression`, and at most 1 of 20 says `slower` or `faster`.

The throw-away repository (one commit) holds pure-Python cases that allocate little and depend on the
interpreter's layout: an integer loop, string building and dict look-ups. Each run is `perfci ab HEAD` (the base in
a temporary worktree, the head in the working tree at the path given) with its own seed, so every run draws fresh
environment and heap pads.

Two steps, so that the path is not chosen on the runs that are reported:
  screen: `--paths P1,P2,...` with `--runs 4` (seeds 1000+): the path with the largest |mean estimate| is the worst;
  report: `--paths WORST --runs 20` (seeds 0..19, never used in the screen).

Usage: python benchmarks/quality/layout_aa.py --paths /tmp/a,/tmp/bbbbbbbbbbbbb --runs 4 --seed-base 1000
       python benchmarks/quality/layout_aa.py --paths /tmp/bbbbbbbbbbbbb --runs 20
Prints one Markdown table per path (paste it into docs/measurement.md with the date); raw rows go to
.perfci/quality/layout-aa-<name>.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Clock, machine, now, perfci, save, sh

WORKLOAD = """\
import perfci

FAST = {"warmup_s": 0.02, "min_samples": 5, "budget_s": 0.1, "min_sample_s": 0.0005}


@perfci.workload(params={"kind": ["int_loop", "str_build", "dict_lookup"]}, timing=FAST)
def pure(ctx, kind):
    if kind == "int_loop":
        def f():
            s = 0
            for i in range(20000):
                s += i * i
            return s
    elif kind == "str_build":
        def f():
            return "".join(str(i) for i in range(3000))
    else:
        table = {f"k{i}": i for i in range(1000)}
        keys = list(table)

        def f():
            return sum(table[k] for k in keys)
    return f
"""


def make_repo(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    (path / "perf").mkdir(parents=True)
    for args in (["init", "-q"], ["config", "user.email", "bench@perfci"], ["config", "user.name", "bench"]):
        sh(["git", *args], path)
    (path / "perf" / "pure.py").write_text(WORKLOAD)
    sh(["git", "add", "."], path)
    sh(["git", "commit", "-qm", "pure-Python A/A"], path)


def one_run(repo: Path, seed: int, out: Path, extra: list[str]) -> list[dict[str, object]]:
    args = ["ab", "HEAD", "--path", "perf", "--seed", str(seed), "--out", str(out), "--exit-zero", *extra]
    proc = perfci(args, repo)
    if proc.returncode != 0:
        raise SystemExit(f"perfci ab failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    doc = json.loads((out / "comparison.json").read_text())
    pairs = doc["settings"]["ab"]["pairs_run"]
    rows = []
    for r in doc["rows"]:
        if r["metric"] == "latency.median":
            rows.append({"seed": seed, "case": r["case_id"], "ratio": r["ratio"], "low": r.get("ci_low"),
                         "high": r.get("ci_high"), "verdict": r["verdict"], "pairs": pairs})  # fmt: skip
    return rows


def table(path: str, rows: list[dict[str, object]]) -> str:
    lines = [
        f"At `{path}` ({len(path)} characters), {len({r['seed'] for r in rows})} runs:",
        "",
        "| case | mean estimate | runs > 0 | min .. max | regression | slower or faster | unchanged | inconclusive |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in sorted({str(r["case"]) for r in rows}):
        mine = [r for r in rows if r["case"] == case]
        est = [100 * (float(r["ratio"]) - 1) for r in mine]  # type: ignore[arg-type]
        verdicts = [r["verdict"] for r in mine]
        lines.append(
            f"| {case} | {statistics.fmean(est):+.2f}% | {sum(e > 0 for e in est)}/{len(est)} | "
            f"{min(est):+.2f} .. {max(est):+.2f}% | {verdicts.count('regression')} | "
            f"{verdicts.count('slower') + verdicts.count('faster')} | {verdicts.count('unchanged')} | "
            f"{verdicts.count('inconclusive')} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", required=True, help="comma-separated checkout paths (created, then removed)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seed-base", type=int, default=0)
    parser.add_argument("--name", default="report")
    parser.add_argument("extra", nargs="*", help="extra perfci ab options (after --)")
    args = parser.parse_args()
    clock = Clock()
    started = now()
    every: dict[str, list[dict[str, object]]] = {}
    for path_text in args.paths.split(","):
        repo = Path(path_text)
        make_repo(repo)
        rows: list[dict[str, object]] = []
        for j in range(args.runs):
            seed = args.seed_base + j
            got = one_run(repo, seed, repo.parent / f"{repo.name}-out-{seed}", args.extra)
            shutil.rmtree(repo.parent / f"{repo.name}-out-{seed}", ignore_errors=True)
            rows += got
            summary = ", ".join(f"{str(r['case']).split('=')[-1][:-5]} {100 * (float(r['ratio']) - 1):+.2f}% "  # type: ignore[arg-type]
                                f"{r['verdict']}" for r in got)  # fmt: skip
            print(f"[{clock.elapsed():6.0f} s] {path_text} seed {seed}: {summary}", file=sys.stderr, flush=True)
        every[path_text] = rows
        shutil.rmtree(repo, ignore_errors=True)
    for path_text, rows in every.items():
        print(table(path_text, rows) + "\n")
    print(f"{started} .. {now()}, {clock.elapsed():.0f} s; perfci ab options: {args.extra or 'defaults'}")
    save(f"layout-aa-{args.name}", {"machine": machine(), "started": started, "rows": every, "extra": args.extra})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
