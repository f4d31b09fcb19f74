"""Kill trials: `perfci run` stopped by SIGKILL or SIGTERM at seeded random moments, then `perfci run --resume`.

    python benchmarks/kill_check.py [--trials 20] [--seed 1] [--rounds 6] [--out DIR]

Each trial starts a real `perfci run` of tests/data/workloads/tiny.py (2 cases, --rounds, pure-Python workers)
in its own folder, waits a random time drawn (seeded) between 0.3 s and the length of an uninterrupted run
(measured first), and sends SIGKILL (even trials) or SIGTERM (odd trials) to perfci. Then it checks:

- the results file left is valid (perfci's own loader) or absent (stopped before its first round);
- SIGTERM ends with exit 130 (README, "Exit codes"); SIGKILL with the signal;
- no worker outlives perfci: every descendant process seen while perfci ran is gone 10 s after the stop;
- `perfci run --resume` with the same --out and options exits 0, and its file is complete, holds each case's
  rounds 0..N-1 once, and every round that was on disk at the stop unchanged.

Prints one line per trial and a summary; exit 0 when every trial passed. Figures: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from perfci.errors import ResultsFormatError
from perfci.format.schema import load_results

TINY = Path(__file__).resolve().parent.parent / "tests" / "data" / "workloads" / "tiny.py"
ORPHAN_WAIT_S = 10.0


@dataclass
class Trial:
    index: int
    sig: str
    at_s: float
    rounds_on_disk: int = 0
    stop_rc: int | None = None
    valid: bool = False
    orphans: int = 0
    resume_rc: int | None = None
    kept_unchanged: bool = False
    complete: bool = False
    problem: str = ""

    @property
    def passed(self) -> bool:
        return not self.problem


def run_cmd(folder: Path, rounds: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "perfci", "run", "tiny.py", "--out", "out", "--rounds", str(rounds), *extra]


def uninterrupted(folder: Path, rounds: int) -> float:
    """Seconds an uninterrupted run takes here (the upper end of the kill moments)."""
    shutil.copy(TINY, folder / "tiny.py")
    start = time.perf_counter()
    done = subprocess.run(run_cmd(folder, rounds), cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the uninterrupted run failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start


def _descendants(proc: psutil.Process, seen: dict[int, psutil.Process]) -> None:
    try:
        for child in proc.children(recursive=True):
            seen.setdefault(child.pid, child)
    except psutil.NoSuchProcess:
        pass


def _alive(procs: dict[int, psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs.values():
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _rounds_by_case(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {c["id"]: c["rounds"] for c in doc["cases"]}


def trial(folder: Path, index: int, at_s: float, rounds: int) -> Trial:
    t = Trial(index, "SIGKILL" if index % 2 == 0 else "SIGTERM", at_s)
    shutil.copy(TINY, folder / "tiny.py")
    proc = subprocess.Popen(run_cmd(folder, rounds), cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    parent = psutil.Process(proc.pid)
    seen: dict[int, psutil.Process] = {}
    deadline = time.perf_counter() + at_s
    while time.perf_counter() < deadline and proc.poll() is None:
        _descendants(parent, seen)
        time.sleep(0.01)
    _descendants(parent, seen)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL if t.sig == "SIGKILL" else signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        t.problem = "perfci did not stop within 60 s"
    t.stop_rc = proc.returncode
    finished = t.stop_rc == 0  # the run ended before the signal: nothing to resume, still checked
    expected_rc = 0 if finished else (-signal.SIGKILL if t.sig == "SIGKILL" else 130)
    if t.stop_rc != expected_rc and not t.problem:
        t.problem = f"exit {t.stop_rc} after {t.sig}, expected {expected_rc}"
    stop = time.perf_counter()
    while _alive(seen) and time.perf_counter() - stop < ORPHAN_WAIT_S:
        time.sleep(0.05)
    left = _alive(seen)
    t.orphans = len(left)
    for p in left:
        p.kill()
    if left and not t.problem:
        t.problem = f"{len(left)} worker(s) outlived perfci"

    results = folder / "out" / "results.json"
    before: dict[str, list[dict[str, Any]]] = {}
    if results.exists():
        try:
            load_results(results)
            t.valid = True
            before = _rounds_by_case(json.loads(results.read_text()))
            t.rounds_on_disk = sum(len(r) for r in before.values())
        except ResultsFormatError as exc:
            t.problem = t.problem or f"invalid results file: {exc}"
    else:
        t.valid = True  # stopped before its first round: nothing written, nothing lost

    resumed = subprocess.run(run_cmd(folder, rounds, "--resume"), cwd=folder, capture_output=True, text=True,
                             timeout=600)  # fmt: skip
    t.resume_rc = resumed.returncode
    if resumed.returncode != 0:
        t.problem = t.problem or f"--resume exit {resumed.returncode}: {resumed.stderr.strip()[-300:]}"
        return t
    final = json.loads(results.read_text())
    load_results(results)
    after = _rounds_by_case(final)
    t.complete = final["settings"]["complete"] is True and all(
        [r["index"] for r in rs] == list(range(rounds)) for rs in after.values()
    )
    t.kept_unchanged = all(after.get(case, [])[: len(rs)] == rs for case, rs in before.items())
    if not t.complete:
        t.problem = t.problem or "the resumed file is not complete"
    elif not t.kept_unchanged:
        t.problem = t.problem or "a round on disk at the stop changed in the resume"
    return t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="kill_check-"))
    (root / "full").mkdir(parents=True, exist_ok=True)
    full = uninterrupted(root / "full", args.rounds)
    print(f"uninterrupted run: {full:.1f} s ({args.rounds} rounds of 2 cases)")
    rng = random.Random(args.seed)
    trials = []
    for i in range(args.trials):
        folder = root / f"t{i:02d}"
        folder.mkdir(exist_ok=True)
        t = trial(folder, i, rng.uniform(0.3, full), args.rounds)
        trials.append(t)
        print(f"trial {i:2d} {t.sig:7} at {t.at_s:5.2f} s: exit {t.stop_rc}, rounds on disk {t.rounds_on_disk:2d}, "
              f"file valid {t.valid}, orphans {t.orphans}, resume exit {t.resume_rc}, kept unchanged "
              f"{t.kept_unchanged}, complete {t.complete}  {'PASS' if t.passed else 'FAIL: ' + t.problem}")  # fmt: skip
    failed = [t for t in trials if not t.passed]
    print(f"\n{len(trials) - len(failed)} of {len(trials)} trials passed "
          f"({sum(t.sig == 'SIGKILL' for t in trials)} SIGKILL, {sum(t.sig == 'SIGTERM' for t in trials)} SIGTERM; "
          f"{sum(t.rounds_on_disk > 0 for t in trials)} with rounds on disk at the stop)")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
