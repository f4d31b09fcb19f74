"""History at fleet scale (issue #18): ingest rate, and `perfci trend` (table and HTML) over a million points.

    python benchmarks/history_scale.py [--cases 500] [--runners 4] [--runs 500] [--keep DIR]

1. Ingest: 20 synthetic results files of `--cases` cases (5 rounds of 10-30 samples each, the engine's
   telemetry, 11 metrics per case, as benchmarks/scale.py writes them) go into a fresh SQLite store twice:
   through `perfci history ingest` (a subprocess: reading and validating the files included) and through
   `HistoryStore.ingest_many` on runs already in memory (the store alone). Both print case-runs/s; the CLI's peak
   RSS too.
2. The big store: `--cases` x `--runners` x `--runs` case-runs (1,000,000 by default), every one with the 11
   metrics a real case has (11 million rows), written straight into the store's tables in bulk (the figures of
   step 1 say what ingest would take). The latency of each case is lognormal noise (2% sd); 2% of the series
   step up by 10% and 2% step down by 10% at a random run.
3. `perfci trend --db URL` (table to a file) and `perfci trend --db URL --html FILE`, as subprocesses: wall time
   and peak RSS of each (os.wait4), and the HTML file's size. Figures: docs/history.md ("Scale").
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from perfci.metrics.registry import METRICS
from perfci.schema import dump_results, load_results
from perfci.store.history import HistoryStore
from perfci.store.tables import runs

sys.path.insert(0, str(Path(__file__).parent))
from scale import synthetic_run  # the same synthetic results files as the compare benchmark

FILES = 20
START = datetime(2025, 1, 1)


def run_cli(*args: str, stdout: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one `perfci` subprocess."""
    out = open(stdout, "w") if stdout else subprocess.DEVNULL  # noqa: SIM115
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "perfci", *args], stdout=out, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    if stdout:
        out.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"perfci {' '.join(args)} failed: {err.decode()[-2000:]}")
    return took, usage.ru_maxrss / 1024


def ingest_rates(folder: Path, cases: int) -> dict[str, float]:
    for name in ("ingest.db", "ingest-store.db"):
        (folder / name).unlink(missing_ok=True)
    files = []
    for k in range(FILES):
        run = synthetic_run(cases, False, seed=k)
        run = replace(run, run_id=f"ingest-{k:03d}", started_at=f"2026-10-{1 + k:02d}T00:00:00Z")
        files.append(folder / f"results-{k:03d}.json")
        dump_results(run, files[-1])
    took, rss = run_cli("history", "ingest", *map(str, files), "--db", f"sqlite:///{folder / 'ingest.db'}",
                        "--runner", "bench")  # fmt: skip
    loaded = [load_results(p) for p in files]
    store = HistoryStore(f"sqlite:///{folder / 'ingest-store.db'}")
    start = time.perf_counter()
    store.ingest_many((r, "bench") for r in loaded)
    alone = time.perf_counter() - start
    n = FILES * cases
    return {"cli_rate": n / took, "cli_rss": rss, "store_rate": n / alone}


def build_store(url: str, cases: int, runners: int, n_runs: int, seed: int = 0) -> float:
    """Bulk-write the big store; seconds taken."""
    store = HistoryStore(url)
    rng = random.Random(seed)
    base = [1e-6 * 10 ** (3 * rng.random()) for _ in range(cases)]
    steps = {
        i: (rng.randrange(n_runs // 10, n_runs - n_runs // 50 - 3), 1.1 if i % 2 else 0.9)
        for i in rng.sample(range(cases), cases // 25)
    }
    names = [f"kernels.op{i % 25}[n={i},dtype=float32]@cpu" for i in range(cases)]
    others = [m for m in METRICS if m != "latency.median"][:10]
    start = time.perf_counter()
    with store.engine.begin() as conn:
        for r in range(runners):
            for j in range(n_runs):
                stamp = (START + timedelta(days=j, hours=r)).strftime("%Y-%m-%dT%H:%M:%SZ")  # one run a day
                pk = conn.execute(
                    insert(runs).values(run_id=f"run-{j:04d}", runner=f"runner-{r}", commit=f"{j:07x}c0ffee",
                                        branch="main", dirty=False, started_at=stamp, finished_at=stamp,
                                        fingerprint='{"cpu_model": "synthetic"}')
                ).inserted_primary_key[0]  # fmt: skip
                rows = []
                for i in range(cases):
                    step = steps.get(i)
                    level = base[i] * (1 + r * 0.5) * (step[1] if step and j >= step[0] else 1.0)
                    lm = math.log(level) + rng.gauss(0.0, 0.02)
                    v = math.exp(lm)
                    rows.append((pk, names[i], "latency.median", "s", "lower", v, v * 0.98, v * 1.02, 5, lm, 0.01))
                    rows += [(pk, names[i], m, "x", "lower", v, None, None, None, None, None) for m in others]
                conn.exec_driver_sql(
                    "INSERT INTO measurements (run, case_id, metric, unit, direction, value, low, high, rounds, "
                    "log_mean, log_sd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--runners", type=int, default=4)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--keep", type=Path, help="Folder to keep the store and reports in (default: a temporary one).")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="perfci-history-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    rates = ingest_rates(folder, args.cases)
    print(f"ingest, {FILES} files x {args.cases} cases: perfci history ingest {rates['cli_rate']:,.0f} case-runs/s "
          f"(peak RSS {rates['cli_rss']:.0f} MiB); HistoryStore.ingest_many alone {rates['store_rate']:,.0f} "
          "case-runs/s")  # fmt: skip
    db = folder / "history.db"
    db.unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    points = args.cases * args.runners * args.runs
    built = build_store(url, args.cases, args.runners, args.runs)
    print(f"store: {points:,} points ({args.cases} cases x {args.runners} runners x {args.runs} runs, 11 metrics "
          f"each), bulk-written in {built:.0f} s, {db.stat().st_size / 2**20:.0f} MiB")  # fmt: skip
    took, rss = run_cli("trend", "--db", url, stdout=folder / "trend.txt")
    print(f"perfci trend (table):  {took:6.1f} s, peak RSS {rss:5.0f} MiB")
    html = folder / "trend.html"
    took, rss = run_cli("trend", "--db", url, "--html", str(html), stdout=folder / "trend-html.txt")
    print(
        f"perfci trend --html:   {took:6.1f} s, peak RSS {rss:5.0f} MiB, report {html.stat().st_size / 2**20:.1f} MiB"
    )
    print(f"files in {folder}")


if __name__ == "__main__":
    main()
