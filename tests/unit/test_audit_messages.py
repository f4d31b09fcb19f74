"""Messages an audit found wrong: accuracy thresholds read as fractions, a check's error rounded to its own bound,
a three-way tie read as one list, the int8 calibration note lost with a failed check, and `perfci ab`'s container
runtime and environments lines."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfci.ab.containers import Runtime, check_image, find_runtime
from perfci.api.settings import load_project_config
from perfci.errors import ConfigError, UsageError
from perfci.format.model import CaseError, CaseStatus
from perfci.metrics.registry import absolute_threshold_keys
from perfci.metrics.rounds import shown_apart
from perfci.reports.decision_lines import markdown_lines
from perfci.reports.decisions import decision_tables
from perfci.reports.markdown import code
from perfci.workloads import surprises
from perfci.workloads.checks import Tolerance, assert_close
from tests.fakes import runtime_saying
from tests.unit.test_decisions import model_run


def thresholds(tmp_path: Path, body: str) -> dict[str, dict[str, float]]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "perfci.toml").write_text(f'[thresholds]\n"*" = {{ {body} }}\n')
    return load_project_config(start=tmp_path).thresholds


def test_the_accuracy_family_and_its_metrics_have_absolute_thresholds() -> None:
    keys = absolute_threshold_keys()
    assert {"accuracy", "accuracy.max_abs", "accuracy.rel_l2"} <= keys
    assert not {"latency", "latency.median", "memory"} & keys


@pytest.mark.parametrize(("value", "expected"), [("2", 2.0), ("0.002", 0.002), ("1000", 1000.0), ('"0.5"', 0.5)])
def test_an_accuracy_threshold_is_any_number_from_zero_up(tmp_path: Path, value: str, expected: float) -> None:
    assert thresholds(tmp_path, f'"accuracy.max_abs" = {value}') == {"*": {"accuracy.max_abs": expected}}


@pytest.mark.parametrize("value", ['"1%"', '"big"', "-1", "nan", "true"])
def test_an_accuracy_threshold_that_is_no_number_in_its_unit_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        thresholds(tmp_path, f"accuracy = {value}")
    said = str(err.value)
    assert "key thresholds.'*'.accuracy:" in said and "absolute, in the metric's own unit" in said
    assert "write 3%" not in said and "0.03" not in said and "\n" not in said
    if value == '"1%"':
        assert "'1%' is a percentage, but" in said
    else:
        assert "percent" not in said


def test_relative_thresholds_read_as_before(tmp_path: Path) -> None:
    assert thresholds(tmp_path, 'latency = "1%"') == {"*": {"latency": 0.01}}
    with pytest.raises(ConfigError, match=r"2 is above 1: write 2% for 2 percent, or 0.02"):
        thresholds(tmp_path, "latency = 2")
    with pytest.raises(ConfigError, match=r"'big' is not a fraction; write 3% or 0.03"):
        thresholds(tmp_path, 'memory = "big"')


def test_a_check_error_past_its_bound_is_shown_past_it() -> None:
    assert shown_apart(0.10037, 0.1, 3) == "0.1004"
    assert shown_apart(0.3, 0.05, 3) == "0.3"
    assert shown_apart(0.1000000001, 0.1) == "0.1000000001"
    e = np.ones(100)
    a = e.copy()
    a[0] += 0.10037 * np.linalg.norm(e)
    with pytest.raises(AssertionError) as err:
        assert_close(a, e, Tolerance(max_rel_l2=0.1), what="int8-static output vs fp32")
    assert str(err.value) == ("int8-static output vs fp32: relative L2 error 0.1004 exceeds relative L2 error <= 0.1")


def test_the_accuracy_cell_of_a_row_past_its_tolerance_shows_the_excess() -> None:
    grid = [("eager", 8, 212e-6, 2_000_000, 0.0), ("bf16", 8, 150e-6, 6_900_000, 0.05003)]
    (table,) = decision_tables(model_run(grid))
    text = "\n".join(markdown_lines([table], code))
    assert "0.05003 (≤ 0.05): over tolerance" in text, text


def test_a_tie_of_three_lists_each_configuration_apart() -> None:
    grid = [("eager", 8, 150.0e-6, 2_000_000, 0.0), ("bf16", 8, 150.2e-6, 2_000_000, 0.004),
            ("fp16", 8, 150.4e-6, 2_000_000, 0.004)]  # fmt: skip
    (table,) = decision_tables(model_run(grid))
    text = "\n".join(markdown_lines([table], code))
    assert "a tie between eager (batch 8, " in text, text
    assert "), fp16 (batch 8) and bf16 (batch 8): their intervals overlap" in text, text


class _Ctx:
    def __init__(self) -> None:
        self.notes: dict[str, Any] = {}
        self.check: Any = None


def test_a_failed_int8_static_row_keeps_its_calibration_note() -> None:
    ctx = _Ctx()
    ctx.check = lambda: assert_close(np.ones(4) * 2, np.ones(4), Tolerance(max_rel_l2=0.1), "int8-static output")
    note = surprises.random_calibration_note(4)
    surprises.explain(ctx.notes, note)
    surprises.explained_check(ctx)
    with pytest.raises(AssertionError) as err:
        ctx.check()
    message = f"correctness check failed: {err.value}"
    assert message.endswith(f"(note: {note})")
    run = model_run([("eager", 8, 212e-6, 2_000_000, 0.0), ("bf16", 8, 150e-6, 2_000_000, 0.0)])
    failed = replace(run.cases[1], status=CaseStatus.ERROR, rounds=(), metrics=(),
                     errors=(CaseError("check", message),))  # fmt: skip
    (table,) = decision_tables(replace(run, cases=(run.cases[0], failed)))
    assert table.notes == (f"bf16: {note}",)  # the failed row's configuration, with the note it failed with


def test_a_folder_is_no_container_runtime(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--container-runtime \.\.: is a directory, not an executable file"):
        find_runtime("..")
    with pytest.raises(UsageError, match="is a directory"):
        find_runtime(str(tmp_path))


def test_only_a_missing_image_gets_the_pull_hint(tmp_path: Path) -> None:
    broken = runtime_saying(tmp_path / "runtime", "fake-runtime: PERFCI_FAKE_RUNTIME_DIR is not set", 125)
    with pytest.raises(UsageError) as err:
        check_image(Runtime(str(broken), "docker"), "app:1", "--base-image")
    assert "PERFCI_FAKE_RUNTIME_DIR is not set" in str(err.value)
    assert "no such image" not in str(err.value) and not err.value.hint
    missing = runtime_saying(tmp_path / "docker", "Error: No such image: app:1", 1)
    with pytest.raises(UsageError, match="no such image on this machine") as gone:
        check_image(Runtime(str(missing), "docker"), "app:1", "--base-image")
    assert "docker pull app:1" in (gone.value.hint or "")
    assert os.access(missing, os.X_OK)
