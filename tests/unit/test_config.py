"""Configuration: finding, parsing and validating perfci.toml / [tool.perfci]; every error names file, line, key."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfci.config import Config, configured_threshold, find_config
from perfci.config import load_config as load_with_keys
from perfci.errors import ConfigError
from perfci.metrics.registry import threshold_keys


def load_config(path: Path | None = None, start: Path | None = None) -> Config:
    return load_with_keys(path, start, metric_keys=threshold_keys())


FULL = """\
paths = ["perf"]
suites = ["kernels", "mine"]
devices = ["cpu", "cuda:1"]
rounds = 7
case_timeout_s = 60
budget_s = 0.25
runner = "ci-cpu"
build_command = "pip install -e ."
threads = 2
cpus = "0,2-3"

[thresholds]
"*" = { latency = 0.05 }
"kernels.*" = { latency = 0.03, "latency.p90" = 0.1, memory = 0.01 }
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "perf").mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_full_perfci_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "perfci.toml", FULL)
    cfg = load_config(path)
    assert cfg.source == path
    assert cfg.paths == (tmp_path / "perf",)
    assert cfg.suites == ("kernels", "mine")
    assert cfg.devices == ("cpu", "cuda:1")
    # budget_s: round_time_s's older key, still read
    assert (cfg.rounds, cfg.case_timeout_s, cfg.round_time_s, cfg.threads) == (7, 60.0, 0.25, 2)
    assert (cfg.runner, cfg.build_command) == ("ci-cpu", "pip install -e .")
    assert cfg.cpus == (0, 2, 3)
    assert cfg.thresholds["kernels.*"] == {"latency": 0.03, "latency.p90": 0.1, "memory": 0.01}


def test_threshold_lookup_later_pattern_and_exact_metric_win(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "perfci.toml", FULL))
    assert configured_threshold(cfg.thresholds, "kernels.mm[n=1]@cpu", "latency.median") == 0.03
    assert configured_threshold(cfg.thresholds, "kernels.mm[n=1]@cpu", "latency.p90") == 0.1
    assert configured_threshold(cfg.thresholds, "models.mlp@cpu", "latency.median") == 0.05
    assert configured_threshold(cfg.thresholds, "models.mlp@cpu", "memory.peak_rss") is None
    assert configured_threshold(Config().thresholds, "x", "latency") is None


def test_pyproject_tool_table_and_search_upwards(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n\n[tool.perfci]\npaths = ["perf"]\nrounds = 3\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert find_config(sub) == tmp_path / "pyproject.toml"
    cfg = load_config(start=sub)
    assert cfg.rounds == 3 and cfg.paths == (tmp_path / "perf",)


def test_perfci_toml_beats_pyproject_and_pyproject_without_table_stops_search(tmp_path: Path) -> None:
    write(tmp_path, "perfci.toml", "rounds = 2\n")
    inner = tmp_path / "proj"
    write(inner, "pyproject.toml", '[project]\nname = "x"\n')
    assert find_config(inner) is None
    assert load_config(start=inner) == Config()
    write(inner, "perfci.toml", "rounds = 4\n")
    assert load_config(start=inner).rounds == 4
    # both files configure perfci in one folder: one was ignored without a word (an invalid value in it too)
    write(inner, "pyproject.toml", '[project]\nname = "x"\n[tool.perfci]\nrounds = "x"\n')
    with pytest.raises(ConfigError) as both:
        load_config(start=inner)
    assert both.value.message == (
        f"{inner / 'perfci.toml'} and [tool.perfci] in {inner / 'pyproject.toml'} both configure perfci; perfci "
        "reads one configuration."
    )


@pytest.mark.parametrize("header", ["[tool.perfci\n", "[tool.perfci.thresholds\n", '[tool."perfci"\nrounds = 3\n'])
def test_pyproject_with_a_broken_perfci_header_is_refused_not_passed_over(tmp_path: Path, header: str) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n\n' + header)
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    with pytest.raises(ConfigError, match=r"pyproject\.toml: invalid TOML"):
        load_config(start=tmp_path)


def test_pyproject_of_another_tool_named_like_perfci_is_not_ours(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n[tool.perfcix]\na = 1\n')
    assert find_config(tmp_path) is None


def test_missing_explicit_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="configuration file not found"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('paths = ["perf"]\npathz = ["x"]\n', "perfci.toml:2: key pathz: unknown key"),
        ("rounds = 3\n[tresholds]\n", "perfci.toml:2: key tresholds: unknown key"),
        ('rounds = "5"\n', "perfci.toml:1: key rounds: must be an integer >= 2, got '5'"),
        ("rounds = true\n", "perfci.toml:1: key rounds: must be an integer"),
        ("rounds = 0\n", "perfci.toml:1: key rounds: must be an integer >= 2"),
        ("rounds = 1\n", "perfci.toml:1: key rounds: must be an integer >= 2, got 1."),
        ("budget_s = -1\n", "perfci.toml:1: key budget_s: must be a number > 0 and at most 3600 (seconds)"),
        ("round_time_s = 3601\n", "perfci.toml:1: key round_time_s: must be a number > 0 and at most 3600"),
        ("threads = 5000\n", "perfci.toml:1: key threads: must be an integer >= 0 and at most 4096"),
        ('fail_on = "faster"\n', "perfci.toml:1: key fail_on: must be one of regression, slower, got 'faster'"),
        ('threshold = "2000%"\n', "perfci.toml:1: key threshold: must be a fraction from 0 to 10 (3% or 0.03)"),
        ('paths = "perf"\n', "perfci.toml:1: key paths: must be a list of strings"),
        ('\n\npaths = ["perf", "nowhere"]\n', "perfci.toml:3: key paths: paths[1] 'nowhere' does not exist"),
        ('devices = ["GPU 0"]\n', "perfci.toml:1: key devices: 'GPU 0' is not a device name"),
        ('runner = ""\n', "perfci.toml:1: key runner: must be a non-empty string"),
        ('[thresholds]\n"re:(" = { latency = 0.1 }\n', "perfci.toml:2: key thresholds.'re:(': bad case pattern"),
        (
            '[thresholds."kernels.*"]\nlatncy = 0.1\n',
            "perfci.toml:2: key thresholds.'kernels.*'.latncy: unknown metric",
        ),
        (
            '[thresholds]\n"*" = { latency = "five" }\n',
            "perfci.toml:2: key thresholds.'*'.latency: 'five' is not a fraction",
        ),
        (
            '[thresholds]\n"*" = { latency = "2000%" }\n',
            "perfci.toml:2: key thresholds.'*'.latency: must be a fraction",
        ),
        ('[thresholds]\n"*" = { latency = [1] }\n', "perfci.toml:2: key thresholds.'*'.latency: must be a fraction"),
        ('[thresholds]\n"*" = 0.05\n', "perfci.toml:2: key thresholds.'*': must be a table"),
        ("thresholds = 0.05\n", "perfci.toml:1: key thresholds: must be a table"),
        ('paths = ["perf"\nrounds = 3\n', "perfci.toml: invalid TOML: Unclosed array (at line 2, column 1)"),
        ('cpus = "2-a"\n', "perfci.toml:1: key cpus: '2-a' in '2-a' is not a CPU number or a range like 2-3."),
        ("cpus = [1, -2]\n", 'perfci.toml:1: key cpus: must be a CPU list like "2-3" or a list of CPU numbers'),
        ("cpus = 3\n", "perfci.toml:1: key cpus: must be a CPU list"),
        ("rounds = = 3\n", "perfci.toml: invalid TOML: Invalid value (at line 1, column 10)"),
    ],
)
def test_errors_name_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, "perfci.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value).replace(str(tmp_path) + "/", "")
    assert message.startswith(expected), message


