"""`perfci trend --format markdown --since 7d`: a digest a lead can paste into an email or a chat message."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfci.api.history import since_cutoff
from perfci.cli import app
from perfci.errors import UsageError
from perfci.schema import dump_results
from tests.conftest import make_case, make_run


def test_a_store_with_two_runs_gives_a_digest(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    for i, scale in enumerate((1.0, 1.2)):
        path = tmp_path / f"r{i}.json"
        dump_results(make_run([make_case("a", 1e-3 * scale, seed=i)]), path)
        assert CliRunner().invoke(app, ["history", "ingest", str(path), "--db", db]).exit_code == 0
    res = CliRunner().invoke(app, ["trend", "--db", db, "--format", "markdown", "--since", "7d"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("### perfci trend:") and "in the last 7d" in res.output
    assert "1 case(s)" in res.output


def test_since_takes_spans_and_dates() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert since_cutoff("7d", now) == "2026-11-25T12:00:00Z"
    assert since_cutoff("12h", now) == "2026-12-02T00:00:00Z"
    assert since_cutoff("2026-11-01", now) == "2026-11-01T00:00:00Z"
    with pytest.raises(UsageError, match="7d, 12h or 4w"):
        since_cutoff("last tuesday", now)
