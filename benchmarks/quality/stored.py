"""Stored-baseline comparisons across separate invocations: false alarms and power of `perfci compare`.

Runs `perfci run` N times on each of two revisions of the injected-slowdown repo (common.WORKLOAD), alternating
v1, v2, v1, v2, ... as separate invocations (fresh processes, minutes apart), then compares with the real
`perfci compare` CLI:
- A/A: consecutive runs of the same revision (v1_i vs v1_i+1, v2_i vs v2_i+1): every case is an A/A;
- power: v1_i vs v2_i for the cases with injected factors.
Also estimates the cross-job noise (sd of the per-invocation shift of log round medians beyond what the rounds
explain), the quantity behind `--job-noise`.
Usage: python benchmarks/quality/stored.py [N] [extra perfci compare options...]
Environment: PERFCI_BENCH_NAME (output names, default `stored`), PERFCI_BENCH_KERNEL (`numpy`, default, or
`torch`: the workload's kernel), PERFCI_BENCH_RUN_ARGS (extra `perfci run` options, default `--rounds 5`), e.g.
the speed-reference check: PERFCI_BENCH_NAME=stored_reference PERFCI_BENCH_KERNEL=torch
PERFCI_BENCH_RUN_ARGS="--rounds 10 --speed-reference" python benchmarks/quality/stored.py 8 --metric
latency.vs_reference --metric latency.median
"""

from __future__ import annotations

import math
import os
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import CASES, CONTEXT, Clock, machine, make_injected_repo, now, perfci, rows_of, save, sh, write_doc
from estimators import job_components

NAME = os.environ.get("PERFCI_BENCH_NAME", "stored")
KERNEL = os.environ.get("PERFCI_BENCH_KERNEL", "numpy")
RUN_ARGS = shlex.split(os.environ.get("PERFCI_BENCH_RUN_ARGS", "--rounds 5"))


def case_logs(results: Path) -> dict[str, list[float]]:
    from perfci.format.schema import load_results
    from perfci.metrics import round_medians

    run = load_results(results)
    return {c.id.split("case=")[1].split("]")[0]: [math.log(m) for m in round_medians(c.rounds)] for c in run.cases}


def job_noise(runs: list[Path]) -> dict[str, float]:
    """Per case: the job-level term of the log round medians (perfci/stats/components.py)."""
    per_case: dict[str, list[list[float]]] = {}
    for r in runs:
        for case, logs in case_logs(r).items():
            per_case.setdefault(case, []).append(logs)
    return {case: job_components(runs_logs).job_sd for case, runs_logs in per_case.items()}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    extra = sys.argv[2:]
    info = {"started": now(), "machine": machine(), "context": CONTEXT, "n": n, "options": extra}
    info.update(kernel=KERNEL, run_args=RUN_ARGS)
    clock = Clock()
    with tempfile.TemporaryDirectory(prefix="perfci-stored-") as tmp:
        repo = make_injected_repo(Path(tmp) / "repo", kernel=KERNEL)
        for rev, name in (("HEAD~1", "v1"), ("HEAD", "v2")):
            sh(["git", "worktree", "add", "--detach", str(Path(tmp) / name), rev], repo)
        runs: dict[str, list[Path]] = {"v1": [], "v2": []}
        for i in range(n):
            for name in ("v1", "v2"):
                out = Path(tmp) / "runs" / f"{name}-{i}"
                perfci(["run", "perf", *RUN_ARGS, "--seed", str(i), "--out", str(out), "--exit-zero"],
                       Path(tmp) / name)  # fmt: skip
                if (out / "results.json").exists():
                    runs[name].append(out / "results.json")
            print(f"invocation pair {i} done [{clock.elapsed():.0f}s]", flush=True)

        def compare(a: Path, b: Path, tag: str) -> dict[str, dict[str, dict]]:  # type: ignore[type-arg]
            """Rows by metric, then by case."""
            out = Path(tmp) / "cmp" / tag
            perfci(["compare", str(a), str(b), "--out", str(out), "--exit-zero", *extra], Path(tmp))
            done = (out / "comparison.json").exists()
            return {m: rows_of(out / "comparison.json", m) if done else {} for m in metrics}

        metrics = [extra[i + 1] for i, x in enumerate(extra[:-1]) if x == "--metric"] or ["latency.median"]
        info["metrics"] = metrics
        aa = [compare(r[i], r[i + 1], f"aa-{k}-{i}") for k, r in runs.items() for i in range(len(r) - 1)]
        power = [compare(a, b, f"ab-{i}") for i, (a, b) in enumerate(zip(runs["v1"], runs["v2"], strict=False))]
        info["job_noise"] = job_noise(runs["v1"] + runs["v2"])
    info.update(elapsed_s=clock.elapsed(), finished=now(), aa=aa, power=power)
    save(NAME, info)
    write_doc(NAME, report(info))


def report(info: dict) -> str:  # type: ignore[type-arg]
    run_args = " ".join(info.get("run_args", []))
    env = f'PERFCI_BENCH_KERNEL={info.get("kernel", "numpy")} PERFCI_BENCH_RUN_ARGS="{run_args}"'
    lines = [
        "# Stored-baseline comparisons across separate invocations (`perfci run` + `perfci compare`)",
        "",
        f"Produced by `{env} python benchmarks/quality/stored.py {info['n']} {' '.join(info['options'])}` on"
        f" {info['started']} (finished {info['finished']}, {info['elapsed_s'] / 60:.1f} min).",
        f"Machine: {info['machine']}. {info.get('context', '')}",
    ]
    for metric in info.get("metrics", ["latency.median"]):
        aa = [x[metric] for x in info["aa"] if x.get(metric)]
        power = [x[metric] for x in info["power"] if x.get(metric)]
        lines += metric_report(metric, aa, power)
    noise = info.get("job_noise", {})
    lines += [
        "",
        "Cross-job noise of the latency (sd of the per-invocation shift of mean log round medians beyond the rounds'"
        " own spread):",
        ", ".join(f"{c}: {v:.3f}" for c, v in noise.items()) + ".",
        "",
    ]
    return "\n".join(lines)


def metric_report(metric: str, aa: list[dict], power: list[dict]) -> list[str]:  # type: ignore[type-arg]
    fa = sum(any(r["verdict"] == "regression" for r in comp.values()) for comp in aa)
    aa_counts: dict[str, int] = {}
    for comp in aa:
        for r in comp.values():
            aa_counts[r["verdict"]] = aa_counts.get(r["verdict"], 0) + 1
    lines = [
        "",
        f"## `{metric}`",
        "",
        f"A/A (consecutive invocations of the same revision, 6 cases each): {len(aa)} comparisons;"
        f" **{fa} had a `regression` verdict** (bar: <= 5% of suite runs). Verdicts: {aa_counts}.",
        "",
        "Power (v1 vs v2 invocations):",
        "",
        "| case | factor | regression | inconclusive | unchanged/other | median estimate |",
        "|---|---|---|---|---|---|",
    ]
    for case, factor in CASES.items():
        vs = [comp[case]["verdict"] for comp in power if case in comp]
        ests = sorted(comp[case]["ratio"] for comp in power if case in comp)
        med = (ests[len(ests) // 2] - 1) * 100 if ests else float("nan")
        reg, inc = vs.count("regression"), vs.count("inconclusive")
        lines.append(
            f"| {case} | {factor:.2f} | {reg}/{len(vs)} | {inc}/{len(vs)} | {len(vs) - reg - inc} | {med:+.1f}% |"
        )
    return lines


if __name__ == "__main__":
    main()
