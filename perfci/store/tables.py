"""Table definitions of the history store (SQLAlchemy Core). Version 5; `store_meta` records it.

Version 2 added to `measurements` the round statistics of timed metrics (`rounds`, and the mean and sd of the
log per-round values): what the cross-job noise learned from history needs (compare/history_noise.py). A
version-1 store is upgraded in place when opened (`HistoryStore`); its old rows keep NULL there.

Version 3 added the indexes of a trend's lookup path: a runner's runs in time order (`ix_runs_runner_started`),
then one metric of each run (`ix_measurements_run_metric_case` on (run, metric, case_id); without it a trend read
every metric's rows). The latter replaces the index on `run` alone (its prefix serves those lookups), so an insert
maintains no more indexes than before.

Version 4 makes that index covering (`ix_measurements_trend`: the same prefix, then every column a trend reads),
so a trend reads one metric's entries of each run from the index alone, side by side, instead of every table
page (each page holds all eleven metrics of its cases): at a million points, reading a runner's series took
3.6 s through the table (docs/history.md). It replaces the version-3 index: still one index to maintain.

Version 5 drops the index on `case_id` alone (`ix_measurements_case_id`). No query looked a case up without its
run and metric, which the trend's index serves; keeping it up to date was about a third of the time a bulk insert
took (14 of 44 ms for a file of 500 cases, 5,000 rows, on a 2-core machine; docs/history.md).

`change_points` (added without a version change) caches each series' change points, keyed by the detector and
its settings (`method`) and by a digest of the series' values (`series`): `perfci trend` recomputes only the
series whose values changed (store/trend.py). A perfci that predates it ignores the table; an entry cannot go
stale, since a series whose values differ in any way has another digest.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

STORE_VERSION = 5

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
    Index("ix_runs_runner_started", "runner", "started_at", "id"),  # version 3: a runner's runs in time order
)

measurements = Table(
    "measurements",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("case_id", String(500), nullable=False),
    Column("metric", String(100), nullable=False),
    Column("unit", String(32), nullable=False),
    Column("direction", String(8), nullable=False),
    Column("value", Float, nullable=False),
    Column("low", Float),
    Column("high", Float),
    Column("rounds", Integer),  # timed metrics: rounds with a value (version 2)
    Column("log_mean", Float),  # mean of the log per-round values (version 2)
    Column("log_sd", Float),  # sd of the log per-round values (version 2)
    Index(  # version 4: covering for the trend's query (HistoryStore.all_series); the prefix serves the rest
        "ix_measurements_trend",
        *("run", "metric", "case_id", "value", "low", "high", "unit", "rounds", "log_mean", "log_sd"),
    ),
)

change_points = Table(
    "change_points",
    metadata,
    Column("runner", String(200), nullable=False),
    Column("metric", String(100), nullable=False),
    Column("case_id", String(500), nullable=False),
    Column("method", String(200), nullable=False),  # the detector's source digest and its settings
    Column("series", String(64), nullable=False),  # digest of the series' values the result is for
    Column("result", Text, nullable=False),  # JSON: [[index, before, after, ratio, p_value], ...]
    PrimaryKeyConstraint("runner", "metric", "case_id", "method", name="pk_change_points"),
)


@dataclass(frozen=True)
class Upgrade:
    """The statements that take a store of version `version - 1` to `version`, run in one transaction. Each is
    idempotent or fails harmlessly when another process made the same change first (a column that now exists)."""

    version: int
    statements: tuple[str, ...]


# The in-place upgrades, version N -> N + 1, in order: a store is taken through those past its version (migrate.py)
UPGRADES = (
    # the round statistics of timed metrics; rows stored before keep NULL there
    Upgrade(
        2,
        (
            "ALTER TABLE measurements ADD COLUMN rounds INTEGER",
            "ALTER TABLE measurements ADD COLUMN log_mean FLOAT",
            "ALTER TABLE measurements ADD COLUMN log_sd FLOAT",
        ),
    ),
    # the indexes on the trend's lookup path, and the one they replace
    Upgrade(
        3,
        (
            "CREATE INDEX IF NOT EXISTS ix_measurements_run_metric_case ON measurements (run, metric, case_id)",
            "CREATE INDEX IF NOT EXISTS ix_runs_runner_started ON runs (runner, started_at, id)",
            "DROP INDEX IF EXISTS ix_measurements_run",
        ),
    ),
    # the trend's index made covering, in place of version 3's
    Upgrade(
        4,
        (
            "CREATE INDEX IF NOT EXISTS ix_measurements_trend ON measurements "
            "(run, metric, case_id, value, low, high, unit, rounds, log_mean, log_sd)",
            "DROP INDEX IF EXISTS ix_measurements_run_metric_case",
        ),
    ),
    # the index on case_id alone, which no query used
    Upgrade(5, ("DROP INDEX IF EXISTS ix_measurements_case_id",)),
)
