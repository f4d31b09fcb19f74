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


def test_cli_runs_blas_single_threaded_but_workers_get_the_users_environment(tmp_path: Path) -> None:
    from perfci.cli import single_threaded_blas

    environ = {"PATH": "/bin"}
    single_threaded_blas(environ)
    assert environ["OPENBLAS_NUM_THREADS"] == "1" and environ["PERFCI_WORKER_UNSET"] == "OPENBLAS_NUM_THREADS"
    single_threaded_blas(environ)  # a perfci that this one starts: nothing changes, the marker still names it
    assert environ["PERFCI_WORKER_UNSET"] == "OPENBLAS_NUM_THREADS"
    unpinned = Runner(RunSettings(threads=0), tmp_path, worker_env=environ)._env()
    assert "OPENBLAS_NUM_THREADS" not in unpinned and "PERFCI_WORKER_UNSET" not in unpinned
    assert unpinned["PATH"] == "/bin"
    pinned = Runner(RunSettings(threads=3), tmp_path, worker_env=environ)._env()
    assert pinned["OPENBLAS_NUM_THREADS"] == "3"
    users = {"OPENBLAS_NUM_THREADS": "8"}
    single_threaded_blas(users)  # the user's choice stays, and workers inherit it
    assert users == {"OPENBLAS_NUM_THREADS": "8"}
    assert Runner(RunSettings(threads=0), tmp_path, worker_env=users)._env()["OPENBLAS_NUM_THREADS"] == "8"
