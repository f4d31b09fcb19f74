"""A set-up that returns no callable, run by `perfci run` in a real worker: the case's error says what the set-up
returned and where it is defined, not "'NoneType' object is not callable (at case_memory.py:192)", and the
file's other cases are still measured. A set-up without `ctx` is refused when the file is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

FAST = '{"warmup_s": 0.005, "min_samples": 5, "budget_s": 0.03, "min_sample_s": 0.0005}'
WORKLOADS = f"""import perfci
FAST = {FAST}


@perfci.workload(timing=FAST)
def forgot_return(ctx):
    data = list(range(100))


@perfci.workload(timing=FAST)
def returned_result(ctx):
    data = list(range(100))
    return sum(data)


@perfci.workload(timing=FAST)
def good(ctx):
    data = list(range(100))
    return lambda: sum(data)
"""


def perfci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfci", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_set_up_that_returns_no_callable_is_its_case_error_naming_the_users_file(tmp_path: Path) -> None:
    (tmp_path / "wl.py").write_text(WORKLOADS)
    proc = perfci("run", "wl.py", "--rounds", "2", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    cases = {c["id"]: c for c in json.loads((tmp_path / "o" / "results.json").read_text())["cases"]}
    assert {i: c["status"] for i, c in cases.items()} == {
        "wl.forgot_return@cpu": "error",
        "wl.returned_result@cpu": "error",
        "wl.good@cpu": "ok",
    }
    forgot, returned = (cases[f"wl.{n}@cpu"]["errors"][0] for n in ("forgot_return", "returned_result"))
    assert forgot["kind"] == returned["kind"] == "raised"
    assert forgot["message"] == (
        "wl.py:5: workload 'forgot_return': its set-up returned None; it must return the callable to time "
        "(e.g. `return lambda: step(x)`)."
    )
    assert returned["message"].startswith(
        "wl.py:10: workload 'returned_result': its set-up returned int 4950, not a callable;"
    )


def test_a_set_up_without_ctx_is_refused_when_the_file_is_listed(tmp_path: Path) -> None:
    (tmp_path / "wl.py").write_text("import perfci\n\n\n@perfci.workload\ndef w():\n    return lambda: None\n")
    proc = perfci("list", "wl.py", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "workload 'w': the set-up w() does not take the context `ctx` as its first argument" in proc.stderr
    assert "`def w(ctx):`" in proc.stderr
