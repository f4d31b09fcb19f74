"""Issue #20: slower/faster below the threshold, unchanged as established equivalence, the minimum detectable
change (checked against simulation), the gate's fail_on, and the reports that show them."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from perfci.api.settings import Settings
from perfci.compare.decide import compare_runs
from perfci.compare.gate import ExitCode, gate
from perfci.compare.policy import DecisionSettings
from perfci.config import Config
from perfci.errors import UsageError
from perfci.format.comparison import V1_WARNING, comparison_to_dict
from perfci.format.model import Comparison, MetricComparison, Verdict
from perfci.reports.junit import render_junit
from perfci.reports.markdown import render_markdown
from perfci.reports.terminal import comparison_table
from perfci.reports.verdicts import headline, sensitivity
from perfci.stats.decision import decide, min_detectable
from perfci.stats.logratio import LogRatio, paired_differences
from tests.conftest import make_case, make_run
from tests.formats import load_comparison, parse_comparison

GOLDEN = Path(__file__).parents[1] / "golden"


def _est(log_ratio: float, se: float, n: int = 14) -> LogRatio:
    return LogRatio(log_ratio, se, n - 1, n, n)


@pytest.mark.parametrize(
    ("change", "se", "verdict"),
    [
        (0.10, 0.005, "regression"),
        (0.025, 0.001, "slower"),  # established, below the 3% threshold, above its third
        (-0.025, 0.001, "faster"),
        (0.005, 0.0005, "unchanged"),  # established but below theta / 3: equivalence holds
        (0.0, 0.002, "unchanged"),  # interval well inside +-3%
        (0.0, 0.02, "inconclusive"),  # +-8%: no evidence either way
        (0.025, 0.01, "inconclusive"),  # not established, and its interval reaches past 3%
        (0.05, 0.02, "inconclusive"),  # at the threshold but not established
    ],
)
def test_the_verdict_vocabulary(change: float, se: float, verdict: str) -> None:
    d = decide(_est(math.log1p(change), se), 0.03, 0.01 / 3, catch=0.75)
    assert d.verdict == verdict


def test_slower_and_faster_follow_the_metric_direction() -> None:
    assert decide(_est(math.log(0.975), 0.001), 0.03, 0.01, higher_is_better=True).verdict == "slower"
    assert decide(_est(math.log(1.025), 0.001), 0.03, 0.01, higher_is_better=True).verdict == "faster"


def test_min_fraction_sets_the_floor_of_slower() -> None:
    est = _est(math.log1p(0.008), 0.0005)  # 0.8%: established
    assert decide(est, 0.03, 0.01).verdict == "unchanged"  # floor 1%
    assert decide(est, 0.03, 0.01, min_fraction=0.2).verdict == "slower"  # floor 0.6%


def test_min_detectable_change_matches_simulation() -> None:
    """Seeded: paired pairs with 20%-trimmed means (the A/B estimate). With common random numbers a true change
    delta is detected (one-sided lower bound above 0) exactly when delta > t * se_j - m_j, so the change detected
    with 80% power is the 80th percentile of t * se_j - m_j; the formula's MDC (mean over the simulations) must be
    within 20% of it."""
    rng = random.Random(20)
    alpha, sigma = 0.01 / 3, 0.01
    for n in (8, 14, 26):
        needed, formula = [], []
        for _ in range(3000):
            base = [1.0] * n
            cand = [math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]
            est = paired_differences([math.log(c / b) for b, c in zip(base, cand, strict=True)], 0.2)
            needed.append(est.t_quantile(1.0 - alpha) * est.se - est.log_ratio)
            formula.append(min_detectable(est, alpha))
        simulated = math.expm1(sorted(needed)[int(0.8 * len(needed))])
        mean_formula = sum(formula) / len(formula)
        assert abs(mean_formula / simulated - 1.0) < 0.2, (n, mean_formula, simulated)


def test_min_detectable_change_is_nan_without_a_standard_error() -> None:
    assert math.isnan(min_detectable(_est(0.0, math.nan), 0.01))


def _paired(scale: float, noise: float = 0.002, rounds: int = 12) -> Comparison:
    base = make_run([make_case("a", 1e-3, rounds=rounds, noise=noise), make_case("b", 1e-3, rounds=rounds)], "r")
    cand = make_run(
        [make_case("a", 1e-3, rounds=rounds, seed=1, noise=noise, scale=scale), make_case("b", 1e-3, rounds=rounds)],
        "r",
    )
    return compare_runs(base, cand, DecisionSettings(), ("base", "head"), paired=True)


def _row(c: Comparison, case: str = "a") -> MetricComparison:
    return next(r for r in c.rows if r.case_id.startswith(f"t.{case}") and r.metric == "latency.median")


def test_a_small_real_slowdown_is_slower_and_gates_only_when_asked() -> None:
    c = _paired(1.02)
    row = _row(c)
    assert row.verdict is Verdict.SLOWER and row.mdc is not None and 0 < row.mdc < 0.02
    assert gate(c) is ExitCode.OK and headline(c).startswith("PASS: 1 slower")
    strict = replace(c, settings={**c.settings, "fail_on": "slower"})
    assert gate(strict) is ExitCode.REGRESSION and headline(strict).startswith("FAIL")
    assert 'failure type="slower"' in render_junit(strict) and "<failure" not in render_junit(c)
    assert "slower" in render_junit(c) and "detects" in render_junit(c)


def test_markdown_lists_slower_rows_below_the_threshold_bounded_and_escaped() -> None:
    c = _paired(1.02)
    evil = replace(_row(c), case_id="t.a|`<b>@evil`")
    c = replace(c, rows=(*c.rows, *(replace(evil, case_id=f"{evil.case_id}{i}") for i in range(30))))
    md = render_markdown(None, c)
    assert "#### Below the threshold" in md and "31 established slowdown(s)" in md
    section = md.split("#### Below the threshold", 1)[1]
    assert section.count("| slower |") == 10 and "… and 21 more slower cases" in section
    assert "<b>" not in md.replace("`` t.a\\|`<b>@evil`", "")  # only inside code spans
    assert "could detect changes of" in md and "or more in" in md


def test_sensitivity_sentence_counts_the_rows_that_reach_it() -> None:
    rows = tuple(MetricComparison(f"c{i}", "latency.median", Verdict.UNCHANGED, mdc=0.011) for i in range(14))
    rows += (MetricComparison("slow", "latency.median", Verdict.INCONCLUSIVE, mdc=0.2),)
    sens = sensitivity(Comparison("a", "b", rows, mode="paired"))
    assert sens is not None and sens.sentence() == "this A/B could detect changes of 1.1% or more in 14 of 15 cases"


def test_terminal_table_has_the_detects_column() -> None:
    table = comparison_table(_paired(1.02))
    assert "detects" in [col.header for col in table.columns]


def test_comparison_json_carries_mdc_and_the_new_verdicts_v2() -> None:
    doc = json.loads(json.dumps(comparison_to_dict(_paired(1.02))))
    assert doc["schema_version"] == 2
    row = next(r for r in doc["rows"] if r["case_id"].startswith("t.a") and r["metric"] == "latency.median")
    assert row["verdict"] == "slower" and row["mdc"] > 0
    assert parse_comparison(doc).rows == parse_comparison(doc).rows  # reads back


def test_v1_comparison_migrates_with_a_warning() -> None:
    c = load_comparison(GOLDEN / "comparison-v1.json")
    assert c.warnings[-1] == V1_WARNING and all(r.mdc is None for r in c.rows)


def test_fail_on_setting_flag_beats_config(tmp_path: Path) -> None:
    settings = Settings({}, Config(fail_on="slower", source=tmp_path / "perfci.toml"))
    assert settings.fail_on(None) == "slower" and settings.fail_on("regression") == "regression"
    assert Settings({}, Config()).fail_on(None) == "regression"
    with pytest.raises(UsageError, match="unknown value 'slowest'"):
        settings.fail_on("slowest")
