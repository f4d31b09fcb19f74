"""History at fleet scale: ingest rate, and `perfci trend` (table and HTML) over a million points.

    python benchmarks/history_scale.py [--cases 500] [--runners 4] [--runs 500] [--keep DIR] [--repeat N]
        [--files 20] [--postgres URL] [--ingest-only]

1. Ingest: `--files` (20) synthetic results files of `--cases` cases (5 rounds of 10-30 samples each, the
   engine's telemetry, 10-11 metrics per case, as benchmarks/scale.py writes them; past 20, copies of the first
   20 under new run ids) go into a fresh SQLite store twice:
   through `perfci history ingest` (a subprocess: starting Python, reading and validating the files included)
   and through `HistoryStore.ingest_many` on runs already in memory (the store alone). Both print case-runs/s;
   the CLI also its CPU time (workers included) and peak memory: the RSS of its biggest process, and the PSS of
   the CLI and its worker processes summed (sampled every 50 ms). `--repeat N` measures N times and prints the
   best and the median; `--postgres URL` measures ingest into PostgreSQL too (in a new schema of that database,
   dropped afterwards); `--ingest-only` stops after step 1.
2. The big store: `--cases` x `--runners` x `--runs` case-runs (1,000,000 by default), every one with the 11
   metrics a real case has (11 million rows), written straight into the store's tables in bulk (the figures of
   step 1 say what ingest would take). The latency of each case is lognormal noise (2% sd); 2% of the series
   step up by 10% and 2% step down by 10% at a random run.
3. `perfci trend --db URL` (table to a file) and `perfci trend --db URL --html FILE`, as subprocesses: wall time
   and peak RSS of each (sampled), and the HTML file's size. The first trend computes every series' change
   points and caches them in the store; the table again and the HTML read them; then one more run of one runner
   is added and the table made again (that runner's series computed, the others read). Last, in this process,
   every trend computed afresh and read from the cache, checked equal. Figures: docs/history.md ("Scale").
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import Connection

from perfci.format.schema import dump_results, load_results
from perfci.metrics.registry import LATENCY, default_registry
from perfci.store.history import HistoryStore
from perfci.store.tables import runs
from perfci.store.trend import trends

sys.path.insert(0, str(Path(__file__).parent))
from scale import synthetic_run  # the same synthetic results files as the compare benchmark

FILES = 20
START = datetime(2025, 1, 1)


def tree_memory_kib(pid: int) -> tuple[int, int]:
    """(largest RSS of one process, PSS summed) over a process and its descendants, in KiB; PSS counts a page
    shared by n processes (a forked worker's inherited modules) as 1/n in each, so the sum is what they hold."""
    largest = total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            rss = int(Path(f"/proc/{p}/statm").read_text().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except (OSError, IndexError):
            continue
        largest = max(largest, rss)
        total += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
        todo += [int(c) for c in children]
    return largest, total


def run_cli(*args: str, stdout: Path | None = None) -> tuple[float, float, float, float]:
    """Wall seconds, peak RSS (MiB) of its biggest process, peak memory (MiB) of the process with its workers
    (PSS summed), and CPU seconds (user + system, workers included) of one `perfci` subprocess. Memory is
    sampled every 50 ms from /proc (ru_maxrss would count the moment between fork and exec, when the child is a
    copy of this process); CPU time moves less than wall time on a shared machine."""
    out = open(stdout, "w") if stdout else subprocess.DEVNULL  # noqa: SIM115
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "perfci", *args], stdout=out, stderr=subprocess.PIPE)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            largest, total = tree_memory_kib(proc.pid)
            peak[0], peak[1] = max(peak[0], largest), max(peak[1], total)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stderr is not None
    err = proc.stderr.read()
    status = proc.wait()
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    done.set()
    sampler.join()
    if stdout:
        out.close()
    if status != 0:
        raise SystemExit(f"perfci {' '.join(args)} failed: {err.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, peak[0] / 1024, peak[1] / 1024, cpu


@contextmanager
def postgres_schema(url: str) -> Iterator[str]:
    """A URL whose connections work in a new, empty schema of the database at `url` (dropped afterwards)."""
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def write_files(folder: Path, cases: int, count: int = FILES) -> list[Path]:
    """`count` results files of `cases` cases: FILES distinct synthetic runs, and past FILES copies of them that
    differ in run id and start time only (the store skips a run id it holds; writing 200 synthetic runs would
    take minutes)."""
    files = []
    for k in range(count):
        files.append(folder / f"results-{k:03d}.json")
        if k < FILES:
            run = synthetic_run(cases, False, seed=k)
            run = replace(run, run_id=f"ingest-{k:03d}", started_at=f"2026-10-{1 + k:02d}T00:00:00Z")
            dump_results(run, files[-1])
            continue
        text = files[k % FILES].read_text("utf-8")
        old_id, new_id = f'"ingest-{k % FILES:03d}"', f'"ingest-{k:03d}"'
        if text.count(old_id) != 1:
            raise RuntimeError(f"{files[k % FILES]}: expected its run id once")
        files[-1].write_text(text.replace(old_id, new_id), "utf-8")
    return files


@contextmanager
def fresh_store(folder: Path, name: str, postgres: str | None) -> Iterator[str]:
    """The URL of an empty store: a new SQLite file in `folder`, or a new schema of the PostgreSQL database."""
    if postgres:
        with postgres_schema(postgres) as url:
            yield url
    else:
        for suffix in ("", "-journal", "-wal", "-shm"):
            (folder / f"{name}.db{suffix}").unlink(missing_ok=True)
        yield f"sqlite:///{folder / f'{name}.db'}"


def ingest_rates(folder: Path, files: list[Path], cases: int, postgres: str | None = None) -> dict[str, float]:
    n = len(files) * cases
    with fresh_store(folder, "ingest", postgres) as url:
        took, rss, tree, cpu = run_cli("history", "ingest", *map(str, files), "--db", url, "--runner", "bench")
    loaded = [load_results(p) for p in files[:FILES]] * (len(files) // FILES) + [
        load_results(p) for p in files[: len(files) % FILES]
    ]
    loaded = [replace(run, run_id=f"{run.run_id}-{k}") for k, run in enumerate(loaded)]  # ids unique, as in files
    with fresh_store(folder, "ingest-store", postgres) as url:
        store = HistoryStore(url)
        start = time.perf_counter()
        store.ingest_many((r, "bench") for r in loaded)
        alone = time.perf_counter() - start
        store.engine.dispose()
    return {"cli_rate": n / took, "cli_rss": rss, "cli_tree_rss": tree, "cli_cpu": cpu, "store_rate": n / alone}


def report_ingest(label: str, rates: list[dict[str, float]], files: int, cases: int) -> None:
    def spread(key: str, unit: str, rate: bool = True) -> str:
        """A rate's best and median; a memory figure's worst and median."""
        xs = [r[key] for r in rates]
        return f"{max(xs):,.0f}{unit} ({'best' if rate else 'worst'}) / {statistics.median(xs):,.0f}{unit} (median)"

    print(f"ingest into {label}, {files} files x {cases} cases, {len(rates)} time(s), load average "
          f"{os.getloadavg()[0]:.1f}:\n"
          f"  perfci history ingest         {spread('cli_rate', ' case-runs/s')}\n"
          f"    CPU time (workers included) {min(r['cli_cpu'] for r in rates):.2f} s (least) / "
          f"{statistics.median(r['cli_cpu'] for r in rates):.2f} s (median)\n"
          f"    peak RSS, biggest process   {spread('cli_rss', ' MiB', False)}\n"
          f"    peak PSS, with its workers  {spread('cli_tree_rss', ' MiB', False)}\n"
          f"  HistoryStore.ingest_many      {spread('store_rate', ' case-runs/s')}", flush=True)  # fmt: skip


@dataclass(frozen=True)
class Fleet:
    """The big store's synthetic cases: names, base levels and the series that step (index -> run, factor)."""

    names: list[str]
    base: list[float]
    steps: dict[int, tuple[int, float]]

    @classmethod
    def make(cls, cases: int, n_runs: int, rng: random.Random) -> Fleet:
        base = [1e-6 * 10 ** (3 * rng.random()) for _ in range(cases)]
        steps = {
            i: (rng.randrange(n_runs // 10, n_runs - n_runs // 50 - 3), 1.1 if i % 2 else 0.9)
            for i in rng.sample(range(cases), cases // 25)
        }
        return cls([f"kernels.op{i % 25}[n={i},dtype=float32]@cpu" for i in range(cases)], base, steps)

    def write_run(self, conn: Connection, rng: random.Random, r: int, j: int) -> None:
        """Run `j` (day j) of runner `r`: each case's latency and 10 other metrics."""
        others = [m for m in default_registry() if m != LATENCY][:10]
        stamp = (START + timedelta(days=j, hours=r)).strftime("%Y-%m-%dT%H:%M:%SZ")  # one run a day
        pk = conn.execute(
            insert(runs).values(run_id=f"run-{j:04d}", runner=f"runner-{r}", commit=f"{j:07x}c0ffee",
                                branch="main", dirty=False, started_at=stamp, finished_at=stamp,
                                fingerprint='{"cpu_model": "synthetic"}')
        ).inserted_primary_key[0]  # fmt: skip
        rows = []
        for i, name in enumerate(self.names):
            step = self.steps.get(i)
            level = self.base[i] * (1 + r * 0.5) * (step[1] if step and j >= step[0] else 1.0)
            lm = math.log(level) + rng.gauss(0.0, 0.02)
            v = math.exp(lm)
            rows.append((pk, name, "latency.median", "s", "lower", v, v * 0.98, v * 1.02, 5, lm, 0.01))
            rows += [(pk, name, m, "x", "lower", v, None, None, None, None, None) for m in others]
        conn.exec_driver_sql(
            "INSERT INTO measurements (run, case_id, metric, unit, direction, value, low, high, rounds, "
            "log_mean, log_sd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


def build_store(url: str, cases: int, runners: int, n_runs: int, seed: int = 0) -> tuple[float, Fleet]:
    """Bulk-write the big store; seconds taken, and its cases."""
    store = HistoryStore(url)
    rng = random.Random(seed)
    fleet = Fleet.make(cases, n_runs, rng)
    start = time.perf_counter()
    with store.engine.begin() as conn:
        for r in range(runners):
            for j in range(n_runs):
                fleet.write_run(conn, rng, r, j)
    return time.perf_counter() - start, fleet


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--runners", type=int, default=4)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--keep", type=Path, help="Folder to keep the store and reports in (default: a temporary one).")
    ap.add_argument("--files", type=int, default=FILES, help=f"Results files to ingest (default {FILES}).")
    ap.add_argument("--repeat", type=int, default=1, help="Measure ingest this many times (min and median).")
    ap.add_argument("--postgres", help="Also measure ingest into this PostgreSQL database (in a scratch schema).")
    ap.add_argument("--ingest-only", action="store_true", help="Stop after the ingest figures.")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="perfci-history-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    files = write_files(folder, args.cases, args.files)
    for label, postgres in [("SQLite", None)] + ([("PostgreSQL", args.postgres)] if args.postgres else []):
        rates = []
        for _ in range(args.repeat):
            print(f"  load average {os.getloadavg()[0]:.1f}", flush=True)
            rates.append(ingest_rates(folder, files, args.cases, postgres))
        report_ingest(label, rates, len(files), args.cases)
    if args.ingest_only:
        return
    db = folder / "history.db"
    db.unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    points = args.cases * args.runners * args.runs
    built, fleet = build_store(url, args.cases, args.runners, args.runs)
    print(f"store: {points:,} points ({args.cases} cases x {args.runners} runners x {args.runs} runs, 11 metrics "
          f"each), bulk-written in {built:.0f} s, {db.stat().st_size / 2**20:.0f} MiB")  # fmt: skip
    # the first trend computes every series' change points and caches them in the store (store/trend.py)
    took, rss, _, _ = run_cli("trend", "--db", url, stdout=folder / "trend.txt")
    print(f"perfci trend (table):  {took:6.1f} s, peak RSS {rss:5.0f} MiB  (no change points cached yet)")
    took, rss, _, _ = run_cli("trend", "--db", url, stdout=folder / "trend-again.txt")
    print(f"perfci trend (table):  {took:6.1f} s, peak RSS {rss:5.0f} MiB  (again: every series cached)")
    html = folder / "trend.html"
    took, rss, _, _ = run_cli("trend", "--db", url, "--html", str(html), stdout=folder / "trend-html.txt")
    print(
        f"perfci trend --html:   {took:6.1f} s, peak RSS {rss:5.0f} MiB, report {html.stat().st_size / 2**20:.1f} MiB"
    )
    with HistoryStore(url).engine.begin() as conn:  # the next day's run of one runner: its series have grown
        fleet.write_run(conn, random.Random(1), 0, args.runs)
    took, rss, _, _ = run_cli("trend", "--db", url, stdout=folder / "trend-next-day.txt")
    print(
        f"perfci trend (table):  {took:6.1f} s, peak RSS {rss:5.0f} MiB  (after one more run of one runner: "
        f"{args.cases} of {args.cases * args.runners} series computed)"
    )
    cold = HistoryStore(url)
    t0 = time.perf_counter()
    uncached = trends(cold, cache=False)
    t1 = time.perf_counter()
    cached = trends(cold)
    t2 = time.perf_counter()
    assert cached == uncached, "cached change points differ from computed ones"
    print(f"store/trend.trends in-process: {t1 - t0:.1f} s computing every series, {t2 - t1:.1f} s from the cache; "
          "the same trends")  # fmt: skip
    print(f"files in {folder}")


if __name__ == "__main__":
    main()
