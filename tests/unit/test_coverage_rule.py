"""Nothing compared is never a pass (compare/coverage.py): missing cases fail unless left out on purpose, allowed
or declared removed; no case in common is a usage error; pytest ids written under another rootdir still match
(compare/case_ids.py); ids relative to the project root (workloads/pytest_ids.py); unbound workloads are
measured."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfci.compare.case_ids import moved_test_ids
from perfci.compare.coverage import ALLOWED, LEFT_OUT_KEY, Scope, allow_missing
from perfci.compare.decide import compare_runs
from perfci.compare.expected import apply_expected, parse_expected
from perfci.compare.gate import ExitCode, gate
from perfci.compare.policy import DecisionSettings
from perfci.errors import ConfigError, UsageError
from perfci.format.model import CaseError, CaseResult, CaseSpec, CaseStatus, Comparison, RunResult, Verdict
from perfci.workloads.discovery import cases_from_sources
from perfci.workloads.pytest_ids import project_root, stable_test_id
from tests.conftest import make_case, make_run
from tests.formats import with_spec

STEADY = DecisionSettings(job_noise=0.01)


def pytest_case(test_id: str, seed: int = 0, scale: float = 1.0) -> CaseResult:
    """A case of the pytest plugin: workload = the test's id, no parameters, on the CPU (id `<test id>@cpu`)."""
    spec = CaseSpec(workload=test_id, params={}, device="cpu", source=test_id, suite="pytest")
    return with_spec(make_case(test_id, 1e-3, seed=seed, scale=scale), spec)


def verdicts(comparison: Comparison) -> dict[str, Verdict]:
    return {r.case_id: r.verdict for r in comparison.rows if r.metric == "latency.median" or r.metric == "latency"}


def with_settings(run: RunResult, **settings: object) -> RunResult:
    return replace(run, settings={**run.settings, **settings})


# --- missing cases ------------------------------------------------------------------------------------------


def test_a_baseline_case_with_no_candidate_fails_the_gate() -> None:
    base = make_run([make_case("kept", 1e-3), make_case("gone", 1e-3)])
    cand = make_run([make_case("kept", 1e-3, seed=1)])
    comparison = compare_runs(base, cand, STEADY)
    gone = next(r for r in comparison.rows if "gone" in r.case_id)
    assert gone.verdict is Verdict.MISSING and not gone.expected and "--allow-missing" in gone.note
    assert gone in comparison.failing
    assert gate(comparison) is ExitCode.REGRESSION


def test_allow_missing_passes_the_missing_row_and_keeps_it_listed() -> None:
    base = make_run([make_case("kept", 1e-3), make_case("gone", 1e-3)])
    cand = make_run([make_case("kept", 1e-3, seed=1)])
    comparison = compare_runs(base, cand, STEADY, scope=Scope(allow_missing=True))
    gone = next(r for r in comparison.rows if "gone" in r.case_id)
    assert gone.verdict is Verdict.MISSING and gone.expected == ALLOWED
    assert not comparison.failing and gate(comparison) is ExitCode.OK
    # the same, applied after deciding (an A/B's looks decide without it)
    late = allow_missing(compare_runs(base, cand, STEADY))
    assert not late.failing


def test_new_cases_are_listed_and_never_fail() -> None:
    base = make_run([make_case("kept", 1e-3)])
    cand = make_run([make_case("kept", 1e-3, seed=1), make_case("fresh", 1e-3)])
    comparison = compare_runs(base, cand, STEADY)
    assert Verdict.NEW in verdicts(comparison).values()
    assert gate(comparison) is ExitCode.OK


def test_cases_the_candidate_left_out_on_purpose_are_not_missing() -> None:
    base = make_run([make_case("kept", 1e-3), make_case("deselected", 1e-3), make_case("gpu_only", 1e-3)])
    kept = make_case("kept", 1e-3, seed=1)
    left = {base.cases[1].id: "deselected: -k or --suite", base.cases[2].id: "device cuda not on this runner"}
    cand = with_settings(make_run([kept]), **{LEFT_OUT_KEY: left})
    comparison = compare_runs(base, cand, STEADY)
    assert set(verdicts(comparison)) == {kept.id}  # not compared, not listed
    assert any("2 baseline case(s) left out on purpose" in w and "deselected: 1" in w for w in comparison.warnings)
    assert gate(comparison) is ExitCode.OK


def test_a_skipped_candidate_case_passes_with_its_reason() -> None:
    base = make_run([make_case("kept", 1e-3), make_case("triton", 1e-3)])
    skipped = replace(make_case("triton", 1e-3), status=CaseStatus.SKIPPED, errors=(CaseError("skip", "no triton"),))
    cand = make_run([make_case("kept", 1e-3, seed=1), skipped])
    comparison = compare_runs(base, cand, STEADY)
    row = next(r for r in comparison.rows if r.case_id == skipped.id)
    assert row.verdict is Verdict.MISSING and "no triton" in row.expected
    assert gate(comparison) is ExitCode.OK


