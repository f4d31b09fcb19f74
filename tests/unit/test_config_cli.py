"""`perfci list` / `perfci run` with configuration and filters, through typer's CliRunner (nothing measured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.cli import app

runner = CliRunner()

WORKLOAD = """\
import perfci

@perfci.workload(params={"n": [1, 2]}, devices=["cpu", "cuda"], suite="mine")
def summing(ctx, n):
    return lambda: sum(range(n))
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "bench_sum.py").write_text(WORKLOAD)
    (tmp_path / "perfci.toml").write_text('paths = ["perf"]\ndevices = ["cpu"]\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_list_uses_configured_paths_and_devices(project: Path) -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert lines(result.stdout) == ["bench_sum.summing[n=1]@cpu", "bench_sum.summing[n=2]@cpu"]


def test_command_line_beats_configuration(project: Path) -> None:
    result = runner.invoke(app, ["list", "--device", "cuda", "-k", "n=2"])
    assert lines(result.stdout) == ["bench_sum.summing[n=2]@cuda"]
    result = runner.invoke(app, ["list", "--suite", "mine", "--suite", "default", "--device", "cpu", "-k", "*matmul*"])
    assert lines(result.stdout) == ["default.matmul[n=384,dtype=float32]@cpu"]


@pytest.mark.parametrize("command", ["list", "run"])
def test_a_device_perfci_cannot_run_on_is_refused(project: Path, command: str) -> None:
    result = runner.invoke(app, [command, "--device", "tpu"])
    assert result.exit_code == 2
    assert "--device tpu: not a device perfci runs cases on; use cpu, cuda or cuda:N." in result.output
    assert not (project / ".perfci" / "runs").exists()  # refused before anything ran


def test_a_baseline_with_none_of_the_cases_is_refused_before_measuring(project: Path) -> None:
    """The comparison after the run refused it (exit 2) once every case had been measured."""
    from perfci.format.schema import dump_results
    from tests.conftest import make_case, make_run

    dump_results(make_run([make_case("other", 1e-3)]), project / "base.json")
    result = runner.invoke(app, ["run", "--baseline", "base.json", "--out", "out"])
    assert result.exit_code == 2, result.output
    assert (
        "nothing to compare: the baseline base.json has none of the 2 case(s) this run would measure" in result.output
    )
    assert not (project / "out").exists()


def test_list_json_and_all(project: Path) -> None:
    rows = json.loads(runner.invoke(app, ["list", "--all", "--format", "json"]).stdout)
    assert [(r["id"], r["suite"], r["left_out"]) for r in rows][-1] == (
        "bench_sum.summing[n=2]@cuda",
        "mine",
        "device cuda not selected",
    )


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ('paths = ["perf"]\nsuite = ["kernels"]\n', "perfci.toml:2: key suite: unknown key"),
        ('paths = ["perf"]\nrounds = "3"\n', "perfci.toml:2: key rounds: must be an integer"),
        ('paths = ["perf", "elsewhere"]\n', "perfci.toml:1: key paths: paths[1] 'elsewhere' does not exist"),
        ('paths = ["perf"\n', "perfci.toml: invalid TOML"),
        ('[thresholds]\n"re:[" = {latency = 0.1}\n', "perfci.toml:2: key thresholds.'re:[': bad case pattern"),
    ],
)
@pytest.mark.parametrize("command", ["list", "run"])
def test_config_errors_exit_2_naming_file_line_and_key(project: Path, config: str, needle: str, command: str) -> None:
    (project / "perfci.toml").write_text(config)
    result = runner.invoke(app, [command])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    first = lines(result.stderr)[0]
    assert first.startswith("error: ") and needle in first.replace(str(project) + "/", ""), first


def test_workload_file_with_syntax_error_exits_2_naming_file_and_line(project: Path) -> None:
    (project / "perf" / "bench_bad.py").write_text("import perfci\n\n@perfci.workload\ndef broken(ctx:\n    pass\n")
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2
    assert "bench_bad.py:4: syntax error in workload file" in result.stderr.replace("\n", "")


def test_invalid_workload_declaration_exits_2(project: Path) -> None:
    (project / "perf" / "bench_bad.py").write_text(
        "import perfci\n\n@perfci.workload(params={'n': 3})\ndef broken(ctx, n):\n    return lambda: n\n"
    )
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2
    assert "parameter 'n' must be a non-empty list" in result.stderr.replace("\n", "")


def test_explicit_config_option(project: Path, tmp_path: Path) -> None:
    other = project / "ci.toml"
    other.write_text('paths = ["perf"]\ndevices = ["cuda"]\n')
    result = runner.invoke(app, ["list", "--config", str(other)])
    assert lines(result.stdout) == ["bench_sum.summing[n=1]@cuda", "bench_sum.summing[n=2]@cuda"]
    assert runner.invoke(app, ["list", "--config", str(project / "nope.toml")]).exit_code == 2


