"""Write the JSON Schemas of the current results and comparison versions, generated from their definitions, to
perfci/format/schemas/ (older versions' files stay as published). Run from the repository root after changing the
model: `python -m tests.tools.write_schemas`; tests/unit/test_schema.py fails while the files are stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfci.format.codec import DocumentFormat
from perfci.format.comparison import COMPARISON
from perfci.format.schema import RESULTS

SCHEMAS = Path(__file__).resolve().parents[2] / "perfci" / "format" / "schemas"
FORMATS: tuple[DocumentFormat[Any], ...] = (RESULTS, COMPARISON)


def schema_path(fmt: DocumentFormat[Any]) -> Path:
    return SCHEMAS / f"{fmt.kind}-v{fmt.version}.schema.json"


def schema_text(fmt: DocumentFormat[Any]) -> str:
    return json.dumps(fmt.json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    for fmt in FORMATS:
        schema_path(fmt).write_text(schema_text(fmt))
        print(schema_path(fmt))
