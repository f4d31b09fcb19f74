"""`perfci ab --base-image/--head-image` for real, with the stand-in container runtime (tests/tools/
fake_container_runtime.py: docker's command line, the container's command run as a child in a clean environment,
stdin only with -i, mounts named in PERFCI_FAKE_MOUNTS, `kill NAME` for real). Its images are this interpreter's
environment (on the image's PATH); `slow` sets WORK_SCALE=1.2, which the workload reads to do 20% more work. For
the fingerprints' differences, two images `old` and `new` put virtual environments first on their PATH that differ
in a small installed distribution (slowlib 1.0 and 1.1), `new` being `slow` too.

The bar: an image 20% slower is a regression (exit 1) named in the table; the A/A of one image exits 0; every
worker ran with stdin attached (-i) and the working tree mounted; a missing image or runtime is one clear error
(exit 2); a worker that times out, and perfci interrupted with Ctrl-C, leave no container running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from perfci.ab.worktrees import OWNER_FILE, lock_reason, remove_dead_workdirs
from tests.integration.test_ab_environments import install_slowlib, venv

pytestmark = pytest.mark.integration
SERIAL = pytest.mark.serial  # on the tests that assert verdicts or time-outs of real measurements: run alone (README)

FAKE = Path(__file__).resolve().parents[1] / "tools" / "fake_container_runtime.py"

WORKLOAD = """
import os
import time

import perfci

# a sample is a few calls of ~0.1 ms; the budget per case and round keeps a pair's estimate steady enough on a
# busy 2-core VM (lockstep: base and head alternate sample by sample)
TIMING = {"warmup_s": 0.01, "min_samples": 10, "budget_s": 0.1, "min_sample_s": 0.001}
SCALE = float(os.environ.get("WORK_SCALE", "1"))  # set by the image `slow`


@perfci.workload(params={"n": [2000]}, timing=TIMING)
def loop(ctx, n):
    m = int(n * SCALE)

    def work():
        s = 0
        for i in range(m):
            s += i
        return s

    return work


@perfci.workload(params={"n": [1]}, timing=TIMING)
def hang(ctx, n):
    return lambda: time.sleep(3600)
