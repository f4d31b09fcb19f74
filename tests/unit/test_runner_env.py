"""The worker environment the runner builds: thread variables, the environment pad and the malloc tunables."""

from __future__ import annotations

from pathlib import Path

from perfci.engine.runner import MALLOC_TUNABLES, Runner, RunSettings


def test_workers_get_fixed_malloc_thresholds_unless_glibc_tunables_is_already_set(tmp_path: Path) -> None:
    plain = Runner(RunSettings(threads=2), tmp_path, worker_env={"PATH": "/bin"})
    env = plain._env()
    assert env["GLIBC_TUNABLES"] == MALLOC_TUNABLES
    assert env["OMP_NUM_THREADS"] == "2" and env["PATH"] == "/bin"
    own = Runner(RunSettings(), tmp_path, worker_env={"GLIBC_TUNABLES": "glibc.malloc.check=0"})
    assert own._env()["GLIBC_TUNABLES"] == "glibc.malloc.check=0"  # the user's choice wins
    off = Runner(RunSettings(malloc_tunables=None), tmp_path, worker_env={})
    assert "GLIBC_TUNABLES" not in off._env()


def test_environment_pad_is_seeded_by_key(tmp_path: Path) -> None:
    runner = Runner(RunSettings(seed=3), tmp_path, worker_env={})
    a, b = runner._env(pad_key="0:0:x")["PERFCI_ENV_PAD"], runner._env(pad_key="0:0:x")["PERFCI_ENV_PAD"]
    assert a == b and set(a) <= {"x"}
    lengths = {len(runner._env(pad_key=f"{i}:0:x")["PERFCI_ENV_PAD"]) for i in range(20)}
    assert len(lengths) > 10 and max(lengths) < 4096
