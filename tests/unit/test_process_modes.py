"""Two speeds by process (stats/modes.py) and what an A/B does with such a case (ab/bimodal.py): seeded data only."""

from __future__ import annotations

import math
import random
from dataclasses import replace

from perfci.ab.bimodal import agreeing_groups, cap_process_modes, case_modes
from perfci.format.model import (
    CaseResult,
    CaseSpec,
    CaseStatus,
    Comparison,
    DeviceTime,
    MetricComparison,
    Round,
    RunResult,
    Verdict,
)
from perfci.metrics.registry import DEVICE_TIME, LATENCY
from perfci.stats.modes import Modes, split_modes

SLOW = math.log(8.3 / 6.0)  # one pure-Python test's two speeds, 6.0 or 8.3 ms a call


def process_mode_pairs(rng: random.Random, n: int, change: float = 0.0, p_slow: float = 0.5) -> list[float]:
    """Per pair, log(head / base): each side's process draws its speed; lockstep noise of 1.5% a pair."""
    return [
        change + (SLOW if rng.random() < p_slow else 0.0) - (SLOW if rng.random() < p_slow else 0.0)
        + rng.gauss(0.0, 0.015)
        for _ in range(n)
    ]  # fmt: skip


def test_three_groups_of_process_draws_are_modes() -> None:
    modes = split_modes([-SLOW, -SLOW + 0.004, 0.0, 0.003, -0.002, 0.001, SLOW, SLOW - 0.003])
    assert modes is not None
    assert modes.sizes == (2, 4, 2)
    assert math.isclose(modes.centres[1], 0.0005, abs_tol=1e-3)
    assert math.isclose(modes.centres[-1] - modes.centres[0], 2 * SLOW, rel_tol=0.01)


def test_process_draws_are_found_in_most_a_b_of_eight_pairs() -> None:
    rng = random.Random(45)
    found = sum(split_modes(process_mode_pairs(rng, 8)) is not None for _ in range(500))
    assert found >= 400  # 0.91 measured over 3,000 seeded trials


def test_an_ordinary_spread_is_not_modes() -> None:
    rng = random.Random(46)
    tight = sum(split_modes([0.1 + rng.gauss(0.0, 0.02) for _ in range(8)]) is not None for _ in range(1000))
    assert tight <= 5  # a shift of the whole (a genuine change) with 2% noise a pair: 0.07% measured


def test_too_few_pairs_or_one_far_pair_is_not_modes() -> None:
    assert split_modes([0.0, 0.3, 0.0]) is None
    assert split_modes([0.0, 0.001, -0.002, 0.002, 0.001, 0.25]) is None  # one outlier: the trimmed estimate's job
    assert split_modes([0.0, 0.001, 0.002, 0.003, 0.2, float("nan")]) is None


def test_groups_with_a_wide_group_beside_them_are_not_modes() -> None:
    # two groups 6% apart, but the left one 4% wide: an ordinary spread with a gap in it
    assert split_modes([0.0, 0.02, 0.04, 0.10, 0.101]) is None


def test_a_change_must_show_in_every_group_of_two_or_more_pairs() -> None:
    assert agreeing_groups(Modes((-0.3, 0.1, 0.4), (2, 4, 1))) == (-0.3, 0.1)
    assert agreeing_groups(Modes((0.0, 0.3), (1, 1))) == (0.0, 0.3)


# ---- ab/bimodal.py: rows of an A/B -------------------------------------------------------------------------------


def _case(cid: str, medians: list[float]) -> CaseResult:
    spec = CaseSpec(workload=cid.removesuffix("@cpu"), params={}, device="cpu", suite="pytest")
    rounds = tuple(Round(i, 1000 + i, 1, (m, m, m), 0.0, "budget", 1) for i, m in enumerate(medians))
    return CaseResult.of(spec, CaseStatus.OK, rounds, {})


def _run(cases: list[CaseResult]) -> RunResult:
    return RunResult(
        run_id="r", started_at="", finished_at="", fingerprint={}, git=None, settings={}, cases=tuple(cases)
    )


def _row(cid: str, verdict: Verdict, ratio: float) -> MetricComparison:
    return MetricComparison(case_id=cid, metric=LATENCY, verdict=verdict, unit="s", baseline=1.0, candidate=ratio,
                            ratio=ratio, threshold=0.03)  # fmt: skip


def test_a_test_that_only_draws_two_speeds_is_never_a_regression() -> None:
    base = [6.0, 8.3, 6.0, 6.0, 8.3, 6.0, 6.0, 6.0]  # the head drew the slow speed more often: not a change
    head = [8.3, 8.3, 6.0, 8.3, 8.3, 6.0, 8.3, 6.0]
    ids = "bench/test_x.py::test_layout@cpu"
    comparison = Comparison("a", "b", (_row(ids, Verdict.REGRESSION, 1.19),), mode="paired")
    capped, moded = cap_process_modes(comparison, _run([_case(ids, base)]), _run([_case(ids, head)]))
    assert moded == {ids}
    assert capped.rows[0].verdict is Verdict.INCONCLUSIVE
    assert "two speeds by process" in capped.rows[0].note
    already = Comparison("a", "b", (_row(ids, Verdict.INCONCLUSIVE, 1.19),), mode="paired")  # said why, too
    noted, _ = cap_process_modes(already, _run([_case(ids, base)]), _run([_case(ids, head)]))
    assert "two speeds" in noted.rows[0].note


