"""The compare layer on synthetic runs: unpaired and paired rows, thresholds, memory, fingerprints, expected
changes, confirmation merge, baselines."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.ab.confirm import flagged_cases, merge_confirmation, unsettled
from perfci.ab.orchestrate import needs_more, unsettled_warning
from perfci.api.settings import Settings
from perfci.cli import app
from perfci.compare.baselines import accept, load_baseline, update_baseline
from perfci.compare.decide import check_comparable, compare_runs
from perfci.compare.expected import apply_expected, parse_expected
from perfci.compare.policy import DecisionSettings, practical_threshold
from perfci.config import Config
from perfci.errors import ConfigError, UsageError
from perfci.format.model import (
    CaseError,
    CaseResult,
    CaseStatus,
    Comparison,
    Direction,
    MetricComparison,
    Round,
    Verdict,
)
from perfci.format.schema import dump_results
from perfci.metrics.registry import metric_def
from perfci.profilers.fingerprint_changes import fingerprint_differences
from tests.conftest import make_case, make_run

STEADY = DecisionSettings(job_noise=0.01)


def _rows(comparison: Comparison, metric: str = "latency.median") -> dict[str, MetricComparison]:
    return {r.case_id.split(".", 1)[1].split("[")[0]: r for r in comparison.rows if r.metric == metric}


def test_unpaired_verdicts_and_new_missing_error() -> None:
    base = make_run([make_case("same", 1e-3), make_case("slow", 1e-3), make_case("gone", 1e-3)])
    broken = replace(make_case("broken", 1e-3), status=CaseStatus.ERROR, errors=(CaseError("crash", "SIGSEGV"),))
    cand = make_run(
        [make_case("same", 1e-3, seed=1), make_case("slow", 1e-3, seed=1, scale=1.3), make_case("fresh", 1e-3), broken]
    )
    base = replace(base, cases=(*base.cases, make_case("broken", 1e-3)))
    rows = _rows(compare_runs(base, cand, STEADY))
    # 5 rounds a side at 1% noise: an interval of about +-6%, so equivalence at 3% is not established
    assert rows["same"].verdict is Verdict.INCONCLUSIVE and rows["same"].method == "unpaired"
    assert rows["slow"].verdict is Verdict.REGRESSION and rows["slow"].ratio == pytest.approx(1.3, rel=0.02)
    assert rows["fresh"].verdict is Verdict.NEW and rows["gone"].verdict is Verdict.MISSING
    assert rows["broken"].verdict is Verdict.ERROR and rows["broken"].note == "candidate failed: SIGSEGV"
    both = _rows(compare_runs(replace(base, cases=(broken,)), replace(cand, cases=(broken,)), STEADY))
    assert both["broken"].verdict is Verdict.ERROR and both["broken"].note == "both sides failed: SIGSEGV"
    # the other way round: failed in the baseline, measured now; named with the baseline's failure, not failed
    same = make_case("same", 1e-3)
    mended = _rows(
        compare_runs(replace(cand, cases=(broken, same)), make_run([make_case("broken", 1e-3), same]), STEADY)
    )
    assert mended["broken"].verdict is Verdict.NEW and mended["broken"].note == "baseline failed: SIGSEGV"
    # alone, it leaves nothing compared: never a pass, and said as a baseline without data (it said "1 new case(s),
    # not in the baseline" of a case the baseline holds), with the baseline's failure
    with pytest.raises(UsageError, match=r"nothing compared: 1 case\(s\) with no data in the baseline \(\S*broken\S*: "
                       r"baseline failed: SIGSEGV\)\.") as caught:  # fmt: skip
        compare_runs(replace(cand, cases=(broken,)), make_run([make_case("broken", 1e-3)]), STEADY)
    assert caught.value.hint and "measure the baseline again" in caught.value.hint
    with pytest.raises(UsageError, match=r"no data in the baseline .* and 1 new case\(s\), not in the baseline"):
        compare_runs(replace(cand, cases=(broken,)), make_run([make_case("broken", 1e-3), make_case("fresh", 1e-3)]),
                     STEADY)  # fmt: skip
    # a new case that fails: an `error` row with its message (it was a silent `new` row while the run said ERROR)
    born_broken = replace(make_case("born_broken", 1e-3), status=CaseStatus.ERROR, errors=broken.errors)
    fresh = _rows(compare_runs(base, replace(cand, cases=(*cand.cases, born_broken)), STEADY))
    assert fresh["born_broken"].verdict is Verdict.ERROR and fresh["born_broken"].note == "new case: SIGSEGV"


def test_a_candidate_case_ok_with_no_round_is_missing_not_dropped() -> None:
    """An audit: a candidate case `ok` but with no round made no row at all (no metric has values), and the
    comparison said PASS on the other case alone. Now it is a `missing` row, failing the gate like a removed case."""
    base = make_run([make_case("kept", 1e-3), make_case("empty", 1e-3)])
    cand = make_run([make_case("kept", 1e-3, seed=1), replace(make_case("empty", 1e-3), rounds=())])
    comparison = compare_runs(base, cand, STEADY)
    rows = _rows(comparison)
    assert rows["empty"].verdict is Verdict.MISSING and rows["empty"].note == "candidate has no data"
    assert rows["kept"].verdict is not Verdict.MISSING and comparison.failing


def test_default_cross_job_noise_says_inconclusive_not_regression() -> None:
    base, cand = make_run([make_case("slow", 1e-3)]), make_run([make_case("slow", 1e-3, seed=1, scale=1.3)])
    row = _rows(compare_runs(base, cand, DecisionSettings()))["slow"]
    assert row.verdict is Verdict.INCONCLUSIVE and row.noise is not None and row.noise > 0.1


def test_paired_rows_use_pairs_and_trim() -> None:
    base = make_run([make_case("k", 1e-3, rounds=8)])
    cand = make_run([make_case("k", 1e-3, rounds=8, seed=1, scale=1.08)])
    row = _rows(compare_runs(base, cand, DecisionSettings(), paired=True))["k"]
    assert row.method == "paired" and row.n_baseline == 8
    assert row.verdict is Verdict.REGRESSION
    assert row.bound is not None and 1.0 < row.bound < row.ratio


def test_paired_files_without_a_round_index_in_common_are_compared_unpaired() -> None:
    """Two files of one run (same run id and start: paired) whose rounds were renumbered, e.g. every round
    index the same (fuzzing: `paired_differences` raised on no pairs, a traceback in `perfci compare`)."""
    base = make_run([make_case("k", 1e-3, rounds=8)])
    case = make_case("k", 1e-3, rounds=8, seed=1, scale=1.08)
    renumbered = replace(case, rounds=tuple(replace(r, index=10**25) for r in case.rounds))
    row = _rows(compare_runs(base, replace(base, cases=(renumbered,)), DecisionSettings()))["k"]
    assert row.method == "unpaired" and row.verdict is not Verdict.ERROR and row.ratio > 1.0


def _own_memory(case: CaseResult, nbytes: float) -> CaseResult:
    rounds = tuple(replace(r, telemetry={**r.telemetry, "memory_host_bytes": nbytes}) for r in case.rounds)
    return replace(case, rounds=rounds)


def test_memory_uses_tolerance_and_direction() -> None:
    base_case = _own_memory(make_case("m", 1e-3), 100_000_000)
    grown = _own_memory(base_case, 150_000_000)
    rows = _rows(compare_runs(make_run([base_case]), make_run([grown]), STEADY), "memory.host")
    assert rows["m"].verdict is Verdict.REGRESSION and rows["m"].method == "tolerance"


def test_memory_has_a_tolerance_and_a_one_mib_floor() -> None:
    """1% and 1 MiB: 0.5 MiB more on a 4 KiB case is noise; 1.5% more on 400 MB is a regression."""
    small = _own_memory(make_case("s", 1e-3), 4096)
    rows = _rows(compare_runs(make_run([small]), make_run([_own_memory(small, 4096 + 2**19)]), STEADY), "memory.host")
    assert rows["s"].verdict is Verdict.UNCHANGED
    big = _own_memory(make_case("b", 1e-3), 400e6)
    rows = _rows(compare_runs(make_run([big]), make_run([_own_memory(big, 406e6)]), STEADY), "memory.host")
    assert rows["b"].verdict is Verdict.REGRESSION


def test_process_peak_rss_is_context_not_gated_by_default() -> None:
    base_case = make_case("m", 1e-3)
    grown = replace(base_case, rounds=tuple(replace(r, peak_rss_bytes=150_000_000) for r in base_case.rounds))
    rows = compare_runs(make_run([base_case]), make_run([grown]), DecisionSettings()).rows
    assert "memory.peak_rss" not in {r.metric for r in rows}


def test_higher_is_better_metric() -> None:
    base, cand = make_run([make_case("t", 1e-3)]), make_run([make_case("t", 1e-3, seed=1, scale=1.3)])
    settings = replace(STEADY, metrics=("throughput",))
    row = _rows(compare_runs(base, cand, settings), "throughput")["t"]
    assert row.ratio is not None and row.ratio < 1 and row.verdict is Verdict.REGRESSION


def test_thresholds_from_config_patterns_and_defaults() -> None:
    lat, mem = metric_def("latency.median"), metric_def("memory.peak_rss")
    cfg = {"kernels.*": {"latency": 0.05, "memory": 0.02}, "kernels.mm*": {"latency.median": 0.08}}
    s = DecisionSettings(thresholds=cfg)
    assert practical_threshold(s, "kernels.mm[n=1]@cpu", lat) == 0.08  # later pattern, exact metric
    assert practical_threshold(s, "kernels.add@cpu", lat) == 0.05
    assert practical_threshold(s, "kernels.add@cpu", mem) == 0.02
    assert practical_threshold(s, "models.x@cpu", lat) == 0.03
    assert practical_threshold(s, "models.x@cuda", lat) == 0.01
    assert practical_threshold(replace(s, threshold=0.1), "kernels.add@cpu", lat) == 0.1


def test_fingerprint_rule() -> None:
    a = {"cpu_model": "EPYC", "cpu_logical_cores": 2, "gpus": [{"name": "H200"}], "libraries": {"torch": "2.4"}}
    b = {**a, "libraries": {"torch": "2.5"}}
    hw, sw = fingerprint_differences(a, b)
    assert hw == [] and sw == ["torch: 2.4 (baseline) vs 2.5 (candidate)"]
    hw, _ = fingerprint_differences(a, {**a, "gpus": [{"name": "H100"}]})
    assert hw and "gpus" in hw[0]
    run_a = make_run([make_case("x", 1e-3)])
    run_b = replace(run_a, fingerprint={**run_a.fingerprint, "cpu_model": "other"})
    with pytest.raises(UsageError, match="different hardware"):
        check_comparable(run_a, run_b, allow_mismatch=False)
    check_comparable(run_a, run_b, allow_mismatch=True)
    assert any("hardware differs" in w for w in compare_runs(run_a, run_b, STEADY).warnings)


EXPECTED = """
version = 1
[[change]]
case = "t.slow*"
metric = "latency"
max_change = 0.5
reason = "exact softmax (#12)"
[[change]]
case = "t.huge*"
max_change = 0.05
reason = "small trade"
"""


def test_expected_changes_pass_the_gate_with_a_note() -> None:
    base = make_run([make_case("slow", 1e-3), make_case("huge", 1e-3)])
    cand = make_run([make_case("slow", 1e-3, seed=1, scale=1.3), make_case("huge", 1e-3, seed=1, scale=1.5)])
    comparison = apply_expected(compare_runs(base, cand, STEADY), parse_expected(EXPECTED, "e.toml"))
    rows = _rows(comparison)
    assert rows["slow"].verdict is Verdict.REGRESSION and rows["slow"].expected == "exact softmax (#12)"
    assert rows["huge"].expected == "" and "beyond the declared expected change" in rows["huge"].note
    assert [r.case_id for r in comparison.failing] == [rows["huge"].case_id]
    assert not any("expected change" in w for w in comparison.warnings)  # both entries did their job


def test_expected_changes_that_did_nothing_are_named() -> None:
    """An entry left in place once its change is in the baseline would let a later worsening of up to its
    max_change pass, and a typo'd one covers nothing: both are said; a used entry and a removal are not."""
    text = EXPECTED + '[[change]]\ncase = "t.sloow*"\nmax_change = 0.1\nreason = "typo"\n'
    text += '[[change]]\ncase = "t.huge*"\nremoved = true\nreason = "gone"\n'
    base = make_run([make_case("slow", 1e-3), make_case("huge", 1e-3)])
    cand = make_run([make_case("slow", 1e-3, seed=1, scale=1.3), make_case("huge", 1e-3, seed=1)])  # huge: same
    compared = compare_runs(base, cand, STEADY)

    def huge_as(verdict: Verdict, ratio: float) -> Comparison:
        rows = tuple(replace(r, verdict=verdict, ratio=ratio) if "huge" in r.case_id else r for r in compared.rows)
        return replace(compared, rows=rows)

    warnings = apply_expected(huge_as(Verdict.UNCHANGED, 1.001), parse_expected(text, "e.toml")).warnings
    said = [w for w in warnings if w.startswith("expected change")]
    assert len(said) == 2, said
    assert "#2 (case 't.huge*': small trade) covers no worsening here" in said[0] and "up to 5% pass" in said[0]
    assert "#3 (case 't.sloow*': typo) matches no case compared here" in said[1]
    # an inconclusive +63% is not "already in the baseline": its change may be what is still coming
    warnings = apply_expected(huge_as(Verdict.INCONCLUSIVE, 1.63), parse_expected(text, "e.toml")).warnings
    assert [w for w in warnings if "covers no worsening" in w] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[change]]\ncase='x'\nmax_change=0.1\nreason='r'", "version = 1"),
        ("version = 1\n[[change]]\ncase='x'\nmax_change=0.1", "reason"),
        ("version = 1\n[[change]]\ncase='x'\nmax_change=-1\nreason='r'", "max_change"),
        ("version = 1\n[[change]]\ncase='re:('\nmax_change=0.1\nreason='r'", "bad case pattern"),
        ("version = 1\n[[chnage]]\ncase='x'", "unknown key"),
        ("version = true", "version = 1"),  # fuzzing: true and 1.0 passed for 1
        ("version = 1.0", "version = 1"),
        ("version = 1\nx = " + "[" * 5000 + "]" * 5000, "nested too deeply"),  # a RecursionError in tomllib
    ],
)
def test_expected_file_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_expected(text, "perfci-expected.toml")


