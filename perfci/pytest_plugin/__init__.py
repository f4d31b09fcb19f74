"""The pytest plugin (`perf` fixture, `--perfci-out`, `--perfci-compare`), registered through the `pytest11`
entry point; see docs/pytest.md. `measure.py` times a callable in-process, `plugin.py` holds the pytest hooks."""
