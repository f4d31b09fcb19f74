"""Property-based tests of every loader: random documents, and mutations of valid ones (truncation, type swaps,
deleted keys, huge and non-finite numbers, hostile strings). The only allowed outcomes are a valid result or one
`PerfciError` with exit code 2 and a one-line message; through the CLI, exit 2 and no traceback.

Inputs per loader: FUZZ_EXAMPLES (2,000 by default, split between random and mutated documents); set
PERFCI_FUZZ_EXAMPLES for a larger run by hand (docs/reliability.md)."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from perfci.cli import app
from perfci.compare.baselines import load_baseline
from perfci.compare.decide import DecisionSettings, compare_runs
from perfci.compare.expected import parse_expected
from perfci.config import load_config
from perfci.errors import PerfciError
from perfci.format.comparison import comparison_to_dict
from perfci.format.jsonfile import parse_json_text
from perfci.format.model import RunResult
from perfci.format.schema import load_results
from perfci.importers.pytest_benchmark import import_pytest_benchmark
from perfci.metrics.registry import threshold_keys
from perfci.store.history import HistoryStore
from tests.formats import parse_comparison, parse_results

GOLDEN = Path(__file__).parent.parent / "golden"
FUZZ_EXAMPLES = int(os.environ.get("PERFCI_FUZZ_EXAMPLES", "2000"))
RANDOM_SHARE = 4  # one input in four is a random document, the rest mutations of a valid one

FUZZ = settings(
    max_examples=FUZZ_EXAMPLES - FUZZ_EXAMPLES // RANDOM_SHARE,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
FUZZ_RANDOM = settings(FUZZ, max_examples=FUZZ_EXAMPLES // RANDOM_SHARE)

# ---- the inputs ----------------------------------------------------------------------------------------------

HOSTILE = [
    "",
    " ",
    "\n",
    "a\nb",
    "\x00",
    "\u202e",
    "\ud800",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "${HOME}",
    "%s%n",
    "re:(",
    "re:(a+)+$",
    "[",
    "*" * 300,
    "é" * 1000,
    "ok",
    "lower",
    "cpu",
    "latency",
    "nan",
    "inf",
    "1e999",
]
SPECIAL = [0, -1, 1, 2**63, -(2**63), 10**400, 0.0, -0.0, 1e-320, 1e308, -1e308, math.nan, math.inf, -math.inf, True]
HOSTILE_STRINGS = st.sampled_from(HOSTILE)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    HOSTILE_STRINGS,
    st.sampled_from(SPECIAL),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.text(max_size=10), HOSTILE_STRINGS), inner, max_size=5),
    ),
    max_leaves=20,
)
DEEP = json.loads("[" * 400 + "]" * 400)
OPS = ("delete", "value", "number", "string", "empty", "deep", "duplicate")


def _paths(doc: Any) -> list[tuple[Any, ...]]:
    """Every place in a document (its keys and indexes), the top included."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        node, prefix = stack.pop()
        out.append(prefix)
        if isinstance(node, dict):
            stack.extend((v, (*prefix, k)) for k, v in node.items())
        elif isinstance(node, list) and node is not DEEP:
            stack.extend((v, (*prefix, i)) for i, v in enumerate(node))
    return out


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-(2**70), 2**70)
    if kind == 3:
        return rng.uniform(-1e6, 1e6)
    if kind == 4:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(12)))
    if kind == 5:
        return rng.choice(HOSTILE)
    if kind == 6:
        return rng.choice(SPECIAL)
    if kind == 7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(HOSTILE): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _mutate(doc: Any, rng: random.Random) -> Any:
    """One mutation at a random place: delete it, swap its type, a huge or non-finite number, a hostile string,
    an empty or deeply nested container, a duplicated list item."""
    path = rng.choice(_paths(doc))
    op = rng.choice(OPS)
    new: Any = {
        "value": lambda: _random_value(rng),
        "number": lambda: rng.choice(SPECIAL),
        "string": lambda: rng.choice(HOSTILE),
        "empty": lambda: rng.choice([[], {}, "", None]),
        "deep": lambda: DEEP,
    }.get(op, lambda: None)()
    if not path:
        return None if op == "delete" else new
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if op == "delete":
        del parent[key]
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    else:
        parent[key] = new
    return doc


def mutated(valid: Any, seed: int) -> tuple[Any, random.Random]:
    """`valid` with 1 to 3 mutations drawn from `seed` (a seeded generator: hypothesis's own draws cost
    milliseconds each, too much for thousands of inputs per loader)."""
    rng = random.Random(seed)
    doc = copy.deepcopy(valid)
    for _ in range(rng.randint(1, 3)):
        doc = _mutate(doc, rng)
    return doc, rng


