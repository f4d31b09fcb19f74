"""The project's addopts in perfci's own pytest sessions, less what would change what runs or how it is timed."""

from __future__ import annotations

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
        (["--benchmark-skip", "--benchmark-disable", "--junitxml", "j.xml", "--junit-xml=k.xml"],
         ["--benchmark-disable"]),
        (["--import-mode=importlib", "-m", "not gpu", "--run-slow", "-p", "no:cacheprovider", "bench/test_b.py"],
         ["--import-mode=importlib", "-m", "not gpu", "--run-slow", "-p", "no:cacheprovider", "bench/test_b.py"]),
        (["-q", "--", "-n", "x"], ["-q", "--", "-n", "x"]),  # past `--`, positional
    ],
)  # fmt: skip
def test_the_dropped_options_go_with_their_values_and_the_rest_stays(given: list[str], kept: list[str]) -> None:
    assert without_dropped(given) == kept
