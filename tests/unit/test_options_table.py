"""The options table (perfci/options.py): docs/settings.md is made from it, each option's default is written once,
and the CLI, the API, the configuration and the pytest plugin hold the same bounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.settings import Settings
from perfci.cli import app
from perfci.config import Config, load_config
from perfci.errors import ConfigError, UsageError
from perfci.metrics.registry import threshold_keys
from perfci.options import OPTIONS, ROUND_TIME, ROUNDS, THRESHOLD, by_config_key, with_options_table
from perfci.pytest_plugin.measure import MIN_ROUNDS, InProcessSettings

ROOT = Path(__file__).parents[2]


def test_docs_settings_md_is_the_table_made_afresh() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert with_options_table(page) == page, "run: python -m perfci.options docs/settings.md"


def test_a_page_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="no options table markers"):
        with_options_table("# Settings\n")


def test_names_flags_and_keys_are_unique() -> None:
    for attr in ("name", "flag", "plugin_flag", "config", "env"):
        values = [getattr(o, attr) for o in OPTIONS if getattr(o, attr)]
        assert len(values) == len(set(values)), attr
    assert by_config_key()["budget_s"] is ROUND_TIME  # the older key still reads


def test_the_rounds_default_is_written_once_in_perfci() -> None:
    """`rounds` and its default appear as a literal only in its row: everyone else reads ROUNDS.default."""
    pattern = re.compile(r"\brounds\b[^\n=]*(=|:)\s*5\b|default=5\b|DEFAULT_ROUNDS")
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in (ROOT / "perfci").rglob("*.py")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert len(found) == 1 and found[0].startswith("perfci/options.py:"), f"write ROUNDS.default, not 5: {found}"
    assert ROUNDS.default == 5 and InProcessSettings().rounds == ROUNDS.default and ROUNDS.low == MIN_ROUNDS


def test_bounds_are_checked_alike_on_every_path(tmp_path: Path) -> None:
    cfg_file = tmp_path / "perfci.toml"
    cfg_file.write_text("rounds = 1\n")
    with pytest.raises(ConfigError, match=r"key rounds: must be an integer >= 2, got 1\."):
        load_config(cfg_file, metric_keys=threshold_keys())
    with pytest.raises(UsageError, match=r"--rounds: must be an integer >= 2, not 1\."):
        Settings({}).rounds(1)
    with pytest.raises(UsageError, match="key rounds: must be an integer >= 2"):
        Settings({}, Config(source=cfg_file, rounds=1)).rounds(None)
    res = CliRunner().invoke(app, ["run", "--rounds", "1"])
    assert res.exit_code == 2 and "1 is not in the range x>=2" in res.output


def test_one_fraction_rule_and_wording() -> None:
    assert THRESHOLD.problem("3%") is None and THRESHOLD.problem(0.0) is None
    assert THRESHOLD.problem(float("nan")) == "must be a fraction from 0 to 10 (3% or 0.03), not nan"
    assert "above 1" in (THRESHOLD.problem("5") or "")
    assert THRESHOLD.help_text().startswith("Practical threshold for timed metrics: 3% or 0.03")
    for command in ("run", "compare", "ab", "ci", "merge"):
        text = " ".join(CliRunner().invoke(app, [command, "--help"], terminal_width=200).output.split())
        assert "3% or 0.03" in text and "5% or 0.05" not in text, command


def test_run_budget_is_a_deprecated_name_of_round_time(tmp_path: Path) -> None:
    """Both reach the same field; the old name says it is deprecated on stderr (here: before the run is refused
    for having no cases)."""
    empty = tmp_path / "none.py"
    empty.write_text("")
    res = CliRunner().invoke(app, ["run", str(empty), "--budget", "0.1"])
    assert "`perfci run --budget` is deprecated" in res.output and "--round-time" in res.output
    res = CliRunner().invoke(app, ["run", str(empty), "--round-time", "0.1"])
    assert "deprecated" not in res.output
    helped = " ".join(CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output.split())
    assert "--round-time" in helped and "--budget" not in helped
    ab_help = " ".join(CliRunner().invoke(app, ["ab", "--help"], terminal_width=200).output.split())
    assert "Time budget of the whole A/B, seconds [default: 900]" in ab_help and "--round-time" in ab_help


def test_the_cli_names_an_older_configuration_key(tmp_path: Path) -> None:
    cfg = tmp_path / "perfci.toml"
    cfg.write_text("budget_s = 0.1\n")
    res = CliRunner().invoke(app, ["list", "--config", str(cfg), "--suite", "nope"])
    assert "key budget_s is deprecated" in res.output and "write round_time_s" in res.output
