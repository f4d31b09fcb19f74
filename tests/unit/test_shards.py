"""Shard assignment: deterministic, even (sizes differ by at most one, or by the recorded durations), complete and
disjoint, never empty with at least as many cases as shards; `I/N` parsing; `perfci list --shard`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.merge import merge_runs
from perfci.api.shards import Shard, case_durations, parse_shard, split, split_text
from perfci.cli import app
from perfci.errors import UsageError
from perfci.format.schema import dump_results
from tests.conftest import make_case, make_run

IDS = [f"suite.case[n={n},dtype=float32]@cpu" for n in range(200)]
runner = CliRunner()
SIX = Path(__file__).parents[1] / "data" / "workloads" / "six_cases.py"


@pytest.mark.parametrize(("cases", "count"), [(200, 1), (200, 2), (200, 3), (200, 7), (4, 2), (5, 4), (3, 3)])
def test_shards_partition_the_cases_evenly(cases: int, count: int) -> None:
    ids = IDS[:cases]
    held = [Shard(i, count).pick(ids) for i in range(1, count + 1)]
    assert sorted(cid for part in held for cid in part) == sorted(ids)
    sizes = [len(part) for part in held]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1  # never empty with at least as many cases as shards


def test_four_cases_over_two_shards_split_two_and_two() -> None:
    ids = ["w.a@cpu", "w.b@cpu", "w.c@cpu", "w.d@cpu"]
    assert sorted(len(Shard(i, 2).pick(ids)) for i in (1, 2)) == [2, 2]


def test_the_split_depends_on_the_ids_not_their_order() -> None:
    assert split(IDS, 4) == split(list(reversed(IDS)), 4)
    assert Shard(1, 3).pick(IDS[:10]) == Shard(1, 3).pick(reversed(IDS[:10]))


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "1/2/3"])
def test_bad_shards_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_shard(text)


def test_parse() -> None:
    assert parse_shard("2/5") == Shard(2, 5) and str(Shard(2, 5)) == "2/5" and parse_shard(None) is None


# --- split by the durations of an earlier run (--durations) ---


def test_durations_balance_the_time_not_the_count() -> None:
    durations = {"w.long@cpu": 60.0, "w.a@cpu": 10.0, "w.b@cpu": 10.0, "w.c@cpu": 10.0, "w.d@cpu": 10.0}
    shards = split(durations, 2, durations)
    one = [c for c, s in shards.items() if s == shards["w.long@cpu"]]
    assert one == ["w.long@cpu"]  # 60 s alone against 4 x 10 s (by count it would share a shard)
    assert split(reversed(list(durations)), 2, durations) == shards  # the order given does not matter


@pytest.mark.parametrize(("cases", "count"), [(5, 5), (8, 3), (200, 7)])
def test_durations_never_leave_a_shard_empty(cases: int, count: int) -> None:
    ids = IDS[:cases]
    # one case takes nearly everything, some took nothing: still every shard gets a case
    durations = {cid: (1000.0 if i == 0 else 0.0 if i % 2 else 1.0) for i, cid in enumerate(ids)}
    shards = split(ids, count, durations)
    assert sorted(shards) == sorted(ids) and set(shards.values()) == set(range(1, count + 1))


def test_cases_the_file_lacks_weigh_the_median() -> None:
    durations = {"w.a@cpu": 1.0, "w.b@cpu": 2.0, "w.c@cpu": 3.0}
    shards = split([*durations, "w.new@cpu"], 2, durations)
    loads = [sum(durations.get(c, 2.0) for c, s in shards.items() if s == i) for i in (1, 2)]
    assert sorted(loads) == [4.0, 4.0]
    assert "about 4, 4 s" in split_text(shards, 2, durations)
    assert split_text(split(durations, 2), 2) == "3 case(s) over 2 shard(s): 2, 1 (by count)"


def test_case_durations_from_a_results_file(tmp_path: Path) -> None:
    long, short = make_case("long", 1e-3, rounds=2), make_case("short", 1e-5, rounds=2)
    run = make_run([long, short])  # one minute from start to finish
    measured = {c.id: sum(sum(r.samples) + r.warmup_s for r in c.rounds) for c in (long, short)}
    outside = (60.0 - sum(measured.values())) / 4  # per round, spent starting workers and the like
    got = case_durations(run)
    assert got == pytest.approx({cid: seconds + 2 * outside for cid, seconds in measured.items()})
    assert got[long.id] > got[short.id]
    dump_results(run, tmp_path / "results.json")
    shard = Shard(1, 2).by_durations(tmp_path / "results.json")
    assert str(shard) == "1/2" and dict(shard.durations) == pytest.approx(got)
    assert len(shard.pick([long.id, short.id])) == 1


def test_an_empty_shard_merges_with_the_others() -> None:
    full = make_run([make_case("a", 1e-3)], run_id="one")
    empty = replace(make_run([], run_id="two"), settings={**full.settings})
    parts = [(Path("1.json"), full), (Path("2.json"), empty)]
    parts = [(p, replace(r, settings={**r.settings, "shard": f"{i}/2"})) for i, (p, r) in enumerate(parts, 1)]
    merged = merge_runs(parts)
    assert [c.id for c in merged.cases] == [full.cases[0].id]


# --- perfci list --shard I/N: the split, shown before measuring ---


def test_list_shows_each_shard_and_the_split() -> None:
    held = []
    for index in (1, 2):
        res = runner.invoke(app, ["list", str(SIX), "--shard", f"{index}/2", "--format", "json"])
        assert res.exit_code == 0, res.output
        held.append({row["id"] for row in json.loads(res.stdout)})
        assert "shard" in res.stderr and "6 case(s) over 2 shard(s): 3, 3 (by count)" in res.stderr
    assert len(held[0]) == len(held[1]) == 3 and not held[0] & held[1]
    res = runner.invoke(app, ["list", str(SIX), "--shard", "7/7"])
    assert res.exit_code == 0 and res.stdout == "" and "no workloads" not in res.stderr
    res = runner.invoke(app, ["list", str(SIX), "--shard", "1/2", "--all"])
    assert res.stdout.count("(left out: shard 2/2)") == 3


def test_list_splits_by_durations(tmp_path: Path) -> None:
    res = runner.invoke(app, ["list", str(SIX), "--format", "json"])
    ids = sorted(row["id"] for row in json.loads(res.stdout))
    cases = [replace(make_case(cid, 1e-3 if cid == ids[0] else 1e-6, rounds=2), id=cid) for cid in ids]
    dump_results(make_run(cases), tmp_path / "r.json")
    res = runner.invoke(app, ["list", str(SIX), "--shard", "1/3", "--durations", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert "by the recorded durations" in res.stderr
    res = runner.invoke(app, ["list", str(SIX), "--durations", str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "--durations needs --shard" in res.output