"""

CASE = "wl.loop[n=2000]@cpu"


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    """The stand-in's state folder, with its images: `base` and `slow`, both this interpreter's environment."""
    state = tmp_path / "runtime"
    state.mkdir()
    path = f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    images = {"base": {"env": {"PATH": path}}, "slow": {"env": {"PATH": path, "WORK_SCALE": "1.2"}}}
    (state / "images.json").write_text(json.dumps(images))
    return state


def add_venv_images(state: Path, folder: Path) -> None:
    """Images `old` and `new`: a virtual environment first on PATH with slowlib 1.0, or 1.1 (and WORK_SCALE=1.2)."""
    images = json.loads((state / "images.json").read_text())
    for name, version in (("old", "1.0"), ("new", "1.1")):
        env = venv(folder / f"venv-{name}")
        install_slowlib(env, version, 1.0)
        images[name] = {"env": {"PATH": f"{env / 'bin'}{os.pathsep}{images['base']['env']['PATH']}"}}
    images["new"]["env"]["WORK_SCALE"] = "1.2"
    (state / "images.json").write_text(json.dumps(images))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "perf").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "perf" / "wl.py").write_text(WORKLOAD)
    return repo


def ab_args(base: str, head: str, *extra: str, runtime: str = str(FAKE)) -> list[str]:
    return [sys.executable, "-m", "perfci", "ab", "--base-image", base, "--head-image", head,
            "--container-runtime", runtime, "--path", "perf", *extra]  # fmt: skip


def perfci(repo: Path, state: Path, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PERFCI_FAKE_RUNTIME_DIR": str(state)}
    return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)


def log(state: Path) -> list[dict[str, Any]]:
    path = state / "log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def containers_gone(state: Path, within_s: float = 20.0) -> list[dict[str, Any]]:
    """The `run` entries whose process is still running once the killers had `within_s` to act (none, when all is
    well): a container is killed by a watchdog a moment after its worker was."""
    deadline = time.monotonic() + within_s
    while True:
        running = [e for e in log(state) if e["command"] == "run" and "pid" in e and alive(e["pid"])]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.2)


def worker_runs(state: Path) -> list[dict[str, Any]]:
    return [e for e in log(state) if e["command"] == "run" and e["argv"][2:4] == ["-m", "perfci.engine.worker"]]


@SERIAL
def test_a_slower_image_is_a_regression(repo: Path, runtime: Path, tmp_path: Path) -> None:
    add_venv_images(runtime, tmp_path)
    out = repo / "out"
    proc = perfci(repo, runtime, ab_args("old", "new", "-k", "loop", "--out", str(out)))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(CASE in ln and "latency.median" in ln and "regression" in ln for ln in proc.stdout.splitlines())
    assert "environments: base image old -> head image new" in proc.stderr
    assert "environments differ (base -> head): slowlib 1.0 -> 1.1" in proc.stderr  # the images' fingerprints
    assert "slowlib 1.0 -> 1.1" in (out / "summary.md").read_text()
    doc = json.loads((out / "comparison.json").read_text())
    row = next(r for r in doc["rows"] if r["metric"] == "latency.median")
    assert row["case_id"] == CASE and row["verdict"] == "regression" and 1.1 < row["ratio"] < 1.35, row
    envs = doc["settings"]["ab"]["environments"]
    assert (envs["base"]["image"], envs["head"]["image"]) == ("old", "new")
    assert envs["changes"] == [["slowlib", "1.0", "1.1"]]
    # both images were checked and probed; every worker ran in its image with stdin attached and the tree mounted
    assert [e["image"] for e in log(runtime) if e["command"] == "image inspect"] == ["old", "new"]
    workers = worker_runs(runtime)
    assert {e["argv"][0] for e in workers} == {"old", "new"}
    assert len(workers) >= 16  # 8 pairs at least
    for e in workers:
        assert e["interactive"] and e["stdin_is_pipe"], e
        assert f"{repo.resolve()}:{repo.resolve()}" in e["mounts"], e
        assert e["workdir"] == str(repo.resolve())
        assert int(e["memory"][0]) > 0, e  # the supervisor's memory limit, which cannot see into a container
        assert re.fullmatch(rf"perfci-\d+-{'base' if e['argv'][0] == 'old' else 'head'}-\d+", e["name"]), e
    assert containers_gone(runtime) == []
    assert not list((runtime / "containers").glob("*.pid"))


@SERIAL
def test_the_a_a_of_one_image_passes(repo: Path, runtime: Path) -> None:
    out = repo / "out"
    proc = perfci(repo, runtime, ab_args("base", "base", "-k", "loop", "--out", str(out)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = next(r for r in json.loads((out / "comparison.json").read_text())["rows"] if r["metric"] == "latency.median")
    assert row["verdict"] not in ("regression", "improvement"), row
    assert containers_gone(runtime) == []


def test_the_workload_sees_the_mounts_and_a_clean_environment(repo: Path, runtime: Path) -> None:
    """What a worker's environment holds in the stand-in: the mounts, by name, and nothing of the host's PATH."""
    (repo / "perf" / "env_probe.py").write_text(
        "import json, os\nimport perfci\n\n"
        "@perfci.workload(timing={'warmup_s': 0.01, 'min_samples': 3, 'budget_s': 0.02})\n"
        "def seen(ctx):\n"
        "    out = os.path.join(os.getcwd(), 'seen.json')  # the working tree, mounted\n"
        "    keys = {k: os.environ.get(k) for k in ('PERFCI_FAKE_MOUNTS', 'HOME', 'VIRTUAL_ENV', 'PERFCI_CONTAINER')}\n"
        "    open(out, 'w').write(json.dumps(keys))\n"
        "    return lambda: None\n"
    )  # fmt: skip
    proc = perfci(repo, runtime, ab_args("base", "base", "-k", "seen", "--pairs", "2", "--looks", "1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = json.loads((repo / "seen.json").read_text())
    assert str(repo.resolve()) in seen["PERFCI_FAKE_MOUNTS"].split(os.pathsep)
    assert seen["HOME"] is None and seen["VIRTUAL_ENV"] is None
    assert seen["PERFCI_CONTAINER"].startswith("perfci-")


def test_a_missing_image_is_one_clear_error(repo: Path, runtime: Path) -> None:
    proc = perfci(repo, runtime, ab_args("base", "nosuch:1.0", "-k", "loop"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--head-image nosuch:1.0: no such image on this machine" in proc.stderr
    assert "pull nosuch:1.0" in proc.stderr.replace("\n", " ")
    assert "Traceback" not in proc.stderr
    assert worker_runs(runtime) == []


def test_images_come_in_pairs(repo: Path, runtime: Path) -> None:
    args = [sys.executable, "-m", "perfci", "ab", "--base-image", "base", "--container-runtime", str(FAKE)]
    proc = perfci(repo, runtime, [*args, "--path", "perf"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--base-image and --head-image go together" in proc.stderr
    both = perfci(repo, runtime, ab_args("base", "slow", "--base-python", sys.executable))
    assert both.returncode == 2 and "cannot be combined" in both.stderr, both.stderr
    assert log(runtime) == []


def test_a_missing_runtime_is_one_clear_error(repo: Path, runtime: Path) -> None:
    proc = perfci(repo, runtime, ab_args("base", "slow", "-k", "loop", runtime="no-such-runtime-xyz"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--container-runtime no-such-runtime-xyz: no such executable on PATH" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert log(runtime) == []


def test_a_timed_out_worker_leaves_no_container(repo: Path, runtime: Path) -> None:
    args = ab_args("base", "base", "-k", "hang", "--pairs", "2", "--looks", "1", "--timeout", "3")
    proc = perfci(repo, runtime, args)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "timed out" in proc.stdout + proc.stderr
    assert containers_gone(runtime) == []
    killed = {e["name"] for e in log(runtime) if e["command"] == "kill" and e["found"]}
    assert killed and killed <= {e["name"] for e in worker_runs(runtime)}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_an_interrupted_or_killed_ab_leaves_no_container(repo: Path, runtime: Path, sig: signal.Signals) -> None:
    """Ctrl-C: perfci stops its workers (the supervisor's kill path); SIGKILL: perfci can do nothing, the kernel
    kills each launcher (parent-death signal) and its watchdog kills the container."""
    tmp = runtime.parent / "tmp"  # its own temporary folder: another test's A/B beside it sweeps the system's
    tmp.mkdir()
    env = {**os.environ, "PERFCI_FAKE_RUNTIME_DIR": str(runtime), "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        ab_args("base", "base", "-k", "hang", "--pairs", "2", "--looks", "1"),
        cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300  # both images probed (torch imported in each) on a busy machine
        while not [e for e in worker_runs(runtime) if "pid" in e] and time.monotonic() < deadline:
            time.sleep(0.2)
        if not worker_runs(runtime):
            proc.kill()
            pytest.fail(f"no worker started in a container: {proc.communicate()[1]}")
        time.sleep(1.0)  # let the worker reach its hanging call
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert containers_gone(runtime) == []
    assert any(e["command"] == "kill" and e["found"] for e in log(runtime))
    # its temporary folder: removed on Ctrl-C; after SIGKILL left behind (shim, launchers), and removed by the
    # next A/B on this host (`ab_workdir`), which finds its perfci gone
    left = [
        p
        for p in tmp.glob("perfci-*")
        if (p / OWNER_FILE).is_file() and (p / OWNER_FILE).read_text().strip() == lock_reason(proc.pid)
    ]
    assert len(left) == (1 if sig == signal.SIGKILL else 0), left
    if left:
        assert (left[0] / "containers" / "base-python").is_file()
        assert left[0] in remove_dead_workdirs(tmp) and not left[0].exists()


def fake(state: Path, *args: str, **kw: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PERFCI_FAKE_RUNTIME_DIR": str(state)}
    return subprocess.Popen([str(FAKE), *args], env=env, text=True, **kw)


def test_the_stand_in_refuses_a_run_without_stdin_and_kill_really_kills(runtime: Path, tmp_path: Path) -> None:
    """The stand-in itself: what the tests above rely on."""
    here = str(tmp_path)
    refused = fake(runtime, "run", "--rm", "--name", "n0", "-w", here, "-v", f"{here}:{here}", "base", "python3", "-V",
                   stderr=subprocess.PIPE)  # fmt: skip
    assert refused.wait(timeout=60) == 125 and "without -i" in (refused.stderr.read() if refused.stderr else "")
    sleeper = fake(runtime, "run", "--rm", "-i", "--name", "n1", "-w", here, "-v", f"{here}:{here}", "base",
                   "python3", "-c", "import time; time.sleep(600)", stdin=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (runtime / "containers" / "n1.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int((runtime / "containers" / "n1.pid").read_text())
    assert alive(pid)
    assert fake(runtime, "kill", "n1").wait(timeout=60) == 0
    assert sleeper.wait(timeout=60) == 128 + signal.SIGKILL  # the client reports its container's end
    assert not alive(pid)
    assert fake(runtime, "kill", "n1", stderr=subprocess.DEVNULL).wait(timeout=60) == 1  # no such container now