def test_unchanged_only_at_a_coarse_threshold_is_unsettled() -> None:
    """An unpaired `unchanged` under cross-job noise (theta_eff ~50%) can hide a real 10% slowdown: such a row is
    re-measured by --confirm; one whose interval excludes theta is settled. Higher-is-better mirrors it."""
    row = MetricComparison("c", "latency.median", Verdict.UNCHANGED, ratio=1.03, ratio_low=0.75, ratio_high=1.41)
    assert unsettled(row, 0.05)
    assert not unsettled(replace(row, ratio_low=0.97, ratio_high=1.049), 0.05)
    assert unsettled(replace(row, ratio_low=None, ratio_high=None), 0.05)  # no interval: nothing excluded
    fast = replace(row, metric="throughput", direction=Direction.HIGHER, ratio_low=0.96, ratio_high=1.5)
    assert not unsettled(fast, 0.05)  # at worst 1/0.96 = 4.2% slower
    assert unsettled(replace(fast, ratio_low=0.9), 0.05)
    assert not unsettled(replace(row, verdict=Verdict.IMPROVEMENT), 0.05)
    assert unsettled(replace(row, verdict=Verdict.INCONCLUSIVE, ratio_low=0.99, ratio_high=1.01), 0.05)


def test_needs_more_and_flagged_cases() -> None:
    row = MetricComparison("c", "latency.median", Verdict.UNCHANGED, ratio=1.02, threshold=0.03)
    assert needs_more(row)  # at least half-way to the threshold on the worse side
    assert not needs_more(replace(row, ratio=0.98))
    assert needs_more(replace(row, verdict=Verdict.INCONCLUSIVE, ratio=1.0))
    assert not needs_more(replace(row, metric="memory.peak_rss", verdict=Verdict.INCONCLUSIVE))
    noisy = replace(row, ratio=0.995, ratio_low=0.785, ratio_high=1.261, threshold=0.31)  # estimate near 0, wide
    assert not needs_more(noisy)  # by the estimate alone: nowhere near theta_eff
    assert needs_more(noisy, theta=0.05)  # but +26% is still possible at a 5% practical threshold
    assert not needs_more(replace(noisy, ratio_low=0.97, ratio_high=1.03), theta=0.05)  # settled
    # an established regression whose interval still reaches inside theta may yet be only `slower`: more pairs
    near = replace(row, verdict=Verdict.REGRESSION, ratio=1.029, ratio_low=1.015, ratio_high=1.043)
    assert needs_more(near, theta=0.03)
    assert not needs_more(replace(near, ratio=1.06, ratio_low=1.035, ratio_high=1.085), theta=0.03)  # past theta
    assert not needs_more(near)  # without the practical threshold nothing says where "inside" is
    gain = replace(near, verdict=Verdict.IMPROVEMENT, ratio=0.972, ratio_low=0.958, ratio_high=0.985)
    assert needs_more(gain, theta=0.03)  # 1 / 0.985: an improvement of only 1.5% is still possible
    assert not needs_more(replace(gain, ratio=0.94, ratio_low=0.92, ratio_high=0.96), theta=0.03)
    tput = replace(
        near, metric="throughput", direction=Direction.HIGHER, ratio=0.972, ratio_low=0.958, ratio_high=0.985
    )
    assert needs_more(tput, theta=0.03)  # throughput down 1.5% .. 4.2%
    assert not needs_more(replace(tput, ratio_low=0.92, ratio_high=0.96), theta=0.03)
    stored = Comparison(
        "b",
        "c",
        (
            replace(row, case_id="a", verdict=Verdict.INCONCLUSIVE),
            replace(row, case_id="b", verdict=Verdict.UNCHANGED, ratio_low=0.99, ratio_high=1.04),
            replace(row, case_id="c", verdict=Verdict.REGRESSION),
            replace(row, case_id="d", verdict=Verdict.IMPROVEMENT, ratio=0.8),
        ),
    )
    assert flagged_cases(stored, lambda case, metric: 0.05) == ["a", "c"]
    assert flagged_cases(stored, lambda case, metric: 0.03) == ["a", "b", "c"]  # b's interval reaches +4%
    # for the note on unsettled cases, a regression whose whole interval lies past theta is settled (a +119%
    # [+40..+242%] regression was counted as "not settled" there); one reaching back inside theta is not
    clear = replace(stored, rows=(*stored.rows[:2], replace(row, case_id="c", verdict=Verdict.REGRESSION,
                                                            ratio=2.19, ratio_low=1.40, ratio_high=3.42)))  # fmt: skip
    assert flagged_cases(clear, lambda case, metric: 0.05, clear_regressions=True) == ["a"]
    assert flagged_cases(clear, lambda case, metric: 0.05) == ["a", "c"]  # confirmation re-measures it all the same
    assert flagged_cases(stored, lambda case, metric: 0.05, clear_regressions=True) == ["a", "c"]  # no interval
    ab = Comparison("x", "y", (replace(row, case_id="a", verdict=Verdict.UNCHANGED, method="paired"),))
    merged = merge_confirmation(stored, ab, "abc123")
    by_case = {r.case_id: r for r in merged.rows}
    assert by_case["a"].verdict is Verdict.UNCHANGED and "confirmed by A/B against abc123" in by_case["a"].note
    assert by_case["c"].verdict is Verdict.REGRESSION  # not re-measured: kept
    assert "inconclusive -> unchanged" in merged.warnings[-1]


