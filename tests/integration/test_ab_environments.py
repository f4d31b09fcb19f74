"""`perfci ab --base-python/--head-python` for real: virtual environments made in the test (with this one's
packages through a .pth file, so they are quick to make), tiny pure-Python workloads, worker processes started
with each environment's interpreter; an environment that lacks perfci's dependencies is one clear error."""

from __future__ import annotations

import json
import site
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

TINY = Path(__file__).resolve().parents[1] / "data" / "workloads" / "tiny.py"

WORKLOAD = """
import perfci
import slowlib

FAST = {"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}


@perfci.workload(params={"n": [2000]}, timing=FAST)
def loop(ctx, n):
    return lambda: slowlib.work(n)
"""

SLOWLIB = """
def work(n):
    s = 0
    for i in range(int(n * {factor})):
        s += i
    return s
"""


def venv(path: Path, with_packages: bool = True) -> Path:
    """A virtual environment; with exactly this interpreter's packages (a .pth naming its site-packages: quicker
    than installing, and unlike --system-site-packages it does not add the base interpreter's own packages when
    the tests run in a venv) or bare."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    if with_packages:
        purelib = Path(
            subprocess.run(
                [str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True, text=True, check=True,
            ).stdout.strip()
        )  # fmt: skip
        (purelib / "perfci-test-parent.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return path


def install_slowlib(env: Path, version: str, factor: float) -> None:
    """A fake installed distribution `slowlib` (a module and its dist-info), no pip needed."""
    out = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    purelib = Path(out.stdout.strip())
    (purelib / "slowlib.py").write_text(SLOWLIB.format(factor=factor))
    info = purelib / f"slowlib-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: slowlib\nVersion: {version}\n")


def perfci(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "perf").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "perf" / "wl.py").write_text(WORKLOAD)
    return repo


def test_identical_environments_pass(repo: Path, tmp_path: Path) -> None:
    other = venv(tmp_path / "venv-a")
    out = repo / "out"
    args = ("ab", "--base-python", sys.executable, "--head-python", str(other), "--path", str(TINY))
    proc = perfci(repo, *args, "--pairs", "3", "--looks", "1", "--threshold", "0.5", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((out / "comparison.json").read_text())
    envs = doc["settings"]["ab"]["environments"]
    assert envs["head"]["python"] == str((other / "bin" / "python").absolute())
    assert envs["changes"] == []
    assert doc["warnings"][0].startswith("environments: no difference")
    summary = (out / "summary.md").read_text()
    assert "environments: no difference" in summary
    assert "environments: no difference" in (out / "report.html").read_text()


def test_library_upgrade_is_flagged_and_named(repo: Path, tmp_path: Path) -> None:
    a, b = venv(tmp_path / "venv-old"), venv(tmp_path / "venv-new")
    install_slowlib(a, "1.0", 1.0)
    install_slowlib(b, "1.1", 1.5)  # 1.1 does half again the work
    out = repo / "out"
    args = ("ab", "--base-python", str(a), "--head-python", str(b), "--path", "perf", "--out", str(out))
    proc = perfci(repo, *args, "--pairs", "4", "--looks", "2", "--extra", "4", "--threshold", "0.1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads((out / "comparison.json").read_text())
    assert ["slowlib", "1.0", "1.1"] in doc["settings"]["ab"]["environments"]["changes"]
    assert "slowlib 1.0 -> 1.1" in doc["warnings"][0]
    assert "slowlib 1.0 -> 1.1" in proc.stderr and "wl.loop[n=2000]@cpu" in proc.stdout
    assert "slowlib 1.0 -> 1.1" in (out / "summary.md").read_text()
    rows = [r for r in doc["rows"] if r["metric"] == "latency.median"]
    assert rows[0]["verdict"] == "regression" and 1.2 < rows[0]["ratio"] < 2.0


def test_environment_without_perfci_dependencies_is_one_clear_error(repo: Path, tmp_path: Path) -> None:
    bare = venv(tmp_path / "bare", with_packages=False)
    proc = perfci(repo, "ab", "--head-python", str(bare), "--path", str(TINY), "--out", str(repo / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--head-python" in proc.stderr and "lacks numpy, psutil" in proc.stderr
    assert f"{bare.absolute() / 'bin' / 'python'} -m pip install numpy psutil" in proc.stderr.replace("\n", " ")
    assert "Traceback" not in proc.stderr
