"""perfci's cache (peaks, learned imports, ONNX conversions): one folder that the environment names, and one that
cannot be written or holds a damaged file never stops a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfci.engine.runner import RunSettings
from perfci.profilers.peaks import load_cached, store_cached
from perfci.work_folder import cache_dir
from perfci.workloads.onnx_variants import cache_root


def test_one_cache_folder_named_by_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The measured peaks went to ~/.cache/perfci whatever $PERFCI_CACHE_DIR said (only the ONNX files followed it)."""
    monkeypatch.setenv("PERFCI_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == cache_root() == RunSettings().peaks_cache == tmp_path / "mine"
    monkeypatch.delenv("PERFCI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "perfci"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "perfci"


def test_a_cache_that_cannot_be_written_or_is_damaged_costs_only_a_measurement(tmp_path: Path) -> None:
    """A read-only home stopped `perfci run` ("Read-only file system", blaming --out); `[1]` in the peaks file made
    every run fail with a traceback."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    store_cached(blocked / "perfci", "k", {"bandwidth_gbps": 10.0})  # no error
    assert load_cached(blocked / "perfci", "k") is None
    store_cached(tmp_path, "k", {"bandwidth_gbps": 10.0})
    assert load_cached(tmp_path, "k") == {"bandwidth_gbps": 10.0}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left
    (tmp_path / "peaks-k.json").write_text("[1]")
    assert load_cached(tmp_path, "k") is None
    (tmp_path / "peaks-k.json").write_text("{not json")
    assert load_cached(tmp_path, "k") is None