def _truncated(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)] if rng.random() < 0.1 else text


def mutated_text(valid: Any, seed: int) -> str:
    doc, rng = mutated(valid, seed)
    return _truncated(json.dumps(doc), rng)  # NaN and Infinity written as Python's json module writes them


def random_text(data: st.DataObject) -> str:
    if data.draw(st.booleans(), label="garbage?"):
        return data.draw(st.text(max_size=200))
    return json.dumps(data.draw(JSON_VALUES))


SEEDS = st.integers(0, 2**64 - 1)


# ---- the outcome ---------------------------------------------------------------------------------------------


def refused_or_loaded(load: Callable[[], Any]) -> Any:
    """`load()`'s value, or None when it refused the input as it must: a PerfciError of exit code 2, one line."""
    try:
        return load()
    except PerfciError as exc:
        assert exc.exit_code == 2, str(exc)
        assert "\n" not in str(exc), f"message of more than one line: {exc!s}"
        return None


# ---- the loaders ---------------------------------------------------------------------------------------------

VALID_RESULTS = json.loads((GOLDEN / "results-v1.json").read_text())
VALID_COMPARISON = json.loads((GOLDEN / "comparison-v1.json").read_text())
VALID_PYTEST_BENCHMARK = {
    "machine_info": {"node": "host", "cpu": {"brand_raw": "Test CPU"}},
    "commit_info": {"id": "abc123", "branch": "main", "dirty": False},
    "benchmarks": [
        {
            "group": None,
            "name": "test_sum[10]",
            "fullname": "tests/test_x.py::test_sum[10]",
            "params": {"n": 10},
            "stats": {"iterations": 2, "data": [1e-5, 1.1e-5, 0.9e-5], "min": 0.9e-5},
        }
    ],
    "datetime": "2026-11-30T00:00:00.000000+00:00",
    "version": "5.1.0",
}


def _results_text(text: str) -> None:
    run = refused_or_loaded(lambda: parse_results(parse_json_text(text, "r.json", "results"), "r.json"))
    if run is not None:
        _use_run(run)


def _use_run(run: RunResult) -> None:
    """What a loaded run goes on to: a comparison with itself, written as a comparison document."""
    refused_or_loaded(lambda: comparison_to_dict(compare_runs(run, run, DecisionSettings())))


@given(SEEDS)
@FUZZ
def test_results_mutated(seed: int) -> None:
    _results_text(mutated_text(VALID_RESULTS, seed))


@given(st.data())
@FUZZ_RANDOM
def test_results_random(data: st.DataObject) -> None:
    _results_text(random_text(data))


@given(SEEDS)
@FUZZ
def test_comparison_mutated(seed: int) -> None:
    text = mutated_text(VALID_COMPARISON, seed)
    refused_or_loaded(lambda: parse_comparison(parse_json_text(text, "c.json", "comparison"), "c.json"))


@given(st.data())
@FUZZ_RANDOM
def test_comparison_random(data: st.DataObject) -> None:
    text = random_text(data)
    refused_or_loaded(lambda: parse_comparison(parse_json_text(text, "c.json", "comparison"), "c.json"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@given(SEEDS)
@FUZZ
def test_baseline_mutated(folder: Path, seed: int) -> None:
    (folder / "runner.json").write_text(mutated_text(VALID_RESULTS, seed), "utf-8", errors="surrogatepass")
    refused_or_loaded(lambda: load_baseline("runner", folder))


@given(st.data())
@FUZZ_RANDOM
def test_baseline_random(folder: Path, data: st.DataObject) -> None:
    (folder / "runner.json").write_text(random_text(data), "utf-8", errors="surrogatepass")
    refused_or_loaded(lambda: load_baseline("runner", folder))


def _import(folder: Path, text: str) -> None:
    path = folder / "bench.json"
    path.write_text(text, "utf-8", errors="surrogatepass")
    run = refused_or_loaded(lambda: import_pytest_benchmark(path))
    if run is not None:
        _use_run(run)


@given(SEEDS)
@FUZZ
def test_pytest_benchmark_mutated(folder: Path, seed: int) -> None:
    _import(folder, mutated_text(VALID_PYTEST_BENCHMARK, seed))


@given(st.data())
@FUZZ_RANDOM
def test_pytest_benchmark_random(folder: Path, data: st.DataObject) -> None:
    _import(folder, random_text(data))


@pytest.fixture(scope="module")
def store() -> HistoryStore:
    return HistoryStore("sqlite://")  # in memory


@given(SEEDS)
@FUZZ
def test_store_ingest_mutated(store: HistoryStore, seed: int) -> None:
    """Whatever a results file that loads holds, the store takes it (or refuses it with exit 2) and reads it back."""
    text = mutated_text(VALID_RESULTS, seed)
    run = refused_or_loaded(lambda: parse_results(parse_json_text(text, "r.json", "results"), "r.json"))
    if run is not None:
        refused_or_loaded(lambda: store.ingest(run, "fuzz"))
        for series in store.all_series("fuzz", "latency").values():
            assert all(math.isfinite(p.value) for p in series)


@given(st.data())
@FUZZ_RANDOM
def test_store_ingest_random(store: HistoryStore, data: st.DataObject) -> None:
    text = random_text(data)
    run = refused_or_loaded(lambda: parse_results(parse_json_text(text, "r.json", "results"), "r.json"))
    if run is not None:
        refused_or_loaded(lambda: store.ingest(run, "fuzz"))


# TOML: configuration and the expected-changes file


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list) and re.fullmatch(r"[\[\], 0-9]*", flat := json.dumps(value)):
        return flat  # nested arrays of integers (the deep ones): the same in TOML, written without recursion
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items() if v is not None) + "}"
    return '""'


