"""Issue 15's bar on the CPU, with real worker processes: each case's `memory.host` is its own, the same alone
and beside the others; derived bytes are what a call touches."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from perfci.engine.runner import _round_order
from tests.integration.test_run_subprocess import perfci

WORKLOADS = Path(__file__).parent.parent / "data" / "memory_cases" / "memory_cases.py"
MIB = 2**20
pytestmark = pytest.mark.integration


def _run(tmp_path: Path, name: str, *args: str) -> dict[str, dict]:  # type: ignore[type-arg]
    out = tmp_path / name
    proc = perfci("run", str(WORKLOADS), "--out", str(out), *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "results.json").read_text())
    return {c["workload"].split(".")[-1]: c for c in doc["cases"]}


def _metric(case: dict, name: str) -> dict:  # type: ignore[type-arg]
    return next(m for m in case["metrics"] if m["name"] == name)


def test_memory_host_is_the_cases_own_alone_and_together(tmp_path: Path) -> None:
    together = _run(tmp_path, "together", "--rounds", "2", "--seed", "3")
    alone = {name: _run(tmp_path, name, "-k", name, "--rounds", "2")[name] for name in together}
    figures = {}
    for name, case in together.items():
        host = [r["telemetry"]["memory_host_bytes"] for r in case["rounds"]]
        solo = alone[name]["rounds"][0]["telemetry"]["memory_host_bytes"]
        figures[name] = (solo / MIB, [h / MIB for h in host])
        for h in host:  # the same alone and together, whatever the order in the round (+-2% or 1 MiB)
            assert abs(h - solo) <= max(0.02 * solo, MIB), figures
    print(figures)
    assert figures["small_case"][0] < 8 and max(figures["small_case"][1]) < 8
    assert figures["setup_scratch"][0] < 8 and max(figures["setup_scratch"][1]) < 8  # its freed scratch is not its
    assert abs(figures["big_resident"][0] / 381 - 1) <= 0.05
    assert abs(figures["transient_alloc"][0] / 191 - 1) <= 0.10
    assert _metric(together["small_case"], "memory.host")["value"] < 8 * MIB
    # the process's high-water mark is still there, as context
    assert _metric(together["small_case"], "memory.peak_rss")["value"] > 50 * MIB


def test_bandwidth_comes_from_the_bytes_a_call_touches(tmp_path: Path) -> None:
    cases = _run(tmp_path, "bytes", "--rounds", "2", "-k", "big_resident", "-k", "transient_alloc")
    big, transient = cases["big_resident"], cases["transient_alloc"]
    assert big["bytes"] < 10_000  # the 4 KB it reads (plus the scalar it writes), not the 400 MB it holds
    assert transient["bytes"] >= 400e6  # fill writes 200 MB, sum reads 200 MB
    assert big["rounds"][0]["telemetry"]["work_sources"]["bytes"] == "derived"
    pct = _metric(big, "bandwidth.pct_peak")
    assert pct["value"] <= 100 or pct.get("note", "").startswith("implausible")


BF16_MODEL = """
import perfci
import torch

mlp = perfci.model_workload(
    lambda: torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 64)),
    inputs=lambda batch: torch.randn(batch, 256),
    variants=["bf16"],
    batch=[1, 16],
    devices=["cpu"],
)
"""


def _memory_by_round(tmp_path: Path, source: str, seed: int) -> dict[str, list[float]]:
    """Each case's `memory.host` per round (MiB): `perfci run` of the workload file `source`, four shuffled rounds."""
    (tmp_path / "wl.py").write_text(source)
    proc = perfci(
        "run", "wl.py", "--out", "out", "--rounds", "4", "--seed", str(seed), "--round-time", "0.05", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    own = {c["id"]: [r["telemetry"]["memory_host_bytes"] / MIB for r in c["rounds"]] for c in doc["cases"]}
    assert all(len(v) == 4 for v in own.values()), own
    return own


def test_the_first_bf16_case_of_a_worker_pays_no_more_than_the_floor(tmp_path: Path) -> None:
    """Autocast's kernels load on first use: unwarmed, the bf16 case that came first in its worker read 6.5 MiB and
    2.5 MiB when it came second, a false `regression` between runs that order the cases differently. Four rounds,
    shuffled (this seed puts each case first at least once): each case's rounds within the 1 MiB floor."""
    own = _memory_by_round(tmp_path, BF16_MODEL, seed=5)
    assert len(own) == 2
    assert all(max(v) - min(v) < 1.0 for v in own.values()), own


ENCODER_MODEL = """
import perfci
import torch

encoder = perfci.model_workload(
    lambda: torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True),
    inputs=lambda batch: torch.randn(batch, 32, 128),
    variants=["eager", "bf16"],
    batch=[1, 8],
    devices=["cpu"],
)
"""


def _first_in_round(cases: list[str], seed: int, rounds: int) -> dict[str, int]:
    """The round in which each case came first in its worker (the runner's own shuffle, by the run's seed)."""
    firsts: dict[str, int] = {}
    for index in range(rounds):
        firsts.setdefault(_round_order(cases, seed, index)[0], index)  # type: ignore[arg-type]
    return firsts


def test_a_transformer_layer_s_cases_read_the_same_whichever_comes_first(tmp_path: Path) -> None:
    """What attention loads on first use is the model's, not its first case's: warmed with a small model alone,
    this encoder layer's bf16 batch-8 case read 3.3-3.8 MiB when it came after its batch-1 twin, 6.7 MiB when it
    came first. Four shuffled rounds of four cases (this seed puts each case first once): the round in which a case
    came first reads within the 1 MiB floor of the median of its other rounds. Not "every round within 1 MiB": the
    batch-8 cases' call transient alone moves 0.4-0.8 MiB from round to round whatever the order (0.77 MiB on an
    AMD EPYC, more on the CI machine's CPU, where one CI run failed at 1 MiB), so that bar tested the allocator."""
    own = _memory_by_round(tmp_path, ENCODER_MODEL, seed=6)
    assert len(own) == 4
    firsts = _first_in_round(list(own), seed=6, rounds=4)
    assert sorted(firsts) == sorted(own)  # the seed still puts each case first once
    for case, index in firsts.items():
        others = [v for i, v in enumerate(own[case]) if i != index]
        assert abs(own[case][index] - statistics.median(others)) < 1.0, (case, index, own)
    assert all(max(v) - min(v) < 2.0 for v in own.values()), own  # the bug this guards against moved 3 MiB
