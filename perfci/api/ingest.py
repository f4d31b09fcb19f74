"""`perfci history ingest` as a library call: results files into the history store, read and checked in worker
processes while this process writes.

Nothing here imports the database driver at module level: the workers are forked first, with only what reading
needs (the results codec, the metrics), and SQLAlchemy is imported while they read the first files. On a 2-core
machine the command's start-up was about 0.8 s of the 2.5 s that 20 files of 500 cases took, and is now about
0.25 s before the workers start (docs/history.md, "Scale")."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from perfci.api.settings import Settings
from perfci.cpus import usable_cpus
from perfci.errors import InfrastructureError, PerfciError, UsageError
from perfci.format.schema import load_results
from perfci.parent_death import die_with_parent
from perfci.store.rows import PreparedRun, prepare_run

PRELOAD_FILES = 4  # read before the store is opened
AHEAD_PER_WORKER = 2  # files loaded ahead of the writer, per worker process: what bounds memory


@dataclass(frozen=True)
class _Refused:
    """A PerfciError raised while loading a file in a worker process, sent back as plain values (an exception
    with a hint does not survive pickling whole) and raised again in the writing process."""

    kind: type[PerfciError]
    message: str
    hint: str | None

    def raise_it(self) -> NoReturn:
        raise self.kind(self.message, hint=self.hint)


Loaded = tuple[PreparedRun, dict[str, Any]]  # a run's rows, and its fingerprint (for its runner class)


def _load(path: Path) -> Loaded | _Refused:
    """One results file, read, validated and turned into the store's rows (in a worker process, or in this
    one); a refusal as a value."""
    try:
        run = load_results(path)
        if run.settings.get("complete") is False:
            raise UsageError(
                f"{path}: the run did not complete (interrupted); the history keeps whole runs only.",
                hint="re-run it, or compare it directly with 'perfci compare'",
            )
        return prepare_run(run), run.fingerprint
    except PerfciError as exc:
        return _Refused(type(exc), exc.message, exc.hint)


def _worker_signals() -> None:
    """In a worker: Ctrl-C is for the writing process, which stops the workers (no traceback from each of
    them); SIGTERM ends the worker (not the CLI's handler, inherited by fork); the writing process's death,
    SIGKILL included, ends it too (loaders outlived it, blocked for good, holding the caller's stdout)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not die_with_parent(os.getppid()):
        os._exit(1)


def _workers(files: int) -> int:
    """Worker processes for loading `files` files: one per CPU this process may use, none for a single file or
    a single CPU (loading in this process then)."""
    cpus = usable_cpus()
    return min(cpus, files) if cpus > 1 and files > 1 else 0


@contextmanager
def _loaded_in_order(paths: list[Path]) -> Iterator[Iterator[Loaded | _Refused]]:
    """The files loaded, in their order, lazily. With several CPUs, worker processes read and check the files
    (the costly part) while this process writes the ones before: at most AHEAD_PER_WORKER files per worker are
    loaded ahead, so memory stays bounded however many files there are. Leaving the block stops the workers."""
    workers = _workers(len(paths))
    if not workers:
        yield (_load(p) for p in paths)
        return
    methods = multiprocessing.get_all_start_methods()
    # fork: a worker starts with this process's modules imported (the workers start before anything opens the
    # store or starts a thread); where there is no fork, the platform's default
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_signals)
    pending: deque[Future[Loaded | _Refused]] = deque()
    todo = iter(paths)

    def results() -> Iterator[Loaded | _Refused]:
        while pending:
            try:
                loaded = pending.popleft().result()
            except BrokenProcessPool:
                raise InfrastructureError(
                    "a process loading results files died (out of memory?); nothing was stored."
                ) from None
            for path in itertools.islice(todo, 1):
                pending.append(pool.submit(_load, path))
            yield loaded

    try:
        # the first files are handed out now, so the workers read while the caller goes on (imports the store)
        for path in itertools.islice(todo, workers * AHEAD_PER_WORKER):
            pending.append(pool.submit(_load, path))
        yield results()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class Ingested:
    """What `ingest` did: runs added, runs skipped (already stored), and the ids of the runs read that record no
    commit (measured outside a git checkout, or where git could not be run): the history shows them by date
    only, and a trend report cannot name the commit of a change point among them."""

    added: int
    skipped: int
    without_commit: tuple[str, ...] = ()


def ingest(settings: Settings, results: list[Path], db: str | None, runner: str | None) -> Ingested:
    """Add results files to the store. Files are read as the store takes them (bounded memory; in worker
    processes where there are several CPUs), all in one transaction: a file that is not a complete, valid
    results file stores nothing. The first files are read before the store is opened, so a bad one among them
    leaves no store behind. Files are taken in order: the first bad one is the one reported."""
    without_commit: list[str] = []

    def item(loaded: Loaded | _Refused) -> tuple[PreparedRun, str]:
        if isinstance(loaded, _Refused):
            loaded.raise_it()
        prepared, fingerprint = loaded
        if prepared.commit is None:
            without_commit.append(prepared.run_id)
        return prepared, settings.runner_class(runner, fingerprint)

    with _loaded_in_order(results) as loaded:
        from perfci.store.history import HistoryStore  # here: SQLAlchemy is imported while the workers read

        first = [item(x) for x in itertools.islice(loaded, PRELOAD_FILES)]
        rest = (item(x) for x in loaded)
        added, skipped = HistoryStore(settings.store_url(db), True).ingest_many(itertools.chain(first, rest))
    return Ingested(added, skipped, tuple(without_commit))


def no_commit_warning(run_ids: tuple[str, ...]) -> str:
    """The line `history ingest` prints for runs that record no commit."""
    first = run_ids[0]
    more = f" and {len(run_ids) - 1} more" if len(run_ids) > 1 else ""
    return (
        f"{len(run_ids)} of the runs read record no commit ({first}{more}): measured outside a git checkout, or "
        "where git could not be run; the history shows them by date only, and trend reports cannot name their "
        "commits"
    )
