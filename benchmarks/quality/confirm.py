"""The stored-baseline gate end to end: `perfci run --baseline B --confirm` on injected slowdowns.

One trial: `perfci run` of revision v1 of the injected-slowdown repo (common.WORKLOAD) is the stored baseline;
then, as a separate invocation in a checkout of v2 (cases slowed by 2/3/5/10%, two untouched), `perfci run
--baseline <v1 results> --confirm`: the unpaired comparison flags what it cannot clear, and the flagged cases are
re-measured by a same-machine A/B against the baseline's commit, whose verdicts decide the gate. An A/A trial does
the same with v1 as the candidate too (every case unchanged). Records per case the final verdict and whether it came
from the A/B, and per trial the exit code and the time taken.
Usage: python benchmarks/quality/confirm.py [TRIALS]
Writes .perfci/quality/confirm.json and docs/quality/confirm.md.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CASES, CONTEXT, Clock, machine, make_injected_repo, now, perfci, rows_of, save, sh, write_doc


def trial(tmp: Path, i: int, candidate: str) -> dict[str, Any]:
    clock = Clock()
    base = tmp / "runs" / f"base-{candidate}-{i}"
    perfci(["run", "perf", "--rounds", "5", "--seed", str(i), "--out", str(base), "--exit-zero"], tmp / "v1")
    out = tmp / "runs" / f"cand-{candidate}-{i}"
    args = ["run", "perf", "--rounds", "5", "--seed", str(100 + i), "--out", str(out)]
    proc = perfci([*args, "--baseline", str(base / "results.json"), "--confirm"], tmp / candidate)
    rows = rows_of(out / "comparison.json") if (out / "comparison.json").exists() else {}
    cases = {
        case: {"verdict": r["verdict"], "ratio": r["ratio"], "confirmed": "confirmed by A/B" in (r.get("note") or "")}
        for case, r in rows.items()
        if r["metric"] == "latency.median"
    }
    return {"kind": candidate, "exit": proc.returncode, "seconds": clock.elapsed(), "cases": cases,
            "stderr_tail": proc.stderr[-400:] if proc.returncode not in (0, 1) else ""}  # fmt: skip


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    info: dict[str, Any] = {"started": now(), "machine": machine(), "context": CONTEXT, "n": n}
    clock = Clock()
    trials = []
    with tempfile.TemporaryDirectory(prefix="perfci-confirm-") as tmp_name:
        tmp = Path(tmp_name)
        repo = make_injected_repo(tmp / "repo")
        for rev, name in (("HEAD~1", "v1"), ("HEAD", "v2")):
            sh(["git", "worktree", "add", "--detach", str(tmp / name), rev], repo)
        for i in range(n):
            for candidate in ("v2", "v1"):
                trials.append(trial(tmp, i, candidate))
                t = trials[-1]
                print(
                    f"trial {i} {candidate}: exit {t['exit']}, {t['seconds']:.0f}s [{clock.elapsed():.0f}s]", flush=True
                )
    info.update(elapsed_s=clock.elapsed(), finished=now(), trials=trials)
    save("confirm", info)
    write_doc("confirm", report(info))


def report(info: dict[str, Any]) -> str:
    power = [t for t in info["trials"] if t["kind"] == "v2"]
    aa = [t for t in info["trials"] if t["kind"] == "v1"]
    secs = sorted(t["seconds"] for t in info["trials"])
    lines = [
        "# The stored-baseline gate end to end: `perfci run --baseline --confirm`",
        "",
        f"Produced by `python benchmarks/quality/confirm.py {info['n']}` on {info['started']} (finished"
        f" {info['finished']}, {info['elapsed_s'] / 60:.1f} min). Machine: {info['machine']}.",
        info.get("context", ""),
        "",
        "Each trial: a `perfci run` of v1 as the stored baseline, then a separate `perfci run --baseline ... --confirm`"
        " of v2 (power) or of v1 again (A/A). Exit 1 = the gate failed.",
        "",
        f"- Power trials: {len(power)}; gate failed (exit 1) in {sum(t['exit'] == 1 for t in power)}; other exit codes:"
        f" {sorted(t['exit'] for t in power if t['exit'] not in (0, 1))}.",
        f"- A/A trials: {len(aa)}; gate failed (exit 1) in **{sum(t['exit'] == 1 for t in aa)}**; other exit codes:"
        f" {sorted(t['exit'] for t in aa if t['exit'] not in (0, 1))}.",
        f"- Time per trial (both invocations and the A/B): median {secs[len(secs) // 2]:.0f} s, max {secs[-1]:.0f} s.",
        "",
        "| case | factor | power: regression | power: confirmed by A/B | A/A: regression | A/A: confirmed by A/B |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for case, factor in CASES.items():
        pv = [t["cases"].get(case, {}) for t in power]
        av = [t["cases"].get(case, {}) for t in aa]
        lines.append(
            f"| {case} | {factor:.2f} | {sum(v.get('verdict') == 'regression' for v in pv)}/{len(pv)}"
            f" | {sum(bool(v.get('confirmed')) for v in pv)}/{len(pv)}"
            f" | {sum(v.get('verdict') == 'regression' for v in av)}/{len(av)}"
            f" | {sum(bool(v.get('confirmed')) for v in av)}/{len(av)} |"
        )
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
