"""The project's conventional folders (workloads/conventional.py) and how `ab`/`ci` choose what to measure
(api/ab.py `choose_sources`): files read as text, nothing imported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfci.api.ab import Chosen, Sources, choose_sources
from perfci.api.settings import Settings
from perfci.config import Config
from perfci.errors import UsageError
from perfci.workloads.conventional import conventional_sources

WORKLOAD = "import perfci\n\n@perfci.workload\ndef loop(ctx):\n    return lambda: None\n"
MODEL = "import perfci\nenc = perfci.model_workload(object(), name='enc')\n"
BENCH_TEST = "def test_sort(\n    benchmark,\n):\n    benchmark(sorted, [3, 1])\n"
PERF_TEST = "async def test_x(perf):\n    perf(lambda: 1)\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_workload_files_and_pytest_benchmarks_are_found_and_nothing_else(tmp_path: Path) -> None:
    write(tmp_path, {
        "perf/wl.py": WORKLOAD,
        "perf/models/enc.py": MODEL,
        "perf/helpers.py": "import perfci\nX = 1\n",  # mentions perfci, defines no workload
        "perf/_private.py": WORKLOAD,
        "benchmarks/test_sort.py": BENCH_TEST,
        "benchmarks/run_all.py": "print('benchmark(')\n",  # a script, not a test file
        "tests/test_unit.py": "def test_a():\n    assert True\n",
        "tests/test_speed.py": PERF_TEST,
        "tests/.venv/test_vendored.py": BENCH_TEST,
        "src/test_elsewhere.py": BENCH_TEST,  # not a conventional folder
    })  # fmt: skip
    found = conventional_sources(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found.workloads] == ["perf/models/enc.py", "perf/wl.py"]
    assert [p.relative_to(tmp_path).as_posix() for p in found.pytest] == [
        "benchmarks/test_sort.py",
        "tests/test_speed.py",
    ]
    assert found.describe(tmp_path) == (
        "perf/ (2 workload files), benchmarks/ (1 pytest benchmark file), tests/ (1 pytest benchmark file)"
    )


def test_an_empty_project_has_none(tmp_path: Path) -> None:
    write(tmp_path, {"perf/notes.py": "X = 1\n", "benchmarks/test_plain.py": "def test_a():\n    pass\n"})
    assert not conventional_sources(tmp_path)


def settings(cfg: Config) -> Settings:
    return Settings({}, cfg)


def test_flags_then_configuration_then_the_conventional_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench").mkdir()
    named = choose_sources(settings(Config()), Sources(pytest=[Path("bench")]))
    assert named == Chosen(pytest=(Path("bench"),))
    configured = choose_sources(
        settings(Config(source=tmp_path / "pyproject.toml", pytest=(tmp_path / "bench",))), Sources()
    )
    assert configured.pytest == (tmp_path / "bench",) and configured.conventional is None
    suite = choose_sources(settings(Config()), Sources(suites=["default"]))
    assert suite == Chosen(suites=("default",))
    nothing = choose_sources(settings(Config()), Sources())
    assert nothing == Chosen(conventional=tmp_path.resolve())
    with pytest.raises(UsageError, match="--pytest nope: no such file or folder"):
        choose_sources(settings(Config()), Sources(pytest=[Path("nope")]))


def test_from_a_subfolder_the_nearest_folder_up_to_the_repository_root_that_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # the repository's root
    write(tmp_path, {"perf/wl.py": WORKLOAD, "src/app/main.py": "X = 1\n", "lib/perf/wl.py": WORKLOAD})
    for start, project in (("perf", "."), ("src/app", "."), ("lib/perf", "lib"), ("lib", "lib"), (".", ".")):
        monkeypatch.chdir(tmp_path / start)
        chosen = choose_sources(settings(Config()), Sources())
        assert chosen == Chosen(conventional=(tmp_path / project).resolve()), start
    outside = tmp_path.parent / f"{tmp_path.name}-outside"  # not in a repository: here, searched no higher
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert choose_sources(settings(Config()), Sources()) == Chosen(conventional=outside.resolve())


def test_a_file_pytest_cannot_import_still_names_its_measuring_tests(tmp_path: Path) -> None:
    from perfci.workloads.pytest_cases import measuring_tests_in

    source = (
        "import pytest\nfrom nowhere import thing\n\n"
        "def test_x(benchmark):\n    benchmark(thing)\n\n"
        "async def test_async(perf):\n    perf(thing)\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_p(benchmark, n):\n    benchmark(thing, n)\n\n"
        "def test_plain():\n    pass\n\n"
        "class TestGroup:\n    def test_y(self, perf):\n        perf(thing)\n"
    )
    broken = "def test_x(benchmark:\n\ndef test_plain():\n    pass\n\nclass TestG:\n    def test_m(self, perf):\n"
    write(tmp_path, {"test_bad.py": source, "test_syntax.py": broken})
    assert measuring_tests_in(tmp_path / "test_bad.py") == ["test_x", "test_async", "TestGroup::test_y"]
    # not Python: its top-level measuring tests read from its lines, so they are `error` rows, not dropped
    assert measuring_tests_in(tmp_path / "test_syntax.py") == ["test_x"]


def test_perfci_run_given_pytest_benchmarks_says_how_to_measure_them(tmp_path: Path) -> None:
    """`perfci run tests/` on a folder of pytest-benchmark tests said "no workloads found" and pointed at
    `perfci list`: the hint names the benchmark file and the two commands that measure it."""
    from typer.testing import CliRunner

    from perfci.cli import app
    from perfci.workloads.conventional import pytest_benchmarks_in

    write(tmp_path, {"tests/test_sort.py": BENCH_TEST, "tests/test_plain.py": "def test_x():\n    pass\n"})
    write(tmp_path, {"plain/test_p.py": "def test_y():\n    pass\n"})
    assert pytest_benchmarks_in([tmp_path / "tests", tmp_path / "tests" / "test_sort.py"]) == [
        tmp_path / "tests" / "test_sort.py"  # once, though found twice; the plain test file is not one
    ]
    assert pytest_benchmarks_in([tmp_path / "plain", tmp_path / "nothere"]) == []
    res = CliRunner().invoke(app, ["run", str(tmp_path / "tests")])
    said = " ".join(res.stderr.split())
    assert res.exit_code == 2 and "no cases to run: no workloads found." in said, said
    assert f"{tmp_path / 'tests' / 'test_sort.py'} is a pytest benchmark, not a perfci workload" in said, said
    assert f"`pytest {tmp_path / 'tests'} --perfci-out DIR`" in said
    assert f"`perfci ab REV --pytest {tmp_path / 'tests'}`" in said
    plain = CliRunner().invoke(app, ["run", str(tmp_path / "plain")])
    assert plain.exit_code == 2 and "'perfci list'" in plain.stderr, plain.stderr