def test_baselines_accept_record_and_resolve(tmp_path: Path) -> None:
    run = make_run([make_case("x", 1e-3)])
    with pytest.raises(UsageError, match="reason"):
        accept(run, "  ", "r.json", "cpu-x", None)
    results = tmp_path / "results.json"
    dump_results(run, results)
    folder = tmp_path / "baselines"
    path, first, _ = update_baseline(results, "first numbers", "cpu-x", folder)
    _, second, _ = update_baseline(results, "second", "cpu-x", folder)
    assert path == folder / "cpu-x.json"
    assert load_baseline("cpu-x", folder).settings["baseline"]["reason"] == "second"
    assert second.settings["baseline"]["previous"]["run_id"] == first.run_id
    with pytest.raises(UsageError, match="no baseline"):
        load_baseline("other", folder)
    assert Settings({"PERFCI_RUNNER": "ci-a"}, Config(runner="cfg")).runner_class(None, {}) == "ci-a"
    assert Settings({}, Config(runner="cfg")).runner_class(None, {}) == "cfg"
    assert Settings().runner_class(None, {"cpu_model": "AMD EPYC", "cpu_logical_cores": 2}) == "cpu-amd-epyc-2c"
    with pytest.raises(UsageError, match=r"^--runner: runner class '\.\./evil' is not a valid name"):
        Settings().runner_class("../evil", {})
    # a bad name is refused naming where it came from (it named none of them)
    with pytest.raises(UsageError, match=r"^\$PERFCI_RUNNER: runner class 'a b'"):
        Settings({"PERFCI_RUNNER": "a b"}, Config(runner="cfg")).runner_class(None, {})
    with pytest.raises(UsageError, match=r"^perfci\.toml: key runner: runner class 'a/b'"):
        Settings({}, Config(runner="a/b", source=Path("perfci.toml"))).runner_class(None, {})