def test_unknown_suite_and_bad_k_exit_2(project: Path) -> None:
    result = runner.invoke(app, ["list", "--suite", "kernals"])
    assert result.exit_code == 2 and "unknown suite 'kernals'" in result.stderr
    assert "yours: mine" in result.stderr.replace("\n", " ")
    result = runner.invoke(app, ["list", "-k", "re:("])
    assert result.exit_code == 2 and "-k: invalid regular expression" in result.stderr


def test_run_with_nothing_selected_exits_2(project: Path) -> None:
    result = runner.invoke(app, ["run", "-k", "no-such-case"])
    assert result.exit_code == 2 and "no cases to run" in result.stderr


def test_builtin_suites_list_their_sweeps_by_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cpu = lines(runner.invoke(app, ["list", "--suite", "kernels", "--device", "cpu"]).stdout)
    cuda = lines(runner.invoke(app, ["list", "--suite", "kernels", "--device", "cuda"]).stdout)
    assert cpu and all(c.startswith("kernels.") and c.endswith("@cpu") for c in cpu)
    assert "kernels.triton_add[mib=1024]@cuda" in cuda and all(c.endswith("@cuda") for c in cuda)
    onnx = lines(runner.invoke(app, ["list", "--suite", "onnx", "--device", "cpu"]).stdout)
    runtimes = {c.split("runtime=")[1].split("]")[0] for c in onnx if "runtime=" in c}
    assert runtimes == {"eager", "torch-int8", "ort", "ort-int8"}
    models = lines(runner.invoke(app, ["list", "--suite", "models", "--device", "cpu", "-k", "models.mlp"]).stdout)
    assert models == [
        f"models.mlp[batch={b},runtime={r}]@cpu" for b in (1, 32) for r in ("eager", "autocast-bf16", "torch-int8")
    ]


def test_env_and_baseline_show_print_values_for_people(project: Path) -> None:
    """Python's reprs (`None`, `{'torch': ...}`) and fixed microseconds (`4220.36 us`) were printed."""
    from perfci.format.schema import dump_results
    from tests.conftest import make_case, make_run

    env = runner.invoke(app, ["env"])
    assert env.exit_code == 0 and "None" not in env.stdout and "{" not in env.stdout
    dump_results(make_run([make_case("slow", 4.22e-3)]), project / "r.json")
    assert runner.invoke(app, ["baseline", "update", "r.json", "--reason", "x", "--runner", "cpu-t"]).exit_code == 0
    shown = runner.invoke(app, ["baseline", "show", "--runner", "cpu-t"])
    assert shown.exit_code == 0 and "None" not in shown.stdout
    assert " ms" in shown.stdout and " us" not in shown.stdout


def test_run_and_merge_decide_with_the_configured_threshold_and_fail_on(project: Path) -> None:
    """`perfci run` and `perfci merge` took --threshold only: a configured `threshold = "1000%"` was ignored (compare
    honoured it), and merge ignored `fail_on`."""
    from perfci.api.merge import MergeRequest, merge
    from perfci.api.run import RunRequest, plan_run
    from perfci.cli.app import project_settings
    from perfci.format.schema import dump_results
    from tests.conftest import make_case, make_run

    (project / "perfci.toml").write_text('paths = ["perf"]\nthreshold = "1000%"\nfail_on = "slower"\n')
    settings = project_settings(None)
    planned = plan_run(settings, RunRequest(out=project / "out"))
    assert planned.decision.threshold == 10.0 and planned.decision.fail_on == "slower"
    assert plan_run(settings, RunRequest(out=project / "out", threshold=0.05)).decision.threshold == 0.05  # flag wins
    dump_results(make_run([make_case("a", 1e-3)]), project / "base.json")
    dump_results(make_run([make_case("a", 1e-3, seed=1, scale=1.44)], run_id="head"), project / "head.json")
    merged = merge(settings, MergeRequest([project / "head.json"], project / "m", baseline=project / "base.json"))
    assert merged.comparison is not None
    assert merged.comparison.settings["threshold"] == 10.0 and merged.comparison.settings["fail_on"] == "slower"
    flagged = merge(settings, MergeRequest([project / "head.json"], project / "m2", baseline=project / "base.json",
                                           fail_on="regression"))  # fmt: skip
    assert flagged.comparison is not None and flagged.comparison.settings["fail_on"] == "regression"  # flag wins


def test_the_library_request_is_held_to_the_options_kinds_before_measuring(project: Path) -> None:
    """`RunRequest(seed="x")` was taken, and every case failed in its worker as an infrastructure error."""
    from perfci.api.run import RunRequest, plan_run
    from perfci.cli.app import project_settings
    from perfci.errors import UsageError

    with pytest.raises(UsageError, match=r"--seed: must be an integer .*, not 'x'"):
        plan_run(project_settings(None), RunRequest(out=project / "out", seed="x"))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="--threshold"):
        plan_run(project_settings(None), RunRequest(out=project / "out", threshold=50.0))
