"""Configuration values that were ignored or checked only later: a `tool.perfci` that is not a table, a setting
given under both of its names, unknown devices and GPU modes. Each is refused when the file is loaded, naming the
file, the line and the key, and `perfci list` exits 2 on it as `perfci run` does."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app
from perfci.config import Config, find_config
from perfci.config import load_config as load_with_keys
from perfci.errors import ConfigError
from perfci.metrics.registry import threshold_keys
from perfci.options import GPU_MODE
from perfci.profilers.cuda_timing import MODES

runner = CliRunner()


def load_config(path: Path | None = None, start: Path | None = None) -> Config:
    return load_with_keys(path, start, metric_keys=threshold_keys())


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[project]\nname = "x"\n\n[tool]\nperfci = 3\n', "pyproject.toml:5: tool.perfci must be a table"),
        ('tool.perfci = "fast"\n', "pyproject.toml:1: tool.perfci must be a table ([tool.perfci]), got 'fast'."),
        ("[tool]\nblack = {}\nperfci = [1]\n", "pyproject.toml:3: tool.perfci must be a table"),
    ],
)
def test_tool_perfci_that_is_not_a_table_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path, "pyproject.toml", text)
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"  # found, not passed over for lack of a header
    with pytest.raises(ConfigError) as err:
        load_config(start=tmp_path)
    assert err.value.message.startswith(f"{tmp_path}/{expected}"), err.value.message


@pytest.mark.parametrize(
    "text",
    [
        "[tool]\nperfci = { rounds = 3 }\n",
        "[tool]\nperfci.rounds = 3\n",
        "tool.perfci.rounds = 3\n",
    ],
)
def test_tool_perfci_written_without_its_header_is_read(tmp_path: Path, text: str) -> None:
    write(tmp_path, "pyproject.toml", text)
    assert load_config(start=tmp_path).rounds == 3
    write(tmp_path, "pyproject.toml", text.replace("3", "1"))
    with pytest.raises(ConfigError, match=r"pyproject\.toml:\d: key tool\.perfci\.rounds: must be an integer >= 2"):
        load_config(start=tmp_path)


def test_perfci_named_elsewhere_in_pyproject_is_not_a_configuration(tmp_path: Path) -> None:
    # perfci's own pyproject names a script and a pytest plugin `perfci`: neither is a tool.perfci table
    text = '[project]\nname = "x"\n[project.scripts]\nperfci = "perfci.cli:entrypoint"\n[tool.ruff]\nline-length = 1\n'
    write(tmp_path, "pyproject.toml", text)
    assert find_config(tmp_path) is None
    write(tmp_path, "pyproject.toml", text + "[broken\n")  # a broken file with no tool.perfci stays not ours
    assert find_config(tmp_path) is None


@pytest.mark.parametrize("order", [("round_time_s = 0.1", "budget_s = 0.3"), ("budget_s = 0.3", "round_time_s = 0.1")])
def test_round_time_and_its_older_name_together_are_one_error(tmp_path: Path, order: tuple[str, str]) -> None:
    path = write(tmp_path, "perfci.toml", f"rounds = 3\n{order[0]}\n{order[1]}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    line = 3 if order[1].startswith("budget_s") else 2  # the line of the older name, the one to remove
    assert err.value.message == (
        f"{path}:{line}: keys round_time_s and budget_s: both set round_time_s (budget_s is its older name)."
    )
    assert err.value.hint == "keep round_time_s alone"
    pyproject = write(tmp_path, "pyproject.toml", f"[tool.perfci]\n{order[0]}\n{order[1]}\n")
    with pytest.raises(ConfigError, match=r"keys tool\.perfci\.round_time_s and tool\.perfci\.budget_s: both set"):
        load_config(pyproject)


def test_either_name_of_round_time_alone_is_still_read(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "perfci.toml", "round_time_s = 0.1\n")).round_time_s == 0.1
    cfg = load_config(write(tmp_path, "perfci.toml", "budget_s = 0.3\n"))
    assert cfg.round_time_s == 0.3 and cfg.old_keys == ("budget_s",)


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "cpu:", "gpu", "CUDA", "cuda:1:2", "mps"])
def test_unknown_devices_are_refused(tmp_path: Path, device: str) -> None:
    path = write(tmp_path, "perfci.toml", f'rounds = 3\ndevices = ["cpu", "{device}"]\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.message == (
        f"{path}:2: key devices: {device!r} is not a device name perfci runs on: 'cpu', 'cuda' or 'cuda:N'."
    )


def test_known_devices_are_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "perfci.toml", 'devices = ["cpu", "cuda", "cuda:0", "cuda:12"]\n')
    assert load_config(path).devices == ("cpu", "cuda", "cuda:0", "cuda:12")


def test_the_options_table_knows_the_profilers_gpu_modes() -> None:
    assert GPU_MODE.choices == MODES and GPU_MODE.default in MODES


def test_unknown_gpu_mode_is_refused_at_load_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "perfci.toml", 'rounds = 3\n\ngpu_mode = "warm"\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.message == (
        f"{path}:3: key gpu_mode: must be one of hot, cold, graph, sustained, sustained-cold, got 'warm'."
    )
    with pytest.raises(ConfigError, match="key gpu_mode: must be one of"):
        load_config(write(tmp_path, "perfci.toml", "gpu_mode = 1\n"))


@pytest.mark.parametrize("mode", MODES)
def test_every_gpu_mode_is_accepted(tmp_path: Path, mode: str) -> None:
    assert load_config(write(tmp_path, "perfci.toml", f'gpu_mode = "{mode}"\n')).gpu_mode == mode


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("pyproject.toml", "[tool]\nperfci = 3\n", "pyproject.toml:2: tool.perfci must be a table"),
        ("perfci.toml", "round_time_s = 0.1\nbudget_s = 0.3\n", "perfci.toml:2: keys round_time_s and budget_s"),
        ("perfci.toml", 'devices = ["tpu"]\n', "perfci.toml:1: key devices: 'tpu' is not a device name"),
        ("perfci.toml", 'gpu_mode = "warm"\n', "perfci.toml:1: key gpu_mode: must be one of"),
    ],
)
def test_list_refuses_them_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, needle: str
) -> None:
    write(tmp_path, name, text)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and result.stdout == ""  # no case listed
