"""`perfci merge`'s checks that its parts are the shards of one run: every recorded shard there once, one split,
and one environment (the merged file carries one fingerprint)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfci.api.merge import check_parts, merge_runs
from perfci.api.shards import SELECTION_KEY, selection_text
from perfci.errors import UsageError
from perfci.format.model import CaseResult, CaseSpec, CaseStatus, GitInfo, RunResult
from tests.formats import with_spec
from tests.report_fixtures import plain_round

FINGERPRINT = {"machine": "x86_64", "cpu_model": "cpu", "cpu_logical_cores": 2, "python": "3.11.7",
               "libraries": {"torch": "2.13.0"}}  # fmt: skip


def shard(index: int | None, count: int = 3, **fingerprint: object) -> tuple[Path, RunResult]:
    case = CaseResult.of(CaseSpec("w", {"i": index or 0}, "cpu"), CaseStatus.OK, (plain_round(0, (1e-3, 1e-3)),), ())
    settings = {"rounds": 1, "complete": True, **({"shard": f"{index}/{count}"} if index is not None else {})}
    run = RunResult(f"run-{index}", "2026-12-02T00:00:00Z", "2026-12-02T00:01:00Z",
                    {**FINGERPRINT, **fingerprint}, GitInfo("a" * 40, "main", False), settings, (case,))  # fmt: skip
    return Path(f"s{index}/results.json"), run


def test_every_shard_of_the_split_merges_and_the_shard_record_is_dropped() -> None:
    merged = merge_runs([shard(2), shard(1), shard(3)])
    assert len(merged.cases) == 3 and "shard" not in merged.settings


def test_a_missing_shard_is_refused_naming_it() -> None:
    with pytest.raises(UsageError, match=r"shard\(s\) 2/3 missing: 2 of 3 given"):
        check_parts([shard(1), shard(3)])


def test_shards_of_different_splits_are_refused() -> None:
    with pytest.raises(UsageError, match=r"is shard 1/3 but s2/results\.json is shard 2/4"):
        check_parts([shard(1), shard(2, count=4)])


def test_one_shard_twice_is_refused() -> None:
    path, run = shard(1)
    other = replace(run, cases=(with_spec(run.cases[0], CaseSpec("w", {"i": 9}, "cpu")),))
    with pytest.raises(UsageError, match="are both shard 1/3"):
        check_parts([(path, run), (Path("copy/results.json"), other)])


def test_a_file_without_a_shard_record_beside_shards_is_refused() -> None:
    with pytest.raises(UsageError, match="records no shard"):
        check_parts([shard(1), shard(None)])


def test_files_that_record_no_shard_merge_as_before() -> None:
    path, run = shard(None)
    other = replace(run, cases=(with_spec(run.cases[0], CaseSpec("w", {"i": 9}, "cpu")),))
    assert len(merge_runs([(path, run), (Path("b/results.json"), other)]).cases) == 2


@pytest.mark.parametrize(
    ("change", "named"),
    [({"python": "3.12.1"}, "python 3.11.7 -> 3.12.1"), ({"libraries": {"torch": "2.14.0"}}, "torch 2.13.0 -> 2.14.0")],
)
def test_shards_measured_in_different_environments_are_refused(change: dict[str, object], named: str) -> None:
    with pytest.raises(UsageError, match=f"different environments \\({named}\\)"):
        check_parts([shard(1), shard(2, **change), shard(3)])


def _selected(part: tuple[Path, RunResult], selection: str) -> tuple[Path, RunResult]:
    path, run = part
    return path, replace(run, settings={**run.settings, SELECTION_KEY: selection})


def test_shards_of_different_selections_or_a_short_union_are_refused() -> None:
    """Shard 1/2 of every case and shard 2/2 of `-k sleepy` merged into "2 cases", complete, the others gone
    without a word: each shard records the selection it was split from (count and digest)."""
    everything = selection_text(["w[i=1]@cpu", "w[i=2]@cpu", "w[i=3]@cpu"])
    assert everything.startswith("3 cases, sha256:")
    merged = merge_runs([_selected(shard(i), everything) for i in (1, 2, 3)])
    assert SELECTION_KEY not in merged.settings and len(merged.cases) == 3
    with pytest.raises(UsageError, match="are shards of different selections of cases"):
        check_parts([_selected(shard(1), everything), _selected(shard(2), selection_text(["w[i=2]@cpu"])),
                     _selected(shard(3), everything)])  # fmt: skip
    four = selection_text(["a", "b", "c", "d"])  # four cases were split, the three shards hold three
    with pytest.raises(UsageError, match="the shards hold 3 of the 4 cases they were split from"):
        check_parts([_selected(shard(i), four) for i in (1, 2, 3)])


def test_a_merge_into_a_used_folder_leaves_no_earlier_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier command's comparison.json or junit.xml in the --out folder would be read as this merge's."""
    from typer.testing import CliRunner

    from perfci.cli import app
    from perfci.format.schema import dump_results

    monkeypatch.chdir(tmp_path)
    for index in (1, 2, 3):
        path, run = shard(index)
        path.parent.mkdir()
        dump_results(run, path)
    out = tmp_path / "merged"
    out.mkdir()
    (out / "comparison.json").write_text("{}")
    (out / "junit.xml").write_text("<testsuites/>")
    (out / "notes.txt").write_text("mine")
    files = [f"s{i}/results.json" for i in (1, 2, 3)]
    result = CliRunner().invoke(app, ["merge", *files, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.html", "results.json", "summary.md"]
    result = CliRunner().invoke(app, ["merge", *files, "--out", str(out), "--baseline", "s1/results.json"])
    assert result.exit_code in (0, 1), result.output
    assert (out / "comparison.json").is_file() and json.loads((out / "comparison.json").read_text())["rows"]
    (out / "junit.xml").write_text("<testsuites/>")
    CliRunner().invoke(app, ["merge", *files, "--out", str(out), "--baseline", "s1/results.json"])
    assert not (out / "junit.xml").exists()


def test_a_store_baseline_is_refused_with_the_compare_that_does_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from perfci.cli import app
    from perfci.format.schema import dump_results

    monkeypatch.chdir(tmp_path)
    path, run = shard(None)
    path.parent.mkdir()
    dump_results(run, path)
    result = CliRunner().invoke(app, ["merge", str(path), "--out", "m", "--baseline", "store:main:5"])
    assert result.exit_code == 2
    assert "--baseline store:main:5: merge compares with a results file, not the history store." in result.stderr
    assert "perfci compare m/results.json --baseline store:main:5" in result.stderr
    assert not (tmp_path / "m").exists()
