"""A fixed corpus of results and comparison documents: valid files, seeded mutations of them, and hand-made
hostile texts. The generator is frozen here (not shared with other tests), so the same seed gives the same
document for as long as the corpus's recorded outcomes (tests/data/format-corpus.json) are kept.

Each entry is `(name, kind, text)`: `kind` is "results" or "comparison", `text` the file's content."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent.parent / "golden"

HOSTILE = [
    "",
    " ",
    "a\nb",
    "\x00",
    "\u202e",
    "\ud800",
    "<script>",
    "%s%n",
    "*" * 300,
    "é" * 200,
    "ok",
    "lower",
    "cpu",
    "nan",
    "inf",
    "1e999",
    "2026-13-45T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "paired",
    "regression",
]
SPECIAL = [
    0,
    -1,
    1,
    2**63,
    -(2**63),
    10**400,
    0.0,
    -0.0,
    1e-320,
    1e308,
    -1e308,
    math.nan,
    math.inf,
    -math.inf,
    True,
    1e-13,
    1e8,
    10**19,
    2**53 + 1,
]
DEEP = json.loads("[" * 300 + "]" * 300)
OPS = ("delete", "value", "number", "string", "empty", "deep", "duplicate", "extra")


def _paths(doc: Any) -> list[tuple[Any, ...]]:
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
    elif op == "extra" and isinstance(parent, dict):
        parent[rng.choice(["zzz", "note", "kind", "extra_key"])] = _random_value(rng)
    else:
        parent[key] = new
    return doc


def _text(doc: Any, rng: random.Random) -> str:
    text = json.dumps(doc)  # NaN and Infinity as Python's json module writes them
    return text[: rng.randrange(len(text) + 1)] if rng.random() < 0.05 else text


def mutated(valid: Any, seed: int) -> str:
    rng = random.Random(seed)
    doc = copy.deepcopy(valid)
    for _ in range(rng.randint(1, 3)):
        doc = _mutate(doc, rng)
    return _text(doc, rng)


def valid_results_v2() -> dict[str, Any]:
    """The golden results file as version 2, with typed telemetry and fingerprint keys and a metric note."""
    doc = json.loads((GOLDEN / "results-v1.json").read_text())
    doc["schema_version"] = 2
    doc["fingerprint"].update({"libraries": {"numpy": "2.1"}, "memory_total_bytes": 2**33, "peaks": {}})
    for case in doc["cases"]:
        for r in case["rounds"]:
            r["telemetry"] = {
                "timer": "perf_counter",
                "work_sources": {"flops": "declared"},
                "memory_host_bytes": 4096,
                "reference_per_call_s": [1e-6, 2e-6],
                "notes": {"x": 1},
            }
        case["metrics"][0]["note"] = "above the measured peak"
    return doc


def _hand_made(v2: dict[str, Any]) -> Iterator[tuple[str, str]]:
    text = json.dumps(v2)
    sample = json.dumps(v2["cases"][0]["rounds"][0]["samples"][0])
    yield "nan-literal", text.replace(sample, "NaN", 1)
    yield "infinity-literal", text.replace(sample, "-Infinity", 1)
    yield "huge-exponent", text.replace(sample, "1e400", 1)
    yield "huge-int-sample", text.replace(sample, "1" + "0" * 310, 1)
    yield "int-19-digits-pid", text.replace('"pid": ', '"pid": 1234567890123456789', 1)
    yield "int-20-digits-pid", text.replace('"pid": ', '"pid": 12345678901234567890', 1)
    yield "lone-surrogate", text.replace('"cases": [{"id": "', '"cases": [{"id": "\\ud800', 1)
    yield "surrogate-pair", text.replace('"cases": [{"id": "', '"cases": [{"id": "\\ud83d\\ude00', 1)
    yield "bom", "\ufeff" + text
    yield "trailing-garbage", text + " x"
    yield "trailing-space", text + "\n\n  "
    yield "empty", ""
    yield "not-json", "hello"
    yield "array", "[]"
    yield "deep-1000", text.replace('"settings": {', '"settings": {"d": ' + "[" * 1000 + "]" * 1000 + ", ", 1)
    yield "deep-1100", text.replace('"settings": {', '"settings": {"d": ' + "[" * 1100 + "]" * 1100 + ", ", 1)
    yield "duplicate-key-top", text[:-1] + ', "run_id": "again"}'
    yield "version-3", text.replace('"schema_version": 2', '"schema_version": 3', 1)
    yield "version-0", text.replace('"schema_version": 2', '"schema_version": 0', 1)
    yield "version-string", text.replace('"schema_version": 2', '"schema_version": "2"', 1)
    yield "version-true", text.replace('"schema_version": 2', '"schema_version": true', 1)
    yield "version-float", text.replace('"schema_version": 2', '"schema_version": 2.0', 1)
    yield "other-schema", text.replace('"perfci.results"', '"perfci.comparison"', 1)
    yield "bad-date", text.replace(v2["started_at"], "2026-02-30T00:00:00Z", 1)
    yield "year-0", text.replace(v2["started_at"], "0000-01-01T00:00:00Z", 1)
    yield "year-2300", text.replace(v2["started_at"], "2300-01-01T00:00:00Z", 1)
    doc = copy.deepcopy(v2)
    doc["cases"].append(copy.deepcopy(doc["cases"][0]))
    yield "duplicate-case-id", json.dumps(doc)
    doc = copy.deepcopy(v2)
    doc["cases"][0]["rounds"].append(copy.deepcopy(doc["cases"][0]["rounds"][0]))
    yield "duplicate-round-index", json.dumps(doc)
    doc = copy.deepcopy(v2)
    doc["fingerprint"]["custom_key"] = {"any": [1, "two"]}
    doc["settings"]["custom"] = [1, 2]
    doc["cases"][0]["rounds"][0]["telemetry"]["custom"] = {"x": None}
    yield "open-objects-unknown-keys", json.dumps(doc)
    doc = copy.deepcopy(v2)
    doc["cases"][0]["rounds"][0]["samples"] = [1, 2]
    yield "integer-samples", json.dumps(doc)
    yield "pretty", json.dumps(v2, indent=2, ensure_ascii=False)


def corpus() -> Iterator[tuple[str, str, str]]:
    """Every document of the corpus: (name, kind, text)."""
    v1 = json.loads((GOLDEN / "results-v1.json").read_text())
    v2 = valid_results_v2()
    c1 = json.loads((GOLDEN / "comparison-v1.json").read_text())
    c2 = json.loads((GOLDEN / "comparison-v2.json").read_text())
    yield "results-v1", "results", json.dumps(v1)
    yield "results-v2", "results", json.dumps(v2)
    yield "comparison-v1", "comparison", json.dumps(c1)
    yield "comparison-v2", "comparison", json.dumps(c2)
    for name, text in _hand_made(v2):
        yield f"hand/{name}", "results", text
    for seed in range(900):
        yield f"v2/{seed}", "results", mutated(v2, seed)
    for seed in range(300):
        yield f"v1/{seed}", "results", mutated(v1, 10_000 + seed)
    for seed in range(200):
        yield f"c2/{seed}", "comparison", mutated(c2, 20_000 + seed)
    for seed in range(100):
        yield f"c1/{seed}", "comparison", mutated(c1, 30_000 + seed)