def test_a_baseline_update_refuses_a_shard_and_warns_of_failed_and_dropped_cases(tmp_path: Path) -> None:
    folder = tmp_path / "baselines"
    whole = make_run([make_case("a", 1e-3), make_case("b", 1e-3), make_case("c", 1e-3)])
    dump_results(whole, tmp_path / "whole.json")
    _, _, warnings = update_baseline(tmp_path / "whole.json", "first", "cpu-x", folder)
    assert warnings == []
    shard = replace(make_run([make_case("a", 1e-3)]), settings={"complete": True, "shard": "1/2"})
    dump_results(shard, tmp_path / "shard.json")
    with pytest.raises(UsageError, match="holds shard 1/2 of a run, not the whole run") as refused:
        update_baseline(tmp_path / "shard.json", "oops", "cpu-x", folder)
    assert "perfci merge" in (refused.value.hint or "")
    broken = replace(make_case("b", 1e-3), status=CaseStatus.ERROR, errors=(CaseError("crash", "SIGSEGV"),))
    partial = make_run([make_case("a", 1e-3), broken, make_case("d", 1e-3)])
    dump_results(partial, tmp_path / "partial.json")
    _, _, warnings = update_baseline(tmp_path / "partial.json", "second", "cpu-x", folder)
    assert warnings == [
        "1 of the new baseline's 3 case(s) did not measure (e.g. t.b[n=8]@cpu): it has no figure for them, and "
        "comparisons name them `new`",
        "the new baseline drops 1 of the 3 case(s) of the one it replaces, e.g. t.c[n=8]@cpu: they are no longer "
        "compared",
    ]
    other = make_run([make_case("z", 1e-3)])
    dump_results(other, tmp_path / "other.json")
    _, _, warnings = update_baseline(tmp_path / "other.json", "third", "cpu-x", folder)
    assert "drops 3 of the 3 case(s) of the one it replaces (no case in common)" in warnings[0]


