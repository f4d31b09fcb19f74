"""Kill trials (a small seeded version of benchmarks/kill_check.py; docs/reliability.md has the 20-trial table): a
real `perfci run` stopped by SIGKILL or SIGTERM at moments spread over an uninterrupted run's length leaves a
valid results file (or none), exit 130 after SIGTERM, no worker behind it, and `--resume` completes the file with
every round that was on disk unchanged."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # timing-sensitive: run alone (README)
SCRIPT = Path(__file__).resolve().parent.parent.parent / "benchmarks" / "kill_check.py"


def _kill_check():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("kill_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kill_check"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_stopped_runs_leave_valid_files_no_workers_and_resume_to_complete(tmp_path: Path) -> None:
    kc = _kill_check()
    rounds = 4
    (tmp_path / "full").mkdir()
    full = kc.uninterrupted(tmp_path / "full", rounds)
    trials = []
    for i, fraction in enumerate((0.1, 0.3, 0.6, 0.85)):  # even: SIGKILL, odd: SIGTERM
        folder = tmp_path / f"t{i}"
        folder.mkdir()
        trials.append(kc.trial(folder, i, fraction * full, rounds))
    for t in trials:
        assert t.passed, (t.index, t.sig, t.at_s, t.problem)
    assert any(t.rounds_on_disk > 0 for t in trials)  # some stops fell after rounds were written
    assert {t.sig for t in trials} == {"SIGKILL", "SIGTERM"}
