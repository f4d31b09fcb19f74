"""The project's addopts in perfci's own pytest sessions, less what would change what runs or how it is timed."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfci.workloads.pytest_addopts import without_dropped


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (["-n", "auto", "-q"], ["-q"]),
        (["-n4", "--dist", "loadscope", "-x"], ["-x"]),
        (["--numprocesses=2", "--dist=load", "--maxprocesses", "3"], []),
        (["--lf", "--ff", "--nf", "--sw", "--lfnf", "all", "--last-failed-no-failures=none"], []),
        (["--perfci-out", "o", "--perfci-disable", "--perfci-allow-missing", "--perfci-rounds=3"], []),
        (["--hypothesis-profile", "ci", "--hypothesis-show-statistics", "--hypothesis-seed=1"], []),
        (["--benchmark-skip", "--benchmark-disable", "--junitxml", "j.xml", "--junit-xml=k.xml", "--benchmark-only"],
         ["--benchmark-disable"]),
        (["--import-mode=importlib", "-m", "not gpu", "--run-slow", "-p", "no:cacheprovider", "bench/test_b.py"],
         ["--import-mode=importlib", "-m", "not gpu", "--run-slow", "-p", "no:cacheprovider", "bench/test_b.py"]),
        (["-q", "--", "-n", "x"], ["-q", "--", "-n", "x"]),  # past `--`, positional
    ],
)  # fmt: skip
def test_the_dropped_options_go_with_their_values_and_the_rest_stays(given: list[str], kept: list[str]) -> None:
    assert without_dropped(given) == kept


def test_a_usage_error_of_the_projects_options_is_quoted_in_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's own words for a usage error in the listing were dropped ("exit code 4" alone)."""
    from perfci.errors import WorkloadDefinitionError
    from perfci.workloads.pytest_cases import list_pytest_cases

    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--no-such-option"\n')
    (tmp_path / "test_x.py").write_text("def test_x(benchmark):\n    benchmark(len, [])\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        WorkloadDefinitionError, match=r"exit code 4\): .*error: unrecognized arguments: --no-such-option"
    ):
        list_pytest_cases(f"pytest:{tmp_path / 'test_x.py'}")
