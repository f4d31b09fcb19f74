"""A/A false alarms of `perfci ab HEAD HEAD` over the built-in default suite (the bar: no `regression` in
at least 19 of 20 runs).

Each run is one real `perfci ab HEAD HEAD --suite default` (two worktrees of the same commit, real torch workers,
paired rounds, adaptive looks) in a throw-away git repo; every case of every run is an A/A comparison.
Usage: python benchmarks/quality/aa_default.py [RUNS] [extra perfci ab options...]
Writes .perfci/quality/NAME.json and docs/quality/NAME.md (NAME: $PERFCI_BENCH_NAME, default aa_default).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CONTEXT, Clock, machine, now, perfci, save, sh, write_doc

NAME = os.environ.get("PERFCI_BENCH_NAME", "aa_default")  # output file names (results/NAME.json, docs)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    extra = sys.argv[2:]
    info = {"started": now(), "machine": machine(), "context": CONTEXT, "runs": runs, "options": extra}
    clock = Clock()
    results = []
    with tempfile.TemporaryDirectory(prefix="perfci-aa-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        sh(["git", "init", "-q"], repo)
        (repo / "README").write_text("a/a\n")
        sh(["git", "add", "."], repo)
        sh(["git", "-c", "user.email=b@p", "-c", "user.name=b", "commit", "-qm", "one"], repo)
        for i in range(runs):
            out = Path(tmp) / f"run-{i}"
            args = ["ab", "HEAD", "HEAD", "--suite", "default", "--seed", str(i), "--out", str(out), "--exit-zero"]
            proc = perfci([*args, *extra], repo)
            if not (out / "comparison.json").exists():
                results.append({"run": i, "error": proc.stderr[-2000:]})
                print(f"run {i}: error {proc.stderr[-300:]}", flush=True)
                continue
            doc = json.loads((out / "comparison.json").read_text())
            keys = ("case_id", "metric", "verdict", "ratio", "ratio_low", "ratio_high", "noise")
            rows = [{k: r.get(k) for k in keys} for r in doc["rows"]]
            results.append({"run": i, "rows": rows, "ab": doc["settings"].get("ab", {})})
            bad = [f"{r['case_id']}:{r['metric']}" for r in rows if r["verdict"] == "regression"]
            print(f"run {i} [{clock.elapsed():.0f}s]: regressions={bad}", flush=True)
            info.update(elapsed_s=clock.elapsed(), finished=now() + " (partial)", results=results)
            save(NAME, info)  # after every run, so a run cut short still leaves its data
            write_doc(NAME, report(info))
    info.update(elapsed_s=clock.elapsed(), finished=now(), results=results)
    save(NAME, info)
    write_doc(NAME, report(info))


def report(info: dict) -> str:  # type: ignore[type-arg]
    ok = [r for r in info["results"] if "rows" in r]
    n = len(ok)
    runs_with_fa = [r for r in ok if any(x["verdict"] == "regression" for x in r["rows"])]
    timed = [x for r in ok for x in r["rows"] if x["metric"].startswith("latency.")]
    counts: dict[str, int] = {}
    for x in timed:
        counts[x["verdict"]] = counts.get(x["verdict"], 0) + 1
    noise = sorted(x["noise"] for x in timed if x.get("noise") is not None)
    pairs = sorted(r["ab"].get("pairs_run", 0) for r in ok)
    verdict = "met" if n >= 20 and len(runs_with_fa) <= 1 else "NOT met" if n >= 20 else "not measured in full"
    noise_line = (
        f"- standard error of the log ratio (timed metric): median {noise[len(noise) // 2]:.4f}, max {noise[-1]:.4f}"
        if noise
        else "- no noise figures"
    )
    return "\n".join(
        [
            "# A/A: `perfci ab HEAD HEAD` over the default suite",
            "",
            f"Produced by `python benchmarks/quality/aa_default.py {info['runs']} {' '.join(info['options'])}`"
            f" on {info['started']} (finished {info['finished']}, {info['elapsed_s'] / 60:.1f} min).",
            f"Machine: {info['machine']}. {info.get('context', '')}",
            "",
            f"- runs completed: {n} of {info['runs']}",
            f"- runs with at least one `regression` verdict (any case, any metric): **{len(runs_with_fa)} of {n}**"
            f" (bar: at most 1 of 20: {verdict})",
            f"- timed-metric verdicts over all cases and runs: {counts}",
            noise_line,
            f"- pairs per run: min {pairs[0] if pairs else 0}, median {pairs[len(pairs) // 2] if pairs else 0},"
            f" max {pairs[-1] if pairs else 0}",
            "",
        ]
    )


if __name__ == "__main__":
    main()
