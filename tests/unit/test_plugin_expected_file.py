"""The pytest plugin's comparison applies the expected-changes file of the folder it runs in, else the project
root's, else pytest's rootdir's (a session started in a subfolder read none: a declared removal failed the gate)."""

from __future__ import annotations

from pathlib import Path

from perfci.pytest_plugin.files import expected_file


def test_the_expected_file_is_found_from_a_subfolder(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "bench" / "deep").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    sub = root / "bench" / "deep"
    assert expected_file(root, cwd=sub) is None
    (root / "perfci-expected.toml").write_text("version = 1\n")
    assert expected_file(root / "bench", cwd=sub) == root / "perfci-expected.toml"  # the project root's
    (sub / "perfci-expected.toml").write_text("version = 1\n")
    assert expected_file(root, cwd=sub) == sub / "perfci-expected.toml"  # the folder pytest runs in first


def test_pytests_rootdir_is_the_last_place(tmp_path: Path) -> None:
    rootdir = tmp_path / "rootdir"
    (rootdir / "x").mkdir(parents=True)
    (rootdir / "x" / "pyproject.toml").write_text("")  # the project root is x, without the file
    (rootdir / "perfci-expected.toml").write_text("version = 1\n")
    assert expected_file(rootdir, cwd=rootdir / "x") == rootdir / "perfci-expected.toml"
