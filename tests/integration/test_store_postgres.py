"""History store on a real PostgreSQL server.

URL from PERFCI_TEST_POSTGRES_URL (`.ci/run` starts PostgreSQL 15 and sets it). Skipped with a reason when it
is unset, unless PERFCI_REQUIRE_POSTGRES is set (CI), where a missing server fails the test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perfci.store.history import HistoryStore
from tests.store_cases import (
    check_change_point_cache,
    check_export,
    check_ingest_exact,
    check_rolling_baseline,
    check_store,
    check_upgrade_from_v1,
)

URL = os.environ.get("PERFCI_TEST_POSTGRES_URL")
pytestmark = pytest.mark.integration


@pytest.fixture
def pg_url() -> str:
    if not URL:
        if os.environ.get("PERFCI_REQUIRE_POSTGRES"):
            pytest.fail("PERFCI_REQUIRE_POSTGRES is set but PERFCI_TEST_POSTGRES_URL is not")
        pytest.skip("no PostgreSQL server (set PERFCI_TEST_POSTGRES_URL)")
    return URL


@contextmanager
def fresh_schema(pg_url: str) -> Iterator[str]:
    """A URL whose connections work in a new, empty schema (dropped afterwards)."""
    import sqlalchemy as sa

    schema = f"t_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(pg_url)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        sep = "&" if "?" in pg_url else "?"
        yield f"{pg_url}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))


def test_postgres_store(pg_url: str) -> None:
    with fresh_schema(pg_url) as url:
        check_store(HistoryStore(url))


def test_postgres_store_upgrade_from_version_1(pg_url: str) -> None:
    with fresh_schema(pg_url) as url:
        check_upgrade_from_v1(url)


def test_postgres_export(pg_url: str, tmp_path: Path) -> None:
    with fresh_schema(pg_url) as url:
        check_export(url, tmp_path)


def test_postgres_rolling_baseline(pg_url: str, tmp_path: Path) -> None:
    with fresh_schema(pg_url) as url:
        check_rolling_baseline(url, tmp_path)


def test_postgres_ingest_exact(pg_url: str, tmp_path: Path) -> None:
    """Rows go in by COPY: every float must come back exactly as it was in the file."""
    with fresh_schema(pg_url) as url:
        check_ingest_exact(url, tmp_path)


def test_postgres_change_point_cache(pg_url: str) -> None:
    with fresh_schema(pg_url) as url:
        check_change_point_cache(url, refuse_writes="REVOKE INSERT ON change_points FROM CURRENT_USER")
