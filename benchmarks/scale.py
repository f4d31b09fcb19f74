"""Speed at scale: compare, report and baseline-update times of the real CLI at 500, 5,000 and 20,000
cases, and the time the 5,000-case HTML report takes to open in headless Chromium.

    python benchmarks/scale.py [--sizes 500,5000,20000] [--repeats 3] [--rounds 5] [--samples 10-30]
                               [--keep DIR] [--no-browser] [--against TREE]

For each size it writes two synthetic results files (seeded; a baseline and a candidate from separate runs),
shaped like real `perfci run` output: five rounds per case (--rounds), 10-30 raw samples per round (--samples),
the engine's per-round telemetry (timer, overhead, page faults, work sources), derived metrics, flops and bytes,
written by perfci's own writer; about 2% of the cases
regress, 2% improve, 2% are noisy and 1% fail in the candidate. Then it runs, as subprocesses (wall time, the
median of `--repeats`):

- `perfci compare BASE CAND --exit-zero --format json` (stdout to a file),
- `perfci compare BASE CAND --exit-zero --out DIR` (comparison.json, report.html, junit.xml, summary.md),
- `perfci report DIR/comparison.json BASE CAND --out report.html --quiet` (render again),
- `perfci baseline update CAND --runner scale --reason ...` (in a scratch project folder),

Before timing, perfci's byte-code is written (compileall), as `pip install` writes it. Then,
for the 5,000-case report (unless --no-browser), the time from `page.goto` until the report says it is
ready (`body[data-ready="1"]`) in headless Chromium through playwright. With `--against TREE` (another source
tree, e.g. `git worktree add /tmp/old COMMIT`), every command is also run by that tree's perfci, in turn with this
tree's, and the CPU-time ratio printed: on a VM whose speed moves by half from one hour to the next, only
interleaved runs compare two versions. Figures: docs/scale.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfci.format.model import CaseError, CaseResult, CaseSpec, CaseStatus, GitInfo, Round, RunResult
from perfci.format.schema import dump_results
from perfci.metrics import case_metrics


@dataclass(frozen=True)
class Shape:
    """How much raw data a case holds: rounds, and the range of samples per round (the sampler stops at its
    noise target after at least 10 samples; noisier cases take more)."""

    rounds: int = 5
    samples: tuple[int, int] = (10, 30)


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
# Workload families and their parameter grids (16 points each); a suite of n cases holds n / 16 workloads, like
# a large suite of many workload files with small grids each (ids unique without any counter parameter).
FAMILIES = (
    ("kernels.matmul", lambda k: {"m": 64 * 2 ** (k % 4), "n": 64 * 2 ** (k // 4), "dtype": "float32"}),
    ("kernels.softmax", lambda k: {"rows": 2 ** (4 + k % 4), "cols": 128 * 2 ** (k // 4)}),
    ("models.mlp", lambda k: {"batch": 2 ** (k % 4), "hidden": 256 * (1 + k // 4), "runtime": "eager"}),
    ("ops.copy", lambda k: {"bytes": 4096 * 4 ** (k % 4), "stride": 1 + k // 4}),
)
GRID = 16


def _spec(i: int) -> CaseSpec:
    group, k = divmod(i, GRID)
    family, params = FAMILIES[group % len(FAMILIES)]
    workload = f"{family}_{group // len(FAMILIES)}"
    return CaseSpec(workload, params(k), "cpu", source=f"{workload.split('.')[0]}/{workload}.py")


def _rounds(
    rng: random.Random, per_call: float, scale: float, noise: float, first_pid: int, shape: Shape
) -> tuple[Round, ...]:
    rounds = []
    iterations = max(1, int(1e-3 / per_call))
    for index in range(shape.rounds):
        shift = 1.0 + rng.gauss(0.0, noise)
        n = rng.randint(*shape.samples)
        samples = tuple(per_call * iterations * scale * shift * (1.0 + abs(rng.gauss(0.0, 0.02))) for _ in range(n))
        telemetry = {
            "timer_overhead_s": 2.5e-8 * (1 + rng.random()),
            "timer": "perf_counter",
            "work_sources": {"flops": "declared", "bytes": "derived"},
            "minor_faults_per_call": round(rng.random() * 0.01, 6),
        }
        rounds.append(
            Round(index, first_pid + index, iterations, samples, 0.05 + 0.02 * rng.random(), "budget", 1,
                  peak_rss_bytes=180_000_000 + rng.randint(0, 4_000_000),
                  rss_increase_bytes=rng.randint(0, 2_000_000), telemetry=telemetry)
        )  # fmt: skip
    return tuple(rounds)


def synthetic_run(n: int, candidate: bool, seed: int = 0, shape: Shape | None = None) -> RunResult:
    """A baseline (candidate=False) or candidate run of `n` cases; the same cases and seeds on both sides."""
    shape = shape or Shape()
    cases = []
    for i in range(n):
        rng = random.Random(f"{seed}:{i}:{candidate}")
        per_call = 1e-6 * 10 ** (3 * random.Random(f"{seed}:{i}").random())  # 1 us .. 1 ms, same on both sides
        scale, noise, kind = 1.0, 0.01, i % 100
        if candidate and kind in (1, 2):
            scale = 1.3  # regression
        elif candidate and kind in (3, 4):
            scale = 0.75  # improvement
        elif kind in (5, 6):
            noise = 0.2  # a noisy case
        spec = _spec(i)
        if candidate and kind == 7:
            error = CaseError("crash", "worker died (signal 9)", 2)
            cases.append(CaseResult.of(spec, CaseStatus.ERROR, (), (), (error,)))
            continue
        rounds = _rounds(rng, per_call, scale, noise, 4000 + 10 * (i % 50), shape)
        flops, nbytes = 2e6 * (1 + i % 9), 8e5 * (1 + i % 5)
        cases.append(CaseResult.of(spec, CaseStatus.OK, rounds, case_metrics(rounds, flops, nbytes), (), flops, nbytes))
    side = "cand" if candidate else "base"
    return RunResult(
        run_id=f"20261201T000000Z-{side}{n}",
        started_at="2026-12-01T00:00:00.000000Z" if not candidate else "2026-12-02T00:00:00.000000Z",
        finished_at="2026-12-01T01:00:00.000000Z" if not candidate else "2026-12-02T01:00:00.000000Z",
        fingerprint={
            "os": "Linux-6.1",
            "machine": "x86_64",
            "python": "3.11.9",
            "cpu_model": "synthetic cpu",
            "cpu_logical_cores": 2,
            "memory_total_bytes": 8 * 2**30,
            "gpus": [],
            "libraries": {"numpy": "2.1.0", "torch": "2.5.0"},
        },
        git=GitInfo("0" * 39 + ("2" if candidate else "1"), "main", False),
        settings={"rounds": shape.rounds, "seed": seed, "threads": 1, "complete": True},
        cases=tuple(cases),
    )


AGAINST: list[Path] = []  # --against TREE: the other source tree, timed in turn with this one


def perfci(
    *args: str, cwd: Path | None = None, stdout: Path | None = None, tree: Path | None = None
) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one `perfci` CLI subprocess (comparisons run with --exit-zero:
    errors are planted), of this tree's perfci or, with `tree`, of the perfci package in that source tree. On a
    shared machine the CPU time moves less than the wall time."""
    out = open(stdout, "w") if stdout else subprocess.DEVNULL  # noqa: SIM115
    env = dict(os.environ, PYTHONPATH=str(tree)) if tree is not None else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # -P: the current folder is not put first on the path, where a checkout's own perfci would shadow `tree`'s
    cmd = [sys.executable, "-P", "-m", "perfci", *args]
    proc = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.PIPE, env=env)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if stdout:
        out.close()
    if proc.returncode != 0:
        raise SystemExit(f"perfci {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def timed(
    row: dict[str, float | None], name: str, fn: Callable[[Path | None], tuple[float, float]], repeats: int
) -> None:
    """The medians of `repeats` runs: wall time as `name`, CPU time as `name`_cpu. With --against, each run of this
    tree is followed by one of the other (interleaved: a VM whose speed moves moves both), its medians as
    `name`_ref and `name`_ref_cpu."""
    runs, ref = [], []
    for _ in range(repeats):
        runs.append(fn(None))
        ref += [fn(tree) for tree in AGAINST]
    row[name] = round(statistics.median(w for w, _ in runs), 3)
    row[f"{name}_cpu"] = round(statistics.median(c for _, c in runs), 3)
    if ref:
        row[f"{name}_ref"] = round(statistics.median(w for w, _ in ref), 3)
        row[f"{name}_ref_cpu"] = round(statistics.median(c for _, c in ref), 3)


