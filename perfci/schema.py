"""The versioned JSON results format: encode, decode, validate, migrate.

Every reader goes through `load_results`/`parse_results`, which validate against the JSON Schema shipped in
`perfci/schemas/`. Deliberate departure from DESIGN.md's "standard library only" for this layer: validation
uses the `jsonschema` library rather than a hand-written validator.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from perfci.errors import ResultsFormatError
from perfci.model import (
    CaseError,
    CaseResult,
    CaseSpec,
    CaseStatus,
    Direction,
    GitInfo,
    Metric,
    Round,
    RunResult,
)

SCHEMA_NAME = "perfci.results"
SCHEMA_VERSION = 1

# Migrations from version N to N+1, applied in order by `migrate`. Version 1 is the first: none yet.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


@cache
def json_schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    text = resources.files("perfci.schemas").joinpath(f"results-v{version}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "value") and isinstance(value, Direction | CaseStatus):
        return value.value
    return value


def case_to_dict(case: CaseResult) -> dict[str, Any]:
    return {
        "id": case.id,
        "workload": case.spec.workload,
        "params": dict(case.spec.params),
        "device": case.spec.device,
        "source": case.spec.source,
        "suite": case.spec.suite,
        "tags": list(case.spec.tags),
        "status": case.status.value,
        "flops": case.flops,
        "bytes": case.bytes,
        "rounds": [json_safe(asdict(r)) for r in case.rounds],
        "metrics": [json_safe({**asdict(m), "direction": m.direction.value}) for m in case.metrics],
        "errors": [asdict(e) for e in case.errors],
    }


def run_to_dict(run: RunResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA_NAME,
        "schema_version": SCHEMA_VERSION,
        "run_id": run.run_id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "fingerprint": json_safe(run.fingerprint),
        "git": asdict(run.git) if run.git else None,
        "settings": json_safe(run.settings),
        "cases": [case_to_dict(c) for c in run.cases],
    }


def dump_results(run: RunResult, path: Path) -> None:
    """Write atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(run_to_dict(run), indent=1, allow_nan=False) + "\n", "utf-8")
    tmp.replace(path)


def migrate(doc: dict[str, Any], source: str) -> dict[str, Any]:
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultsFormatError(f"{source}: 'schema_version' is missing or not an integer.")
    if version > SCHEMA_VERSION or version < 1:
        raise ResultsFormatError(
            f"{source}: results schema_version {version} is not supported (this perfci reads 1..{SCHEMA_VERSION}).",
            hint="upgrade perfci to read newer results files",
        )
    while version < SCHEMA_VERSION:
        doc = MIGRATIONS[version](doc)
        version = doc["schema_version"]
    return doc


def validate(doc: dict[str, Any], source: str) -> None:
    validator = jsonschema.Draft202012Validator(json_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "<top>"
        raise ResultsFormatError(f"{source}: invalid results file at {where}: {error.message}")


def parse_results(doc: Any, source: str = "<results>") -> RunResult:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA_NAME:
        raise ResultsFormatError(f'{source}: not a perfci results file (missing "schema": "{SCHEMA_NAME}").')
    doc = migrate(doc, source)
    validate(doc, source)
    return _decode_run(doc)


def read_json_document(path: Path, kind: str) -> Any:
    """Parse a JSON file, turning every way it can be unreadable into one clear ResultsFormatError."""
    try:
        text = Path(path).read_text("utf-8")
    except FileNotFoundError:
        raise ResultsFormatError(f"{path}: {kind} file not found.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFormatError(f"{path}: cannot read {kind} file ({exc}).") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(
            f"{path}: {kind} file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "it may be truncated.",
        ) from None


def load_results(path: Path) -> RunResult:
    return parse_results(read_json_document(path, "results"), str(path))


def _decode_run(doc: dict[str, Any]) -> RunResult:
    git = doc["git"]
    return RunResult(
        run_id=doc["run_id"],
        started_at=doc["started_at"],
        finished_at=doc["finished_at"],
        fingerprint=doc["fingerprint"],
        git=GitInfo(**git) if git else None,
        settings=doc["settings"],
        cases=tuple(_decode_case(c) for c in doc["cases"]),
    )


def _decode_case(c: dict[str, Any]) -> CaseResult:
    spec = CaseSpec(
        workload=c["workload"],
        params=c["params"],
        device=c["device"],
        source=c.get("source", ""),
        tags=tuple(c.get("tags", ())),
        suite=c.get("suite", ""),
    )
    rounds = tuple(
        Round(**{**r, "samples": tuple(r["samples"]), "telemetry": r.get("telemetry", {})}) for r in c["rounds"]
    )
    metrics = tuple(Metric(**{**m, "direction": Direction(m["direction"])}) for m in c["metrics"])
    errors = tuple(CaseError(**e) for e in c["errors"])
    return CaseResult(
        spec=spec,
        status=CaseStatus(c["status"]),
        rounds=rounds,
        metrics=metrics,
        errors=errors,
        flops=c.get("flops"),
        bytes=c.get("bytes"),
    )
