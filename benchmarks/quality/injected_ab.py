"""Power and false alarms of `perfci ab` on injected slowdowns (the bar: >= 95% at 5%, >= 50% at 3%).

One trial = one real `perfci ab HEAD~1 HEAD` (subprocesses, worktrees, paired rounds, adaptive looks) in a temp
repo whose head commit scales the work of four cases by 1.02/1.03/1.05/1.10 and leaves two untouched
(see common.WORKLOAD). Usage: python benchmarks/quality/injected_ab.py [TRIALS] [extra perfci ab options...]
Writes .perfci/quality/NAME.json and docs/quality/NAME.md (NAME: $PERFCI_BENCH_NAME, default injected_ab).
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CASES, CONTEXT, Clock, machine, make_injected_repo, now, perfci, rows_of, save, write_doc

from perfci.compare.policy import DecisionSettings
from perfci.stats.decision import cutoff

NAME = os.environ.get("PERFCI_BENCH_NAME", "injected_ab")  # output file names (results/NAME.json, docs)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def main() -> None:
    if sys.argv[1:2] == ["--report"]:  # rewrite the page from saved results: --report RESULTS.json [NAME]
        import json

        name = sys.argv[3] if len(sys.argv) > 3 else "injected_ab"
        write_doc(name, report(json.loads(Path(sys.argv[2]).read_text())))
        return
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    extra = sys.argv[2:]
    catch = float(extra[extra.index("--catch") + 1]) if "--catch" in extra else DecisionSettings().catch
    info = {
        "catch": catch,
        "started": now(),
        "machine": machine(),
        "context": CONTEXT,
        "trials": trials,
        "options": extra,
    }
    clock = Clock()
    results = []
    with tempfile.TemporaryDirectory(prefix="perfci-injected-") as tmp:
        repo = make_injected_repo(Path(tmp) / "repo")
        for i in range(trials):
            out = Path(tmp) / f"trial-{i}"
            args = ["ab", "HEAD~1", "HEAD", "--path", "perf", "--seed", str(i), "--out", str(out), "--exit-zero"]
            proc = perfci([*args, *extra], repo)
            if proc.returncode != 0 or not (out / "comparison.json").exists():
                results.append({"trial": i, "error": proc.stderr[-2000:]})
                print(f"trial {i}: error {proc.stderr[-300:]}", flush=True)
                continue
            rows = rows_of(out / "comparison.json")
            import json

            ab = json.loads((out / "comparison.json").read_text())["settings"].get("ab", {})
            results.append({"trial": i, "rows": rows, "ab": ab})
            line = " ".join(f"{c}:{rows[c]['verdict'][:5]}({(rows[c]['ratio'] - 1) * 100:+.1f}%)" for c in CASES)
            print(f"trial {i} [{clock.elapsed():.0f}s, {ab.get('pairs_run')} pairs]: {line}", flush=True)
            info.update(elapsed_s=clock.elapsed(), finished=now() + " (partial)", results=results)
            save(NAME, info)  # after every trial, so a run cut short still leaves its data
            write_doc(NAME, report(info))
    info["elapsed_s"] = clock.elapsed()
    info["finished"] = now()
    info["results"] = results
    save(NAME, info)
    write_doc(NAME, report(info))


def report(info: dict) -> str:  # type: ignore[type-arg]
    ok = [r for r in info["results"] if "rows" in r]
    n = len(ok)
    lines = [
        "# Injected slowdowns, same-machine A/B (`perfci ab`)",
        "",
        f"Produced by `python benchmarks/quality/injected_ab.py {info['trials']} {' '.join(info.get('options', []))}`"
        f" on {info['started']} (finished {info['finished']}, {info['elapsed_s'] / 60:.1f} min).",
        f"Machine: {info['machine']}. {info.get('context', '')}",
        "",
        f"{n} trials (of {info['trials']}; {info['trials'] - n} failed to run). Each trial is one `perfci ab HEAD~1"
        " HEAD` with its own seed, default decision settings unless options are shown above.",
        "",
        "| case | injected factor | regression | detection rate (95% Wilson) | other verdicts | median estimate |",
        "|---|---|---|---|---|---|",
    ]
    for case, factor in CASES.items():
        verdicts = [r["rows"][case]["verdict"] for r in ok if case in r["rows"]]
        k = sum(v == "regression" for v in verdicts)
        lo, hi = wilson(k, len(verdicts))
        others = {v: verdicts.count(v) for v in sorted(set(verdicts)) if v != "regression"}
        ests = sorted(r["rows"][case]["ratio"] for r in ok if case in r["rows"])
        med = (ests[len(ests) // 2] - 1) * 100 if ests else float("nan")
        rate = k / len(verdicts) if verdicts else float("nan")
        lines.append(
            f"| {case} | {factor:.2f} | {k}/{len(verdicts)} | {rate:.0%} ({lo:.0%}..{hi:.0%}) | {others} "
            f"| {med:+.2f}% |"
        )
    noise = sorted(r["rows"][c]["noise"] for r in ok for c in CASES if r["rows"].get(c, {}).get("noise"))
    if noise:
        se = noise[len(noise) // 2]
        floor = max(0.03, math.expm1(3 * se))
        catch = info.get("catch", 0.5)  # runs before the catch rule used the plain rule (catch = 0.5)
        cut = cutoff(floor, se, catch)
        lines += [
            "",
            f"Noise: median standard error of log(ratio) at the final look {se:.4f} (max {noise[-1]:.4f}), so the"
            f" effective threshold max(3%, exp(3 se) - 1) was about {floor:.1%} and, with catch = {catch}, the"
            f" estimate's cut-off about {math.expm1(cut):.2%}. A slowdown is flagged with ~95% probability when it"
            f" exceeds roughly the cut-off plus 1.65 se: minimum detectable slowdown under these conditions"
            f" ~{math.expm1(cut + 1.65 * se):.1%}.",
        ]
    fa_runs = sum(any(r["rows"][c]["verdict"] == "regression" for c in ("same1", "same2")) for r in ok)
    pairs = [r["ab"].get("pairs_run", 0) for r in ok]
    lines += [
        "",
        f"False alarms on the untouched cases: {fa_runs} of {n} trials had a `regression` on `same1` or `same2`.",
        f"Pairs per trial: min {min(pairs, default=0)}, median {sorted(pairs)[len(pairs) // 2] if pairs else 0},"
        f" max {max(pairs, default=0)}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