def browser_open(path: Path, repeats: int) -> float | None:
    """Median seconds from `goto` until the report is ready, in headless Chromium (None without a browser)."""
    executable = os.environ.get("PERFCI_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if executable is None:
        return None
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            start = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            times.append(time.perf_counter() - start)
            page.close()
        browser.close()
    return statistics.median(times)


def measure(n: int, folder: Path, repeats: int, browser: bool, shape: Shape) -> dict[str, float | None]:
    base, cand = folder / f"base-{n}.json", folder / f"cand-{n}.json"
    dump_results(synthetic_run(n, candidate=False, shape=shape), base)
    dump_results(synthetic_run(n, candidate=True, shape=shape), cand)
    out, project = folder / f"out-{n}", folder / f"project-{n}"
    project.mkdir(exist_ok=True)
    row: dict[str, float | None] = {"cases": n, "file_mb": round(base.stat().st_size / 1e6, 1)}
    timed(row, "compare_json_s", lambda t: perfci("compare", str(base), str(cand), "--exit-zero", "--format", "json",
                                                  stdout=folder / "compare.json", tree=t), repeats)  # fmt: skip
    timed(row, "compare_out_s", lambda t: perfci("compare", str(base), str(cand), "--exit-zero", "--out", str(out),
                                                 tree=t), repeats)  # fmt: skip
    timed(row, "report_s", lambda t: perfci("report", str(out / "comparison.json"), str(base), str(cand), "--out",
                                            str(folder / "again.html"), "--quiet", tree=t), repeats)  # fmt: skip
    timed(row, "baseline_update_s", lambda t: perfci("baseline", "update", str(cand), "--runner", "scale",
                                                     "--reason", "scale benchmark", cwd=project, tree=t),
          repeats)  # fmt: skip
    row["report_mb"] = round((out / "report.html").stat().st_size / 1e6, 1)
    row["chromium_open_s"] = browser_open(out / "report.html", repeats) if browser else None
    return row


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def compile_perfci(*trees: Path) -> None:
    """Write perfci's byte-code first, as `pip install` does: a user's CLI starts from it. Without this, an
    editable install in an environment with PYTHONDONTWRITEBYTECODE set (this project's VM) compiled every
    perfci module from its source on every command (docs/scale.md). `trees`: other source trees, the same."""
    import compileall

    import perfci

    for folder in (Path(perfci.__file__).parent, *(t / "perfci" for t in trees)):
        compileall.compile_dir(folder, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,5000,20000", help="case counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command (the median is shown)")
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium open time")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per case (perfci run's default: 5)")
    parser.add_argument("--samples", default="10-30", help="raw samples per round, drawn from MIN-MAX")
    parser.add_argument("--browser-sizes", default="5000", help="sizes whose report is opened in Chromium")
    parser.add_argument("--against", type=Path, help="another source tree (e.g. a git worktree of an older commit): "
                        "each command of it is timed in turn with this tree's, and the ratio shown")  # fmt: skip
    args = parser.parse_args()
    if args.against is not None:
        if not (args.against / "perfci" / "__init__.py").is_file():
            raise SystemExit(f"--against {args.against}: no perfci package there")
        AGAINST.append(args.against.resolve())
        probe = [sys.executable, "-P", "-c", "import perfci; print(perfci.__file__)"]
        seen = subprocess.run(probe, env=dict(os.environ, PYTHONPATH=str(AGAINST[0])), capture_output=True, text=True)
        if not seen.stdout.strip().startswith(str(AGAINST[0])):  # the comparison would time this tree twice
            raise SystemExit(f"--against {args.against}: its perfci is not the one imported ({seen.stdout.strip()})")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="perfci-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    browser_sizes = {int(s) for s in args.browser_sizes.split(",") if s}
    compile_perfci(*AGAINST)
    low, high = (int(x) for x in args.samples.split("-"))
    shape = Shape(args.rounds, (low, high))
    rows = []
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            row = measure(n, folder, args.repeats, not args.no_browser and n in browser_sizes, shape)
            rows.append(row)
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    timed_cols = ["compare_json_s", "compare_out_s", "report_s", "baseline_update_s"]
    cols = ["cases", "file_mb", *timed_cols, "report_mb", "chromium_open_s"]
    print("\nwall seconds (CPU seconds), medians of", args.repeats)
    print("\n| " + " | ".join(cols) + " |\n|" + " --- |" * len(cols))
    for row in rows:
        cells = [
            f"{_cell(row.get(c))} ({_cell(row.get(c + '_cpu'))})" if c in timed_cols else _cell(row.get(c))
            for c in cols
        ]
        print("| " + " | ".join(cells) + " |")
    for row in rows if AGAINST else ():
        for c in timed_cols:
            now, ref = row[c + "_cpu"] or 0.0, row[c + "_ref_cpu"] or 1.0
            print(f"{row['cases']:,} cases, {c}: this tree {row[c]:.2f} s ({now:.2f} CPU), {AGAINST[0]} "
                  f"{row[c + '_ref']:.2f} s ({ref:.2f} CPU): {now / ref:.2f}x CPU")  # fmt: skip
    by = {r["cases"]: r for r in rows}
    if 5000 in by and 20000 in by:
        for c in timed_cols:
            wall = (by[20000][c] or 0) / (by[5000][c] or 1)
            cpu = (by[20000][c + "_cpu"] or 0) / (by[5000][c + "_cpu"] or 1)
            print(f"20,000 / 5,000 cases, {c}: {wall:.2f}x wall, {cpu:.2f}x CPU")


if __name__ == "__main__":
    main()
