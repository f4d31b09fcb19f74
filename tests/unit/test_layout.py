"""Where revisions and paths meet: a git-style `--` gives `ab` and `ci` their workload paths, and each side of an
A/B gets a layout of its own (a heap offset per worker, worktree paths of the working tree's length)."""

from __future__ import annotations

from pathlib import Path


def test_a_git_style_separator_gives_ab_and_ci_their_paths() -> None:
    from perfci.cli import paths_after_separator

    assert paths_after_separator(["ab", "main", "--", "perf/", "b.py"]) == [
        "ab", "main", "--path", "perf/", "--path", "b.py"
    ]  # fmt: skip
    assert paths_after_separator(["ci", "--base", "main", "--", "perf"]) == ["ci", "--base", "main", "--path", "perf"]
    assert paths_after_separator(["run", "--", "perf"]) == ["run", "--", "perf"]  # run takes paths as arguments
    assert paths_after_separator(["ab", "main"]) == ["ab", "main"]


def test_layout_each_worker_its_heap_offset_and_each_side_a_path_of_one_length(tmp_path: Path) -> None:
    from perfci.ab.revisions import worktree_path
    from perfci.engine.worker import _heap_pad, shift_heap

    assert shift_heap({"PERFCI_HEAP_PAD": "4096"}) == 4096 and len(_heap_pad[-1]) == 4096
    assert shift_heap({"PERFCI_HEAP_PAD": "junk"}) == 0 and shift_heap({}) == 0
    assert shift_heap({"PERFCI_HEAP_PAD": "999999"}) == 65_535
    repo = "/home/user/projects/my-model-repo"
    path = worktree_path(tmp_path, "base", len(repo))
    assert len(str(path)) == max(len(repo), len(str(tmp_path / "base")))
    assert path.name.startswith("base")
    assert worktree_path(tmp_path, "head", None) == tmp_path / "head"
