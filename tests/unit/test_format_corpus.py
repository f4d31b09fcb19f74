"""The one codec against the readers it replaced: every document of the fixed corpus (tests/corpus/documents.py:
valid files of both versions of both formats, 1,500 seeded mutations of them, hand-made hostile texts) is accepted
or refused as the earlier readers (a hand-written JSON Schema checked by `jsonschema` and a compiled predicate, a
msgspec mirror, byte scanners) did, as recorded in tests/data/format-corpus.json by tests/tools/record_format_corpus.py
before they were removed; a refusal names a JSON path wherever the earlier one did; and the JSON Schema generated
from the definition accepts exactly the documents the reader accepts, apart from what a schema cannot say."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from perfci.errors import ResultsFormatError
from perfci.format.comparison import COMPARISON
from perfci.format.schema import RESULTS
from tests.corpus.documents import corpus
from tests.tools.record_format_corpus import outcome

AFTER_DECODING = re.compile(
    r"is not a date and time|appears more than once|have the same index|nests deeper|not a finite|lone UTF-16 surrogate"
    r"|number out of range"  # a literal past a double (1e400): an infinity to JSON Schema
)
RECORDED = json.loads((Path(__file__).parents[1] / "data" / "format-corpus.json").read_text())
DOCUMENTS = list(corpus())

# The one deliberate difference: JSON Schema counts a number with a zero fraction (1e308, 100000000.0) as an
# integer; the codec reads an integer field only from an integer literal, as perfci writes it.
INTEGRAL_FLOATS = {"v2/55", "v2/464", "v2/479"}
# Results format 3 (a round's device clock) came after the corpus was recorded: its version-2 document relabelled
# version 3, refused then as an unknown version, is now a valid version-3 document.
NOW_KNOWN_VERSIONS = {"hand/version-3"}


def test_the_corpus_is_the_recorded_one() -> None:
    assert sorted(name for name, _, _ in DOCUMENTS) == sorted(RECORDED)
    assert len(DOCUMENTS) > 1_500


def test_the_codec_accepts_and_refuses_what_the_earlier_readers_did(tmp_path: Path) -> None:
    differences, unplaced = [], []
    for name, kind, text in DOCUMENTS:
        path = tmp_path / "doc.json"
        path.write_text(text, "utf-8", errors="surrogatepass")
        now, before = outcome(kind, path), RECORDED[name]
        if name in INTEGRAL_FLOATS:
            assert before[0] == "ok" and now[0] == "refused", name
            continue
        if name in NOW_KNOWN_VERSIONS:
            assert before[0] == "refused" and now[0] == "ok", name
            continue
        if now[0] != before[0] or (now[0] == "ok" and now != before):
            differences.append((name, before, now))
        elif now[0] == "refused" and bool(before[1]) != bool(now[1]):
            unplaced.append((name, before, now))
    assert differences == []
    assert unplaced == []


@pytest.mark.parametrize("fmt", [RESULTS, COMPARISON], ids=lambda f: f.kind)
def test_the_generated_schema_agrees_with_the_reader(fmt) -> None:  # type: ignore[no-untyped-def]
    """For every corpus document of the current version (or of one that reads unchanged as it, checked as the
    current one) that is JSON: the generated JSON Schema accepts it exactly when the reader does, but for what a
    schema cannot say (the checks after decoding: real dates, unique ids; nesting depth; what the text holds:
    NaN, infinities, lone surrogates) and the integral floats."""
    validator = Draft202012Validator(fmt.json_schema())
    checked = 0
    for name, kind, text in DOCUMENTS:
        if kind != fmt.kind or name in INTEGRAL_FLOATS:
            continue
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(doc, dict) or doc.get("schema") != fmt.name or doc.get("schema_version") not in fmt.unchanged:
            continue
        if type(doc["schema_version"]) is not int:  # 2.0: the same number to JSON Schema, not a version to perfci
            continue
        doc["schema_version"] = fmt.version
        try:
            valid = validator.is_valid(doc)
        except RecursionError:
            continue
        accepted = RECORDED[name][0] == "ok" or name in NOW_KNOWN_VERSIONS
        if accepted:
            assert valid, name
        elif valid:  # refused by the reader only: it must be a check a schema cannot express
            with pytest.raises(ResultsFormatError) as refused:
                fmt.decode(text.encode("utf-8", "surrogatepass"), name)
            assert AFTER_DECODING.search(refused.value.message), refused.value.message
        checked += 1
    assert checked > 150