def test_a_sharded_candidate_does_not_count_the_other_shards_cases_missing() -> None:
    base = make_run([make_case("mine", 1e-3), make_case("theirs", 1e-3)])
    cand = with_settings(make_run([make_case("mine", 1e-3, seed=1)]), shard="1/2")
    comparison = compare_runs(base, cand, STEADY)
    assert all("theirs" not in r.case_id for r in comparison.rows)
    assert any("in another shard: 1" in w for w in comparison.warnings)


def test_a_deselected_pytest_test_covers_every_case_of_that_test() -> None:
    scope = Scope({"bench/test_b.py::test_b": "deselected", "bench/test_c.py::C::test_d[1]": "skipped: no gpu"})
    assert scope.reason("bench/test_b.py::test_b@cpu") == "deselected"
    assert scope.reason("bench/test_b.py::test_b::small@cpu") == "deselected"
    assert scope.reason("bench/test_c.py::C::test_d[1]@cpu") == "skipped: no gpu"
    assert scope.reason("bench/test_b.py::test_bb@cpu") == ""
    assert scope.reason("bench/test_c.py::C::test_d[2]@cpu") == ""


def test_an_expected_removal_lets_the_missing_case_pass_and_only_that_one() -> None:
    changes = parse_expected(
        'version = 1\n[[change]]\ncase = "*old*"\nremoved = true\nreason = "the old kernel is gone"\n', "x.toml"
    )
    base = make_run([make_case("kept", 1e-3), make_case("old_kernel", 1e-3), make_case("other", 1e-3)])
    cand = make_run([make_case("kept", 1e-3, seed=1)])
    comparison = apply_expected(compare_runs(base, cand, STEADY), changes)
    failing = {r.case_id for r in comparison.failing}
    assert failing == {base.cases[2].id}  # `other` is still missing
    old = next(r for r in comparison.rows if "old_kernel" in r.case_id)
    assert old.expected == "the old kernel is gone"