def test_rounds_missing_a_value_are_skipped() -> None:
    case = make_case("x", 1e-3)
    no_dev = replace(case, rounds=tuple(replace(r, peak_device_bytes=None) for r in case.rounds))
    rows = compare_runs(make_run([no_dev]), make_run([no_dev]), STEADY).rows
    assert {r.metric for r in rows} == {"latency.median", "memory.host"}
    assert isinstance(case.rounds[0], Round)


def test_alpha_is_split_over_looks_and_cases() -> None:
    assert DecisionSettings().alpha(10) == pytest.approx(0.01)
    assert DecisionSettings(looks=3).alpha(10) == pytest.approx(0.01 / 3)
    assert DecisionSettings(looks=2, family="bonferroni").alpha(5) == pytest.approx(0.001)
    base = make_run([make_case("a", 1e-3), make_case("b", 1e-3)])
    rows = compare_runs(base, base, DecisionSettings(family="bonferroni", job_noise=0.01)).rows
    assert [r.confidence for r in rows if r.metric == "latency.median"] == pytest.approx([0.995, 0.995])


def test_ab_warns_about_unchanged_cases_its_pairs_could_not_settle() -> None:
    def row(case: str, low: float, high: float, metric: str = "latency.median") -> MetricComparison:
        return MetricComparison(case, metric, Verdict.UNCHANGED, "s", 1.0, 1.0, 1.0, low, high, 0.05, method="paired")

    decision = DecisionSettings(threshold=0.05)
    rows = (row("wide@cpu", 0.785, 1.261), row("tight@cpu", 0.99, 1.01), row("rss@cpu", 0.8, 1.3, "memory.peak_rss"))
    note = unsettled_warning(Comparison("base", "head", rows), decision)
    assert note is not None and note.startswith("1 unchanged/slower/faster case(s) not settled at the practical")
    assert "wide@cpu" in note and "tight@cpu" not in note and "rss@cpu" not in note  # memory is not timed
    assert unsettled_warning(Comparison("base", "head", rows[1:]), decision) is None


def test_the_unsettled_warning_leaves_out_the_host_rows_of_device_clock_cases() -> None:
    """Measured on an H100 (docs/gpu.md, the eighth held-out pair): an A/A whose device rows were settled warned
    that a language model was "not settled at the practical threshold" for its host latency row, -0.22%
    [-1.70..+1.29] (the device's 1% threshold), a row an A/B does not decide on a CUDA case with a device clock
    (the summary says so)."""

    def row(case: str, metric: str, low: float, high: float, theta: float) -> MetricComparison:
        return MetricComparison(case, metric, Verdict.UNCHANGED, "s", 1.0, 1.0, 1.0, low, high, theta, method="paired")

    decision = DecisionSettings()
    device = row("lm@cuda", "device.time", 0.9946, 1.0067, 0.01)
    host = row("lm@cuda", "latency.median", 0.983, 1.0129, 0.03)
    assert unsettled_warning(Comparison("base", "head", (device, host)), decision) is None
    assert "lm@cuda" in (unsettled_warning(Comparison("base", "head", (host,)), decision) or "")  # no device clock
    wide_device = row("lm@cuda", "device.time", 0.98, 1.02, 0.01)
    assert "lm@cuda" in (unsettled_warning(Comparison("base", "head", (wide_device, host)), decision) or "")


