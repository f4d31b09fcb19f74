"""The expected-changes file is checked in full when it is read: a metric name that matches no row is refused with
the nearest name and the file's line, `max_change` takes "150%" as well as 1.5, and `load_expected` refuses a
malformed file before anything is compared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.compare.decide import compare_runs
from perfci.compare.expected import MAX_CHANGE, apply_expected, load_expected, metric_names, parse_expected
from perfci.compare.policy import DecisionSettings
from perfci.errors import ConfigError
from perfci.format.model import Verdict
from perfci.format.schema import dump_results
from perfci.metrics.registry import MetricRegistry, default_registry
from tests.conftest import make_case, make_run

STEADY = DecisionSettings(job_noise=0.01)


def _entry(lines: str) -> str:
    return f'version = 1\n\n[[change]]\ncase = "t.slow*"\n{lines}\nreason = "exact softmax (#12)"\n'


def _max_change(value: str) -> float:
    (change,) = parse_expected(_entry(f"max_change = {value}"), "e.toml")
    return change.max_change


# --- metric names -----------------------------------------------------------------------------------------------


def test_a_misspelt_metric_is_refused_at_its_line_with_the_nearest_name() -> None:
    text = _entry('metric = "latncy"\nmax_change = 0.1')
    with pytest.raises(ConfigError) as info:
        parse_expected(text, "perfci-expected.toml")
    assert info.value.message.startswith("perfci-expected.toml:5: change #1: metric 'latncy' is unknown")
    assert info.value.hint is not None and info.value.hint.startswith("did you mean 'latency'?")
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("typo", "nearest"), [("memry", "memory"), ("latency.p999", "latency.p99"), ("Latency", "latency")]
)
def test_the_hint_names_the_closest_known_name(typo: str, nearest: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"did you mean '{nearest}'")):
        parse_expected(_entry(f'metric = "{typo}"\nmax_change = 0.1'), "e.toml")


def test_a_name_far_from_every_metric_lists_them_all() -> None:
    with pytest.raises(ConfigError) as info:
        parse_expected(_entry('metric = "zzzz"\nmax_change = 0.1'), "e.toml")
    assert info.value.hint is not None and "did you mean" not in info.value.hint
    assert "latency.median" in info.value.hint and "memory" in info.value.hint


@pytest.mark.parametrize("name", ["noise.round_cv", "device.busy", "flops.pct_peak"])
def test_a_metric_that_is_never_compared_is_refused(name: str) -> None:
    """These have no comparison row, so an entry naming them could never cover anything."""
    with pytest.raises(ConfigError, match=re.escape(f"metric '{name}' is never compared")):
        parse_expected(_entry(f'metric = "{name}"\nmax_change = 0.1'), "e.toml")


def test_every_name_the_matcher_can_match_is_accepted() -> None:
    """Each compared metric by its name and by its family (first dotted part), as `covers` matches rows."""
    registry = default_registry()
    names = metric_names()
    for name, definition in registry.items():
        if definition.comparable:
            assert {name, name.split(".", 1)[0]} <= names
    assert {"latency", "latency.p99", "memory", "memory.peak_rss", "device.time", "accuracy", "throughput"} <= names
    assert "noise" not in names  # its one metric is never compared
    for name in sorted(names):
        (change,) = parse_expected(_entry(f'metric = "{name}"\nmax_change = 0.1'), "e.toml")
        assert change.metric == name


def test_the_default_metric_is_latency() -> None:
    (change,) = parse_expected(_entry("max_change = 0.1"), "e.toml")
    assert change.metric == "latency"


def test_a_caller_s_own_registry_decides_which_names_are_known() -> None:
    no_accuracy = MetricRegistry(tuple(d for d in default_registry().definitions if d.family != "accuracy"))
    text = _entry('metric = "accuracy.rel_l2"\nmax_change = 0.1')
    assert parse_expected(text, "e.toml")[0].metric == "accuracy.rel_l2"
    with pytest.raises(ConfigError, match=r"'accuracy\.rel_l2' is unknown"):
        parse_expected(text, "e.toml", registry=no_accuracy)


def test_the_line_is_that_of_the_entry_s_own_key() -> None:
    text = (
        _entry('metric = "latency"\nmax_change = 0.1') + '\n[[change]]\ncase = "x"\nreason = "r"\nmetric = "memroy"\n'
    )
    with pytest.raises(ConfigError, match=r"^e\.toml:12: change #2: metric 'memroy'"):
        parse_expected(text, "e.toml")


def test_an_inline_array_of_changes_is_named_by_entry_alone() -> None:
    text = 'version = 1\nchange = [{case = "x", metric = "memry", max_change = 1, reason = "r"}]\n'
    with pytest.raises(ConfigError, match=r"^e\.toml: change #1: metric 'memry' is unknown"):
        parse_expected(text, "e.toml")


# --- max_change -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ('"150%"', 1.5),
        ('"10%"', 0.10),
        ('" 2.5 % "', 0.025),
        ('"100000%"', MAX_CHANGE),
        ("1.5", 1.5),  # bare numbers as before: a fraction, above 1 allowed
        ("0.1", 0.1),
        ("2", 2.0),
        ("1000", MAX_CHANGE),
    ],
)
def test_max_change_as_a_number_or_a_percentage(written: str, value: float) -> None:
    assert _max_change(written) == pytest.approx(value)


def test_150_percent_and_1_5_are_the_same_entry() -> None:
    assert _max_change('"150%"') == _max_change("1.5")


@pytest.mark.parametrize(
    "written",
    [
        '"abc"',
        '"0.1"',  # a quoted number without % is neither form
        '"%"',
        '"0%"',
        '"-5%"',
        '"nan%"',
        '"inf%"',
        '"1e400%"',
        '"100001%"',
        '"10%%"',
        '""',
        "0",
        "-0.1",
        "1000.5",
        "nan",
        "inf",
        "true",
        "[0.1]",
    ],
)
def test_bad_max_change_is_refused_with_both_forms_shown(written: str) -> None:
    with pytest.raises(
        ConfigError, match=r"^e\.toml:5: change #1: 'max_change' must be above 0 and at most 1000"
    ) as info:
        parse_expected(_entry(f"max_change = {written}"), "e.toml")
    assert '0.10 or "10%"' in info.value.message


def test_a_percentage_max_change_covers_a_regression_as_the_number_does() -> None:
    base = make_run([make_case("slow", 1e-3)])
    cand = make_run([make_case("slow", 1e-3, seed=1, scale=1.3)])
    comparison = compare_runs(base, cand, STEADY)
    (row,) = (r for r in comparison.rows if r.metric == "latency.median")
    assert row.verdict is Verdict.REGRESSION
    for written in ('"50%"', "0.5"):
        covered = apply_expected(comparison, parse_expected(_entry(f"max_change = {written}"), "e.toml"))
        assert not covered.failing and covered.rows[0].expected == "exact softmax (#12)"
    beyond = apply_expected(comparison, parse_expected(_entry('max_change = "5%"'), "e.toml"))
    assert [r.case_id for r in beyond.failing] == [row.case_id]
    assert "beyond the declared expected change of 5%" in beyond.failing[0].note


# --- load_expected: every check before any comparison ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("version = 1\n[[change]\n", "not valid TOML"),
        ("version = 2\n", "'version = 1' is required"),
        ('version = 1\n[[change]]\ncase = "x"\nreason = "r"\nmax_change = 0.1\nmetrc = "latency"\n', "unknown key"),
        (_entry('metric = "latncy"\nmax_change = 0.1'), "did you mean 'latency'"),
        (_entry('max_change = "ten%"'), "'max_change' must be"),
        ('version = 1\n[[change]]\ncase = "re:("\nreason = "r"\nmax_change = 0.1\n', "bad case pattern"),
    ],
)
def test_load_expected_refuses_a_malformed_file_without_a_comparison(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "perfci-expected.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words) as info:
        load_expected(path)
    assert str(info.value).startswith(str(path))


def test_load_expected_reads_a_good_file_and_a_missing_one(tmp_path: Path) -> None:
    path = tmp_path / "perfci-expected.toml"
    path.write_text(_entry('metric = "latency.p99"\nmax_change = "150%"'))
    (change,) = load_expected(path, required=True)
    assert (change.case, change.metric, change.max_change) == ("t.slow*", "latency.p99", 1.5)
    assert load_expected(tmp_path / "absent.toml") == ()
    with pytest.raises(ConfigError, match="expected-changes file not found"):
        load_expected(tmp_path / "absent.toml", required=True)


def test_the_cli_refuses_a_misspelt_metric_with_exit_2(tmp_path: Path) -> None:
    run = make_run([make_case("a", 1e-3)])
    dump_results(run, tmp_path / "base.json")
    expected = tmp_path / "e.toml"
    expected.write_text('version = 1\n[[change]]\ncase = "t.a*"\nmetric = "latncy"\nmax_change = "10%"\nreason = "r"\n')
    result = CliRunner().invoke(
        app, ["compare", str(tmp_path / "base.json"), str(tmp_path / "base.json"), "--expected", str(expected)]
    )
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert f"{expected}:4: change #1: metric 'latncy' is unknown" in said and "did you mean 'latency'" in said
