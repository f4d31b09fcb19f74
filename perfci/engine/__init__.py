"""The measuring engine: runner (select, schedule, interleave rounds), worker process, supervisor (time-outs,
crashes), case session, lockstep pairs."""

# Environment variable naming (comma-separated) variables that the process starting workers set for itself only:
# a worker does not inherit them (runner.py `_env`). The CLI sets OPENBLAS_NUM_THREADS so (cli/__init__.py). Here,
# not in a module of the engine, so that the CLI reads it without importing any of them.
WORKER_UNSET_VAR = "PERFCI_WORKER_UNSET"