def _skewed(name: str, round_ms: list[float]) -> CaseResult:
    """A case whose rounds have exactly these per-call times (ms)."""
    case = make_case(name, 1e-3)
    rounds = tuple(replace(r, samples=(ms * 1e-2,) * 20) for r, ms in zip(case.rounds, round_ms, strict=True))
    return replace(case, rounds=rounds)


def test_a_timed_row_reads_consistently_when_rounds_are_skewed() -> None:
    """Rounds measured on the CI VM (docs/measurement.md): the medians of rounds fall (1.646 -> 1.502 ms) while
    the estimate rises (+9.5%). The row shows the geometric means, so candidate / baseline is the change."""
    base = make_run([_skewed("k", [1.646, 1.647, 1.661, 1.365, 1.384])])
    cand = make_run([_skewed("k", [1.389, 1.502, 2.446, 1.879, 1.397])])
    row = _rows(compare_runs(base, cand, DecisionSettings()))["k"]
    assert row.ratio == pytest.approx(1.095, abs=0.001)
    assert row.candidate is not None and row.baseline is not None
    assert row.candidate / row.baseline == pytest.approx(row.ratio, rel=1e-9)
    assert row.baseline == pytest.approx(1.5344e-3, rel=1e-4)


def test_cross_job_noise_is_smaller_for_the_speed_reference_ratio() -> None:
    from perfci.compare.policy import CPU_JOB_NOISE, REFERENCE_JOB_NOISE, job_noise

    settings = DecisionSettings()
    assert job_noise(settings, "k[n=1]@cpu") == CPU_JOB_NOISE == 0.10
    assert job_noise(settings, "k[n=1]@cpu", "latency.vs_reference") == REFERENCE_JOB_NOISE == 0.03
    assert job_noise(settings, "k[n=1]@cuda", "latency.vs_reference") == 0.03  # GPU cases: the GPU figure
    assert job_noise(DecisionSettings(job_noise=0.2), "k[n=1]@cpu", "latency.vs_reference") == 0.2  # --job-noise


def test_a_requested_metric_no_case_has_is_a_warning_not_a_silent_pass() -> None:
    base, cand = make_run([make_case("k", 1e-3)]), make_run([make_case("k", 1e-3, seed=1)])
    asked = compare_runs(base, cand, DecisionSettings(metrics=("latency.median", "latency.vs_reference")))
    assert [r.metric for r in asked.rows] == ["latency.median"]
    assert any("latency.vs_reference" in w and "--speed-reference" in w for w in asked.warnings)
    plain = compare_runs(base, cand, DecisionSettings())  # memory.peak_device absent on CPU: no warning for defaults
    assert not any("not compared" in w for w in plain.warnings)


def test_first_look_is_shorter_when_every_case_runs_on_a_gpu() -> None:
    from perfci.ab.orchestrate import first_look
    from perfci.format.model import CaseSpec
    from perfci.options import CPU_FIRST_LOOK, GPU_FIRST_LOOK

    gpu = CaseSpec("k.gemm", {}, "cuda")
    cpu = CaseSpec("k.gemm", {}, "cpu")
    assert first_look(None, [gpu, CaseSpec("k.copy", {}, "cuda:1")]) == GPU_FIRST_LOOK < CPU_FIRST_LOOK
    assert first_look(None, [gpu, cpu]) == CPU_FIRST_LOOK  # one CPU case: its noise sets the first look
    assert first_look(None, []) == CPU_FIRST_LOOK
    assert first_look(6, [gpu]) == 6  # given: kept


def test_ab_pairs_run_the_energy_block_only_where_energy_is_compared(tmp_path: Path) -> None:
    from perfci.api.ab import ABRequest, ab_settings
    from perfci.api.compare import DecisionOptions
    from perfci.profilers.timing import TimingSettings

    settings = Settings({}, Config(source=tmp_path / "perfci.toml"))
    assert ab_settings(settings, ABRequest(base_rev="HEAD")).run.timing.energy_window_s == 0.0
    asked = ABRequest(base_rev="HEAD", decision=DecisionOptions(metrics=("latency.median", "energy_per_call")))
    assert ab_settings(settings, asked).run.timing.energy_window_s == TimingSettings().energy_window_s > 0