def toml_text(doc: Any) -> str:
    if not isinstance(doc, dict):
        return toml_value(doc)
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for table in value:
                lines.append(f"[[{json.dumps(key)}]]")
                lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items() if v is not None]
        elif value is not None:
            lines.append(f"{json.dumps(key)} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


VALID_CONFIG = {
    "suites": ["default"],
    "devices": ["cpu"],
    "rounds": 3,
    "case_timeout_s": 60.0,
    "budget_s": 1.5,
    "runner": "ci-runner",
    "threads": 1,
    "cpus": "0-1",
    "speed_reference": False,
    "gpu_mode": "hot",
    "history_noise": True,
    "thresholds": {"kernels.*": {"latency": 0.03, "memory": 0.01}},
}
VALID_EXPECTED = {
    "version": 1,
    "change": [{"case": "default.matmul*", "metric": "latency", "max_change": 0.1, "reason": "exact softmax"}],
}


def _toml(valid: Any, seed: int) -> str:
    doc, rng = mutated(valid, seed)
    return _truncated(toml_text(doc), rng)


def _config(folder: Path, text: str) -> None:
    path = folder / "perfci.toml"
    path.write_text(text, "utf-8", errors="surrogatepass")
    refused_or_loaded(lambda: load_config(path, metric_keys=threshold_keys()))


@given(SEEDS)
@FUZZ
def test_config_mutated(folder: Path, seed: int) -> None:
    _config(folder, _toml(VALID_CONFIG, seed))


@given(st.data())
@FUZZ_RANDOM
def test_config_random(folder: Path, data: st.DataObject) -> None:
    _config(folder, toml_text(data.draw(JSON_VALUES)) if data.draw(st.booleans()) else data.draw(st.text()))


@given(SEEDS)
@FUZZ
def test_expected_mutated(seed: int) -> None:
    text = _toml(VALID_EXPECTED, seed)
    refused_or_loaded(lambda: parse_expected(text, "perfci-expected.toml"))


@given(st.data())
@FUZZ_RANDOM
def test_expected_random(data: st.DataObject) -> None:
    text = toml_text(data.draw(JSON_VALUES)) if data.draw(st.booleans()) else data.draw(st.text())
    refused_or_loaded(lambda: parse_expected(text, "perfci-expected.toml"))


def test_valid_documents_load(folder: Path) -> None:
    """The seeds of the mutations are valid: a mutation starts from a document every loader takes."""
    (folder / "seed.json").write_text(json.dumps(VALID_PYTEST_BENCHMARK))
    assert import_pytest_benchmark(folder / "seed.json").cases
    assert parse_comparison(VALID_COMPARISON).rows
    assert parse_results(VALID_RESULTS).cases
    (folder / "perfci.toml").write_text(toml_text(VALID_CONFIG))
    assert load_config(folder / "perfci.toml", metric_keys=threshold_keys()).rounds == 3
    assert parse_expected(toml_text(VALID_EXPECTED), "e.toml")


# ---- through the CLI: exit 2, one line, no traceback ---------------------------------------------------------

CLI_CASES = [
    ("nan sample", lambda d: d["cases"][0]["rounds"][0]["samples"].__setitem__(0, math.nan)),
    ("inf sample", lambda d: d["cases"][0]["rounds"][0]["samples"].__setitem__(1, math.inf)),
    ("huge number", lambda d: d["cases"][0].__setitem__("flops", 10**400)),
    ("type swap", lambda d: d["cases"][0].__setitem__("rounds", "many")),
    ("deleted key", lambda d: d.pop("cases")),
]


@pytest.mark.parametrize(("name", "mutation"), CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_refuses_with_exit_2(tmp_path: Path, name: str, mutation: Callable[[dict[str, Any]], Any]) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(VALID_RESULTS))
    bad_doc = copy.deepcopy(VALID_RESULTS)
    mutation(bad_doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_doc))
    runner = CliRunner()
    for args in (["compare", str(good), str(bad)], ["report", str(bad), "--out", str(tmp_path / "rep")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
        assert isinstance(result.exception, SystemExit), result.exception
        assert "bad.json" in result.output
    bench = tmp_path / "bench.json"
    bench_doc = copy.deepcopy(VALID_PYTEST_BENCHMARK)
    bench_doc["benchmarks"][0]["stats"]["data"][0] = math.nan
    bench.write_text(json.dumps(bench_doc))
    result = runner.invoke(app, ["import", "pytest-benchmark", str(bench), "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "benchmarks/0/stats/data/0" in result.output


def test_cli_names_the_place_of_a_nan_sample(tmp_path: Path) -> None:
    doc = copy.deepcopy(VALID_RESULTS)
    doc["cases"][1]["rounds"][1]["samples"][3] = math.nan
    bad = tmp_path / "nan.json"
    bad.write_text(json.dumps(doc))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(VALID_RESULTS))
    result = CliRunner().invoke(app, ["compare", str(good), str(bad)])
    assert result.exit_code == 2
    assert "cases/1/rounds/1/samples/3" in result.output
    with pytest.raises(PerfciError, match="cases/1/rounds/1/samples/3"):
        load_results(bad)


BENCH_MUTATIONS = [
    ("datetime past UTC's range", lambda d: d.__setitem__("datetime", "9999-12-31T23:00:00-05:00"), "out of range"),
    ("datetime before it", lambda d: d.__setitem__("datetime", "0001-01-01T00:30:00+01:00"), "out of range"),
    ("zero iterations", lambda d: d["benchmarks"][0]["stats"].__setitem__("iterations", 0), "iterations: 0 is not"),
    ("a timing below 1 ps", lambda d: d["benchmarks"][0]["stats"]["data"].__setitem__(0, 1e-320), "resolution"),
    ("a timing that overflows", lambda d: d["benchmarks"][0]["stats"]["data"].__setitem__(0, 1e308), "x 2 iterations"),
    ("one name twice", lambda d: d["benchmarks"].append(copy.deepcopy(d["benchmarks"][0])), "benchmarks 0 and 1"),
    ("a timing past 1e7 s", lambda d: d["benchmarks"][0]["stats"]["data"].__setitem__(0, 2e7), "largest sample"),
    ("too many iterations", lambda d: d["benchmarks"][0]["stats"].__setitem__("iterations", 10**12), "largest sample"),
]


@pytest.mark.parametrize(("name", "mutation", "says"), BENCH_MUTATIONS, ids=[m[0] for m in BENCH_MUTATIONS])
def test_import_refuses_a_bad_pytest_benchmark_file_naming_the_place(
    tmp_path: Path, name: str, mutation: Callable[[dict[str, Any]], Any], says: str
) -> None:
    """Each of these was a traceback with exit 1 (the gate's "regression"), a zero taken as one, or an error that
    named "the results document to write" instead of the file and benchmark."""
    doc = copy.deepcopy(VALID_PYTEST_BENCHMARK)
    mutation(doc)
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["import", "pytest-benchmark", str(bench), "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and says in result.output and "bench.json" in result.output
    assert not (tmp_path / "r.json").exists()


def test_a_file_of_a_pytest_benchmark_version_perfci_does_not_know_is_imported_with_a_warning(tmp_path: Path) -> None:
    doc = copy.deepcopy(VALID_PYTEST_BENCHMARK)
    doc["version"] = "999.0"
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["import", "pytest-benchmark", str(bench), "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert "warning: written by pytest-benchmark '999.0', a version perfci does not know (it reads 3.x, 4.x, 5.x)" in (
        result.stderr
    )
    known = CliRunner().invoke(
        app, ["import", "pytest-benchmark", _bench_file(tmp_path), "--out", str(tmp_path / "k.json")]
    )
    assert known.exit_code == 0 and "warning" not in known.stderr


def _bench_file(folder: Path) -> str:
    path = folder / "known.json"
    path.write_text(json.dumps(VALID_PYTEST_BENCHMARK))
    return str(path)