def test_cpus_as_a_list_of_numbers(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "perfci.toml", "cpus = [3, 1, 3]\n")).cpus == (1, 3)
    assert load_config(write(tmp_path, "perfci.toml", "rounds = 2\n")).cpus is None


def test_unknown_key_hint_suggests_the_close_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "perfci.toml", "round = 3\n"))
    assert info.value.hint == "did you mean 'rounds'?"


def test_pyproject_errors_use_the_tool_prefix_and_pyproject_lines(tmp_path: Path) -> None:
    text = '[project]\nname = "x"\nrounds = 1\n\n[tool.perfci]\nsuites = ["kernels"]\nrounds = "many"\n'
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "pyproject.toml", text))
    assert str(info.value).endswith("pyproject.toml:7: key tool.perfci.rounds: must be an integer >= 2, got 'many'.")


def test_speed_reference_must_be_a_boolean(tmp_path: Path) -> None:
    from perfci.api.run import RunRequest, run_settings
    from perfci.api.settings import Settings

    def timing_settings(cfg: Config, budget: float | None, speed_reference: bool | None = None) -> object:
        return run_settings(Settings({}, cfg), RunRequest(budget_s=budget, speed_reference=speed_reference)).timing

    good = tmp_path / "perfci.toml"
    good.write_text("speed_reference = true\n")
    cfg = load_config(good)
    assert cfg.speed_reference is True
    assert timing_settings(cfg, None).speed_reference is True
    assert timing_settings(cfg, None, speed_reference=False).speed_reference is False  # the CLI flag wins
    assert timing_settings(Config(), 0.2).speed_reference is False  # off by default
    bad = tmp_path / "bad.toml"
    bad.write_text('speed_reference = "yes"\n')
    with pytest.raises(ConfigError, match="speed_reference: must be true or false"):
        load_config(bad)


def test_an_older_key_name_still_reads_and_is_named(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "perfci.toml", "budget_s = 0.25\nrounds = 3\n"))
    assert cfg.round_time_s == 0.25 and cfg.old_keys == ("budget_s",)
    assert cfg.old_key_notes() == [
        f"warning: {tmp_path / 'perfci.toml'}: key budget_s is deprecated and will be removed in the next release; "
        "write round_time_s."
    ]
    assert load_config(write(tmp_path, "new.toml", "round_time_s = 0.25\n")).old_keys == ()
