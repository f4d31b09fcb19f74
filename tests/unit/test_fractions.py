"""Thresholds written as `3%` or `0.03` on the command line, in perfci.toml and in the plugin alike; a bare number
above 1 is refused with one line; every command's help shows its defaults, unmangled, at 80 columns."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.config import load_config
from perfci.errors import ConfigError
from perfci.fractions import parse_fraction
from perfci.metrics.registry import threshold_keys


@pytest.mark.parametrize(("text", "value"), [("3%", 0.03), ("0.03", 0.03), (" 5% ", 0.05), ("1", 1.0), (0.2, 0.2)])
def test_fractions_as_people_write_them(text: str | float, value: float) -> None:
    assert parse_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "28.5", "-1%", "nan", "inf", "abc", "%", True])
def test_a_bare_number_above_1_and_nonsense_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"3% or 0\.03|above 1"):
        parse_fraction(text)


def test_the_command_line_refuses_5_and_takes_5_percent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--threshold", "5"])
    assert res.exit_code == 2 and "write 5% for 5 percent" in res.output
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--threshold", "5%"])
    assert res.exit_code == 2 and "Invalid value for '--threshold'" not in res.output  # past the option: no files


def test_the_configuration_takes_percentages(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "perfci.toml"
    cfg.write_text('[thresholds]\n"kernels.*" = {latency = "3%", memory = 0.01}\n')
    assert load_config(cfg, metric_keys=threshold_keys()).thresholds == {"kernels.*": {"latency": 0.03, "memory": 0.01}}
    bare = tmp_path / "bare.toml"
    bare.write_text('[thresholds]\n"kernels.*" = {latency = 5}\n')
    with pytest.raises(ConfigError, match="above 1"):
        load_config(bare, metric_keys=threshold_keys())


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("run", ["[default: 5]", "[default: 1]", "[default: 120]", "[default: 0.4]", "[tool.perfci]"]),
        ("ab", ["[default: 5 when every", "[default: 900]", "[default: 1]", "3% or 0.03"]),
        ("ci", ["[default:", "origin/$GITHUB_BASE_REF", "[default: 900]", "[default: 5]", "3% or 0.03"]),
        ("compare", ["3% or 0.03", "[default: regression]"]),
    ],
)
def test_help_shows_defaults_at_80_columns(command: str, shown: list[str]) -> None:
    res = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert res.exit_code == 0
    text = " ".join(res.output.split())  # wrapped lines joined: a default may be split over two
    for piece in shown:
        assert piece in text, (command, piece)
    assert "…" not in res.output and max(len(line) for line in res.output.splitlines()) <= 80