def test_ab_reads_the_runner_peaks_from_the_cache_and_never_measures_them(tmp_path: Path) -> None:
    """The peaks (a GPU's took 11.5-14.5 s on a fresh runner) decide nothing in an A/B; `perfci run` measures."""
    from perfci.api.ab import ABRequest, ab_settings
    from perfci.api.run import RunRequest, run_settings
    from perfci.engine.runner import NOT_MEASURED, runner_peaks
    from perfci.profilers.peaks import cache_key, store_cached

    settings = Settings({}, Config(source=tmp_path / "perfci.toml"))
    assert ab_settings(settings, ABRequest(base_rev="HEAD")).run.measure_peaks is False
    assert run_settings(settings, RunRequest()).measure_peaks is True
    fp = {"cpu_model": "test", "gpus": [{"name": "H200"}]}
    missing = tmp_path / "no-such-python"  # measuring would start it: FileNotFoundError, an "error" entry
    assert runner_peaks(fp, "cuda", 1, tmp_path, {}, str(missing), measure=False) == {"note": NOT_MEASURED}
    assert "error" in runner_peaks(fp, "cuda", 1, tmp_path, {}, str(missing), measure=True)
    store_cached(tmp_path, cache_key(fp, "cuda", 1), {"bandwidth_gbps": 4214.0})
    cached = runner_peaks(fp, "cuda", 1, tmp_path, {}, str(missing), measure=False)
    assert cached == {"bandwidth_gbps": 4214.0, "cached": True}


@pytest.mark.parametrize(
    "opts",
    [
        {"threshold": float("nan")},  # fuzzing: turned a 3x regression into a pass
        {"threshold": -1.0},
        {"threshold": float("inf")},
        {"job_noise": float("nan")},
        {"job_noise": 1e308},  # an OverflowError
        {"job_noise": -1.0},
    ],
)
def test_threshold_and_job_noise_outside_0_to_10_are_usage_errors(opts: dict[str, float]) -> None:
    from perfci.api.compare import DecisionOptions, decision_settings

    with pytest.raises(UsageError, match="must be a fraction from 0 to 10"):
        decision_settings(Settings(), DecisionOptions(**opts))


def test_confidence_next_to_1_gives_infinite_bounds_not_an_overflow() -> None:
    """Fuzzing: `--confidence 0.9999999999999999` made exp and expm1 of the bounds overflow (a traceback)."""
    from perfci.api.compare import DecisionOptions, decision_settings

    base = make_run([make_case("k", 1e-3, rounds=3)])
    cand = make_run([make_case("k", 1e-3, rounds=3, seed=1, scale=2.0)])
    decision = decision_settings(Settings(), DecisionOptions(confidence=0.9999999999999999))
    row = _rows(compare_runs(base, cand, decision))["k"]
    assert row.verdict is Verdict.INCONCLUSIVE and row.ratio_high is not None and row.ratio_high > 1e30


def test_the_unsettled_note_offers_confirm_only_where_the_baseline_has_a_commit(tmp_path: Path) -> None:
    from perfci.api.run import CONFIRM_REMEDY, NO_COMMIT_REMEDY, RunOutcome
    from perfci.format.model import GitInfo

    run = make_run([make_case("a", 1e-3)])
    with_commit = replace(run, git=GitInfo("a" * 40, "main", False))
    assert RunOutcome(run, None, with_commit, tmp_path).unsettled_remedy == CONFIRM_REMEDY
    assert RunOutcome(run, None, replace(run, git=None), tmp_path).unsettled_remedy == NO_COMMIT_REMEDY
    assert RunOutcome(run, None, replace(run, git=GitInfo(None, None, None)), tmp_path).unsettled_remedy == (
        NO_COMMIT_REMEDY
    )


def test_a_run_compared_with_itself_says_so() -> None:
    run = make_run([make_case("a", 1e-3)])
    comparison = compare_runs(run, run, STEADY)
    assert comparison.mode == "paired"
    assert any(w.startswith(f"both sides are the same run ({run.run_id})") for w in comparison.warnings)
    other = replace(run, run_id="another")
    assert not any("same run" in w for w in compare_runs(run, other, STEADY).warnings)
    from perfci.reports.verdicts import sensitivity

    said = sensitivity(comparison)  # a file with itself is not an A/B (a user audit: "this A/B could detect")
    assert said is not None and said.sentence().startswith("this comparison could detect")


def test_the_unsettled_note_counts_the_regressions_among_them_apart() -> None:
    from perfci.api.compare import unsettled_note

    base = make_run([make_case(n, 1e-3) for n in ("a", "b", "c")])
    cand = make_run([make_case("a", 1e-3, seed=1, scale=2.0), make_case("b", 1e-3, seed=1, scale=2.0),
                     make_case("c", 1e-3, seed=1, scale=1.25)], run_id="head")  # fmt: skip
    comparison = compare_runs(base, cand, DecisionSettings(threshold=0.3))
    failing = sorted({r.case_id for r in comparison.failing})
    assert len(failing) == 2
    text = unsettled_note([*failing, "t.c[n=8]@cpu"], "Remedy.", comparison)
    assert text is not None and text.startswith(
        "note: 3 case(s) not settled at the practical threshold (2 of them regressions whose interval reaches below it)"
    )
    assert "regressions" not in (unsettled_note(["t.c[n=8]@cpu"], "Remedy.", comparison) or "")


def test_runs_measured_with_other_settings_say_so() -> None:
    """threads 1 -> 2 is a speed change the comparison would credit to the code; it said nothing."""
    base = make_run([make_case("a", 1e-3)])
    cand = replace(make_run([make_case("a", 1e-3, seed=1)]), run_id="other")
    base = replace(base, settings={**base.settings, "threads": 1, "seed": 0, "timing": {"gpu_mode": "hot"}})
    cand = replace(cand, settings={**cand.settings, "threads": 2, "seed": 0, "timing": {"gpu_mode": "sustained"}})
    said = [w for w in compare_runs(base, cand, STEADY).warnings if w.startswith("settings differ")]
    assert said == [
        "settings differ: threads 1 -> 2; the comparison credits what that changes to the code",
        "settings differ: GPU timing mode hot -> sustained; the comparison credits what that changes to the code",
    ]


