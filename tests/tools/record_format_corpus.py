"""Record what perfci's readers do with every document of the format corpus (tests/corpus/documents.py):
`["ok", n]` (read; n cases or rows) or `["refused", place]` (a ResultsFormatError; place: the JSON path its message
names, or "" where it names none). Run from the repository root:

    python -m tests.tools.record_format_corpus tests/data/format-corpus.json

The recorded file is the reference that tests/unit/test_format_corpus.py holds the readers to."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

from perfci.errors import ResultsFormatError
from tests.corpus.documents import corpus

PLACE = re.compile(r"invalid \w+ file at (.*?): ")


def outcome(kind: str, path: Path) -> list[object]:
    from perfci.format.schema import load_results
    from tests.formats import load_comparison

    try:
        if kind == "results":
            return ["ok", len(load_results(path).cases)]
        return ["ok", len(load_comparison(path).rows)]
    except ResultsFormatError as exc:
        m = PLACE.search(exc.message)
        return ["refused", m.group(1) if m else ""]


def main(out: str) -> None:
    recorded: dict[str, list[object]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, text in corpus():
            path = Path(tmp) / "doc.json"
            path.write_text(text, "utf-8", errors="surrogatepass")
            recorded[name] = outcome(kind, path)
    Path(out).write_text(json.dumps(recorded, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