def test_two_speeds_whose_mismatched_group_is_the_largest_is_still_not_a_regression() -> None:
    base = [6.0, 6.0, 6.0, 6.0, 8.3, 6.0, 8.3, 6.0]  # pairs 0-3: head slow by draw (+38%), the largest group
    head = [8.3, 8.3, 8.3, 8.3, 8.3, 6.0, 8.3, 6.0]  # pairs 4, 6: both slow; 5, 7: both fast
    cid = "bench/test_x.py::test_layout@cpu"
    comparison = Comparison("a", "b", (_row(cid, Verdict.REGRESSION, 1.2),), mode="paired")
    capped, moded = cap_process_modes(comparison, _run([_case(cid, base)]), _run([_case(cid, head)]))
    assert moded == {cid}
    assert capped.rows[0].verdict is Verdict.INCONCLUSIVE


def test_a_slower_test_whose_head_drew_the_slow_layout_in_two_pairs_stays_a_regression() -> None:
    base = [6.0] * 8
    head = [6.6, 6.6, 6.6, 7.46, 6.6, 7.46, 6.6, 6.6]  # 10% slower; pairs 3 and 5 also +13% by layout
    cid = "bench/test_x.py::test_sum@cpu"
    comparison = Comparison("a", "b", (_row(cid, Verdict.REGRESSION, 1.1),), mode="paired")
    capped, moded = cap_process_modes(comparison, _run([_case(cid, base)]), _run([_case(cid, head)]))
    assert moded == {cid}  # no further pairs for it...
    assert capped.rows[0].verdict is Verdict.REGRESSION  # ...and its matched pairs show the change


def test_an_ordinary_case_is_left_alone() -> None:
    rng = random.Random(7)
    base = [6.0 * math.exp(rng.gauss(0, 0.01)) for _ in range(8)]
    head = [b * 1.1 * math.exp(rng.gauss(0, 0.01)) for b in base]
    cid = "bench/test_x.py::test_sum@cpu"
    row = _row(cid, Verdict.REGRESSION, 1.1)
    comparison = Comparison("a", "b", (row, replace(row, metric="memory.host")), mode="paired")
    capped, moded = cap_process_modes(comparison, _run([_case(cid, base)]), _run([_case(cid, head)]))
    assert moded == set()
    assert capped == comparison
    assert case_modes(_run([_case(cid, base)]), _run([])) == {}


# ---- each clock on its own pairs: a CUDA case's host draws two speeds, its kernels do not -------------------------


def _cuda_case(latency: list[float], device: list[float]) -> CaseResult:
    spec = CaseSpec(workload="models.gpt2_small", params={}, device="cuda")
    rounds = tuple(
        Round(i, 1000 + i, 1, (m, m, m), 0.0, "budget", 1,
              device=DeviceTime("cupti", tuple(d * (1 + 0.0002 * k) for k in range(-2, 3)), kernels=246))
        for i, (m, d) in enumerate(zip(latency, device, strict=True))
    )  # fmt: skip
    return CaseResult.of(spec, CaseStatus.OK, rounds, {})


def _cuda_rows(cid: str) -> Comparison:
    latency = _row(cid, Verdict.IMPROVEMENT, 0.953)
    device = replace(_row(cid, Verdict.SLOWER, 1.007), metric=DEVICE_TIME, threshold=0.01)
    return Comparison("a", "b", (latency, device), mode="paired")


def test_a_cuda_case_whose_host_draws_two_speeds_keeps_its_kernel_verdict_and_its_pairs() -> None:
    """Seen on an H100 runner: GPT-2 small's latency pairs fell at -23% (2 pairs) and 0% (5), a draw of the host
    processes, while its summed kernel time read +0.7% in every pair. The latency row is capped; the device row,
    whose own pairs are not in modes, keeps `slower`, and the case keeps its further pairs (it is decided on the
    device clock). Before, the host's modes made the kernel change `inconclusive` and stopped the case."""
    rng = random.Random(3)
    cid = "models.gpt2_small@cuda"
    base_lat = [8.3] * 7
    head_lat = [6.4, 8.3, 8.3, 6.4, 8.3, 8.3, 8.3]  # -23% in two pairs: the host's draw
    base_dev = [1.224 * (1 + rng.gauss(0, 0.001)) for _ in range(7)]
    head_dev = [d * 1.007 * (1 + rng.gauss(0, 0.001)) for d in base_dev]
    base, head = _run([_cuda_case(base_lat, base_dev)]), _run([_cuda_case(head_lat, head_dev)])
    assert cid in case_modes(base, head) and case_modes(base, head, "device") == {}
    capped, moded = cap_process_modes(_cuda_rows(cid), base, head)
    by_metric = {r.metric: r for r in capped.rows}
    assert by_metric[LATENCY].verdict is Verdict.INCONCLUSIVE and "two speeds" in by_metric[LATENCY].note
    assert by_metric[DEVICE_TIME].verdict is Verdict.SLOWER and by_metric[DEVICE_TIME].note == ""
    assert moded == set()


def test_kernel_times_in_two_groups_by_process_cap_the_device_row_and_stop_the_case() -> None:
    cid = "models.gpt2_small@cuda"
    base_dev = [1.0, 1.0, 1.12, 1.0, 1.12, 1.0, 1.0, 1.0]  # a kernel choice drawn per process: 12% apart
    head_dev = [1.12, 1.12, 1.12, 1.12, 1.12, 1.0, 1.0, 1.0]
    base, head = _run([_cuda_case([8.3] * 8, base_dev)]), _run([_cuda_case([8.3] * 8, head_dev)])
    capped, moded = cap_process_modes(_cuda_rows(cid), base, head)
    device = next(r for r in capped.rows if r.metric == DEVICE_TIME)
    assert device.verdict is Verdict.INCONCLUSIVE and "two speeds" in device.note
    assert moded == {cid}