def test_nothing_compared_is_never_a_pass() -> None:
    """Two ways a gate passed having compared nothing (a user audit): every candidate case skipped ("PASS: 2
    missing", exit 0) and a metric no case has (`--metric device.time` on a CPU: "PASS: nothing compared")."""
    base = make_run([make_case("a", 1e-3), make_case("b", 1e-3)])
    skipped = make_run(
        [
            replace(
                make_case(n, 1e-3), status=CaseStatus.SKIPPED, errors=(CaseError("skipped", "fastsum is not built"),)
            )
            for n in ("a", "b")
        ]
    )
    with pytest.raises(UsageError, match=r"nothing compared: 2 baseline case\(s\) not measured \(skipped: fastsum"):
        compare_runs(base, skipped, STEADY)
    # one case measured is a comparison, and the skipped one passes as before
    one = replace(skipped, cases=(make_case("a", 1e-3, seed=1), skipped.cases[1]))
    rows = _rows(compare_runs(base, one, STEADY))
    assert rows["b"].verdict is Verdict.MISSING and rows["b"].expected == "skipped: fastsum is not built"
    on_device = replace(STEADY, metrics=("device.time",))
    with pytest.raises(UsageError, match=r"nothing compared: no case has device\.time in both runs"):
        compare_runs(base, make_run([make_case("a", 1e-3, seed=1), make_case("b", 1e-3, seed=1)]), on_device)


def test_compare_of_a_metric_no_case_has_is_exit_2(tmp_path: Path) -> None:
    base, cand = tmp_path / "a.json", tmp_path / "b.json"
    dump_results(make_run([make_case("a", 1e-3)]), base)
    dump_results(make_run([make_case("a", 1e-3, seed=1, scale=3.0)]), cand)
    res = CliRunner().invoke(app, ["compare", str(base), str(cand), "--metric", "device.time"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: nothing compared: no case has device.time in both runs."), res.stderr


def test_a_side_that_did_not_finish_is_said() -> None:
    """A run killed part-way (`timeout ...; perfci compare ...`) was compared without a word (a user audit)."""
    base = make_run([make_case("a", 1e-3)])
    part = replace(make_run([make_case("a", 1e-3, seed=1)]), run_id="cut", settings={"complete": False})
    said = compare_runs(base, part, STEADY).warnings
    assert "the candidate (cut) did not finish: its file was written part-way (settings.complete is false)" in " ".join(
        said
    )
    assert not any("did not finish" in w for w in compare_runs(base, make_run([make_case("a", 1e-3)]), STEADY).warnings)


def test_a_case_with_a_single_round_on_a_side_is_said() -> None:
    """`benchmark.pedantic(rounds=1)` gives one round: a 10x slowdown read inconclusive, and the gate passed, with
    nothing to say why (a user audit)."""
    base = make_run([make_case("one", 1e-3, rounds=1), make_case("many", 1e-3)])
    cand = make_run([make_case("one", 1e-3, rounds=1, seed=1, scale=10.0), make_case("many", 1e-3, seed=1)])
    comparison = compare_runs(base, cand, STEADY)
    assert _rows(comparison)["one"].verdict is Verdict.INCONCLUSIVE
    said = [w for w in comparison.warnings if "single round" in w]
    assert said == [
        "1 case(s) have a single round on a side, so no change in them can be decided (e.g. 't.one[n=8]@cpu'); "
        "measure 2 rounds or more (a pytest-benchmark test: benchmark.pedantic(rounds=2) or more)"
    ]
    many = replace(base, cases=base.cases[1:])
    assert not any(
        "single round" in w for w in compare_runs(many, replace(cand, cases=cand.cases[1:]), STEADY).warnings
    )


def test_compare_refuses_a_file_written_part_way(tmp_path: Path) -> None:
    """`perfci compare` of a run stopped by SIGTERM (settings.complete false, one round a case) said "did not
    finish" and passed, exit 0 (a user audit): refused now, exit 2, on either side and against a store."""
    whole, part = tmp_path / "whole.json", tmp_path / "part.json"
    dump_results(make_run([make_case("a", 1e-3)]), whole)
    cut = replace(make_run([make_case("a", 1e-3, seed=1, rounds=1)]), settings={"complete": False})
    dump_results(cut, part)
    for args in ((whole, part), (part, whole)):
        res = CliRunner().invoke(app, ["compare", *map(str, args)])
        assert res.exit_code == 2, res.output
        assert f"error: {part}: the run did not complete (interrupted" in res.stderr
        assert "perfci run --resume" in res.stderr
    res = CliRunner().invoke(app, ["compare", str(part), "--baseline", "store:main", "--db", f"sqlite:///{tmp_path}/h"])
    assert res.exit_code == 2 and "the run did not complete" in res.stderr, res.output
    dump_results(replace(cut, settings={"complete": False, "source": "pytest"}), part)  # the pytest plugin's
    res = CliRunner().invoke(app, ["compare", str(whole), str(part)])
    assert res.exit_code == 2 and "run the pytest session again" in res.stderr and "--resume" not in res.stderr
