"""Table definitions of the history store (SQLAlchemy Core). Version 1; `store_meta` records it."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

STORE_VERSION = 1

metadata = MetaData()

store_meta = Table(
    "store_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(256), nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(200), nullable=False),
    Column("runner", String(200), nullable=False),
    Column("commit", String(64)),
    Column("branch", String(200)),
    Column("dirty", Boolean),
    Column("started_at", String(40), nullable=False),
    Column("finished_at", String(40), nullable=False),
    Column("fingerprint", Text, nullable=False),
    UniqueConstraint("runner", "run_id", name="uq_runs_runner_run"),
)

measurements = Table(
    "measurements",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("case_id", String(500), nullable=False, index=True),
    Column("metric", String(100), nullable=False),
    Column("unit", String(32), nullable=False),
    Column("direction", String(8), nullable=False),
    Column("value", Float, nullable=False),
    Column("low", Float),
    Column("high", Float),
)
