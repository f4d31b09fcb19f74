"""`perfci run --resume` end to end: a real `perfci run` killed with SIGKILL after some rounds, then resumed."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from perfci.format.schema import load_results

DATA = Path(__file__).parent.parent / "data" / "workloads"
ROUNDS = 8
pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)


def perfci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _rounds_on_disk(results: Path) -> int:
    """Rounds of the first case in the partial file (0 while there is none); the file is written atomically."""
    if not results.exists():
        return 0
    return len(json.loads(results.read_text())["cases"][0]["rounds"])


def _kill_after(tmp_path: Path, rounds: int) -> dict[str, Any]:
    """Start an 8-round run of the tiny workloads, SIGKILL it once `rounds` rounds are on disk; the file left."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "perfci", "run", "tiny.py", "--out", str(out), "--rounds", str(ROUNDS)]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while _rounds_on_disk(out / "results.json") < rounds:
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended or stalled"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    doc: dict[str, Any] = json.loads((out / "results.json").read_text())
    return doc


def test_sigkilled_run_resumes_with_only_the_missing_rounds(tmp_path: Path) -> None:
    shutil.copy(DATA / "tiny.py", tmp_path / "tiny.py")
    killed = _kill_after(tmp_path, 2)
    assert killed["settings"]["complete"] is False
    kept = {c["id"]: c["rounds"] for c in killed["cases"]}
    n_kept = {len(r) for r in kept.values()}
    assert len(n_kept) == 1 and 2 <= n_kept.pop() < ROUNDS, kept  # whole rounds only, and not all of them
    shutil.copytree(tmp_path / "out", tmp_path / "copy")  # the interrupted file, for the refusals below

    resumed = perfci("run", "tiny.py", "--out", "out", "--rounds", str(ROUNDS), "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    total_kept = sum(len(r) for r in kept.values())
    assert f"resuming run {killed['run_id']}: {total_kept} round(s) kept" in resumed.stderr

    final = json.loads((tmp_path / "out" / "results.json").read_text())
    run = load_results(tmp_path / "out" / "results.json")  # valid
    assert [c.id for c in run.cases] == list(kept)
    for case in final["cases"]:
        assert case["status"] == "ok"
        assert [r["index"] for r in case["rounds"]] == list(range(ROUNDS))  # every round exactly once
        assert case["rounds"][: len(kept[case["id"]])] == kept[case["id"]]  # kept rounds unchanged
        new_pids = {r["pid"] for r in case["rounds"][len(kept[case["id"]]) :]}
        assert not new_pids & {r["pid"] for r in kept[case["id"]]}  # the rest measured by new workers
    settings = final["settings"]
    assert settings["complete"] is True and final["run_id"] == killed["run_id"]
    (note,) = settings.pop("resumed")
    assert note["rounds_kept"] == total_kept and note["at"]
    assert settings == {**killed["settings"], "complete": True}
    measured = len(final["cases"]) * ROUNDS - total_kept
    print(f"\nrounds kept {total_kept}, measured after the resume {measured}")  # the figure in docs/reliability.md

    before = (tmp_path / "copy" / "results.json").read_text()
    other = perfci("run", "tiny.py", "--out", "copy", "--rounds", "5", "--resume", cwd=tmp_path)
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1, other.stderr
    assert f"other settings (rounds: {ROUNDS} then, 5 now)" in other.stderr
    with (tmp_path / "tiny.py").open("a") as f:
        f.write("# edited after the kill\n")
    edited = perfci("run", "tiny.py", "--out", "copy", "--rounds", str(ROUNDS), "--resume", cwd=tmp_path)
    assert edited.returncode == 2 and len(edited.stderr.strip().splitlines()) == 1, edited.stderr
    assert "the workload files changed since" in edited.stderr and "Traceback" not in edited.stderr
    assert (tmp_path / "copy" / "results.json").read_text() == before  # a refusal writes nothing