def test_a_removal_entry_does_not_excuse_a_regression() -> None:
    changes = parse_expected('version = 1\n[[change]]\ncase = "*"\nremoved = true\nreason = "r"\n', "x.toml")
    base = make_run([make_case("slow", 1e-3)])
    cand = make_run([make_case("slow", 1e-3, seed=1, scale=1.5)])
    comparison = apply_expected(compare_runs(base, cand, STEADY), changes)
    assert gate(comparison) is ExitCode.REGRESSION


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ('removed = true\nmax_change = 0.1\nreason = "r"', "takes no 'max_change'"),
        ('removed = "yes"\nreason = "r"', "'removed' must be true or false"),
    ],
)
def test_a_bad_removal_entry_is_refused(entry: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_expected(f'version = 1\n[[change]]\ncase = "x"\n{entry}\n', "x.toml")


# --- no case in common ----------------------------------------------------------------------------------------


def test_no_case_in_common_is_a_usage_error_naming_the_first_id_of_each() -> None:
    base = make_run([make_case("a", 1e-3), make_case("b", 1e-3)])
    cand = make_run([make_case("x", 1e-3), make_case("y", 1e-3)])
    with pytest.raises(UsageError) as caught:
        compare_runs(base, cand, STEADY, ("base.json", "cand.json"))
    message = str(caught.value)
    assert base.cases[0].id in message and cand.cases[0].id in message
    assert "base.json" in message and "cand.json" in message and "no case in common" in message
    assert caught.value.exit_code == 2
    with pytest.raises(UsageError):  # allowing missing cases does not make nothing comparable
        compare_runs(base, cand, STEADY, scope=Scope(allow_missing=True))


def test_an_empty_candidate_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no cases"):
        compare_runs(make_run([make_case("a", 1e-3)]), make_run([]), STEADY)


# --- pytest ids under another rootdir -------------------------------------------------------------------------


def test_earlier_pytest_ids_match_the_new_ones_by_the_end_of_their_path() -> None:
    moved = moved_test_ids(
        [
            "test_b.py::test_a@cpu",  # rootdir was the tests' folder
            "x/bench/test_b.py::test_b::small@cpu",  # rootdir was the parent of the project
            "bench/test_c.py::test_c@cpu",  # unchanged
            "kernels.matmul[n=8]@cpu",  # not a pytest case
        ],
        ["bench/test_b.py::test_a@cpu", "bench/test_b.py::test_b::small@cpu", "bench/test_c.py::test_c@cpu"],
    )
    assert moved == {
        "test_b.py::test_a@cpu": "bench/test_b.py::test_a@cpu",
        "x/bench/test_b.py::test_b::small@cpu": "bench/test_b.py::test_b::small@cpu",
    }


def test_an_ambiguous_earlier_id_is_left_unmatched() -> None:
    moved = moved_test_ids(["test_b.py::test_a@cpu"], ["one/test_b.py::test_a@cpu", "two/test_b.py::test_a@cpu"])
    assert moved == {}
    assert moved_test_ids(["a/test_b.py::test_a@cpu"], ["b/test_b.py::test_a@cpu"]) == {}  # other folders


def test_a_baseline_with_earlier_ids_is_compared_case_by_case() -> None:
    base = make_run([pytest_case("test_b.py::test_a"), pytest_case("test_b.py::test_slow")])
    cand = make_run([pytest_case("bench/test_b.py::test_a", seed=1), pytest_case("bench/test_b.py::test_slow", 1, 1.5)])
    comparison = compare_runs(base, cand, STEADY)
    got = verdicts(comparison)
    assert set(got) == {"bench/test_b.py::test_a@cpu", "bench/test_b.py::test_slow@cpu"}
    assert got["bench/test_b.py::test_slow@cpu"] is Verdict.REGRESSION
    assert Verdict.MISSING not in got.values() and Verdict.NEW not in got.values()
    assert any("earlier id" in w for w in comparison.warnings)


def test_case_ids_are_relative_to_the_project_root_whatever_the_rootdir(tmp_path: Path) -> None:
    project = tmp_path / "x"
    (project / "bench").mkdir(parents=True)
    test_file = project / "bench" / "test_b.py"
    assert project_root(project) == project.resolve()  # no marker above: where pytest started
    # the same test as pytest names it from two rootdirs
    for nodeid in ("bench/test_b.py::test_a[1]", "x/bench/test_b.py::test_a[1]", "test_b.py::test_a[1]"):
        assert stable_test_id(test_file, nodeid, project.resolve()) == "bench/test_b.py::test_a[1]"
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert project_root(project / "bench") == project.resolve()
    outside = tmp_path / "other" / "test_o.py"
    assert stable_test_id(outside, "test_o.py::t", project.resolve()) == "../other/test_o.py::t"


# --- workloads made and never bound ---------------------------------------------------------------------------


def test_a_workload_made_at_module_level_and_never_bound_is_measured(tmp_path: Path) -> None:
    path = tmp_path / "wl.py"
    path.write_text(
        "import perfci\n"
        "perfci.workload(name='unbound')(lambda ctx: (lambda: None))\n"
        "print('not a workload')\n"
        "@perfci.workload()\n"
        "def bound(ctx):\n"
        "    return lambda: None\n"
    )
    assert sorted(s.id for s in cases_from_sources([str(path)])) == ["wl.bound@cpu", "wl.unbound@cpu"]


def test_a_workload_made_by_a_helper_module_is_measured_but_not_one_an_import_made(tmp_path: Path) -> None:
    """An audit: `build("lin_a")` from `_helpers.py`, called by the workload file, was dropped without a word (its
    workload was made in the helper's module, not the file's). Called from the file, it is the file's; a workload a
    module makes while it is imported stays that module's (`shared.py` here is no workload file of its own)."""
    (tmp_path / "_helpers.py").write_text(
        "import perfci\ndef build(name):\n    return perfci.workload(name=name)(lambda ctx: (lambda: None))\n"
    )
    (tmp_path / "shared.py").write_text(
        "import perfci\nperfci.workload(name='made_on_import')(lambda ctx: (lambda: 1))\n"
    )
    path = tmp_path / "wl.py"
    path.write_text(
        "import perfci\n"
        "import shared\n"
        "from _helpers import build\n"
        "build('lin_a')\n"
        "@perfci.workload()\n"
        "def bound(ctx):\n"
        "    return lambda: None\n"
    )
    assert sorted(s.id for s in cases_from_sources([str(path)])) == ["wl.bound@cpu", "wl.lin_a@cpu"]


def test_a_store_window_with_earlier_pytest_ids_is_compared_case_by_case() -> None:
    """The rolling baseline from the history store (`--baseline store:main`): runs ingested before the ids were
    relative to the project root still match, and a stored case the candidate lacks is missing."""
    from perfci.compare.rolling_baseline import RollingBaseline, StoreBaselineSpec, compare_rolling
    from perfci.store.records import Point, RunInfo

    cand = make_run([pytest_case("bench/test_b.py::test_a"), pytest_case("bench/test_b.py::test_c")])
    runs = [
        RunInfo(f"r{i}", "cpu", "abc", "main", False, "2026-11-30T00:00:00Z", "2026-11-30T00:01:00Z") for i in range(3)
    ]
    median = cand.cases[0].metric("latency.median")
    assert median is not None

    def points(value: float) -> list[Point]:
        return [Point(r.run_id, "abc", r.started_at, value, None, None, "s") for r in runs]

    window = RollingBaseline(
        StoreBaselineSpec("main"), "cpu", runs,
        {("test_b.py::test_a@cpu", "latency.median"): points(median.value),
         ("test_b.py::test_gone@cpu", "latency.median"): points(median.value)},
        dict(cand.fingerprint),
    )  # fmt: skip
    comparison, _ = compare_rolling(window, cand, DecisionSettings(metrics=("latency.median",)), "cand.json")
    got = {r.case_id: r.verdict for r in comparison.rows}
    assert got["bench/test_b.py::test_c@cpu"] is Verdict.NEW
    assert got["test_b.py::test_gone@cpu"] is Verdict.MISSING
    assert got["bench/test_b.py::test_a@cpu"] not in (Verdict.NEW, Verdict.MISSING)
    assert gate(comparison) is ExitCode.REGRESSION  # the missing case
