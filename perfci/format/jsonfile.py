"""JSON files: reading any JSON file perfci takes as input with one clear error for every way it can be unreadable,
and writing atomically (a reader never sees half a file).

msgspec parses; where it refuses a text, `explain_unparsable` finds the words with Python's json module (a slower
path only a bad file takes): the line and column of a syntax error, the JSON path of a NaN, an infinity or a number
beyond a float, of a lone UTF-16 surrogate, or the nesting that is too deep."""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from perfci.errors import ResultsFormatError

MAX_NESTING = 1_024  # levels of nesting perfci reads
FLOAT_MAX = 1.7976931348623157e308
# how msgspec says a text is not JSON it reads (invalid UTF-8 inside a string is a UnicodeDecodeError)
UNPARSABLE = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)


MAX_STREAM_BYTES = 2 * 1024**3  # what perfci reads from a pipe or a device (`/dev/zero` filled the memory)


def read_bytes(path: Path, kind: str) -> bytes:
    """A file's bytes; from a pipe or a device (process substitution, `/dev/stdin`) at most MAX_STREAM_BYTES."""
    try:
        with open(path, "rb") as f:
            if os.path.isfile(path):
                return f.read()
            chunks, size = [], 0
            while chunk := f.read(1 << 20):
                size += len(chunk)
                if size > MAX_STREAM_BYTES:
                    raise ResultsFormatError(
                        f"{path}: {kind} file is not a regular file and gave more than {MAX_STREAM_BYTES:,} bytes; "
                        "perfci stopped reading it."
                    )
                chunks.append(chunk)
            return b"".join(chunks)
    except FileNotFoundError:
        raise ResultsFormatError(f"{path}: {kind} file not found.") from None
    except OSError as exc:
        raise ResultsFormatError(f"{path}: cannot read {kind} file ({exc}).") from None


def parse_json(data: bytes, source: str, kind: str) -> Any:
    """Plain JSON values from `data`, or one ResultsFormatError naming `source` and the place. An integer beyond
    a float's range is refused as an infinity is: every number perfci reads becomes a float somewhere."""
    try:
        doc = msgspec.json.decode(data)
    except UNPARSABLE:
        raise explain_unparsable(data, source, kind) from None
    if _first_place(doc, _huge_int) is not None:
        raise explain_unparsable(data, source, kind)
    return doc


def _huge_int(node: Any) -> bool:
    return type(node) is int and not -FLOAT_MAX <= node <= FLOAT_MAX


def parse_json_text(text: str, source: str, kind: str) -> Any:
    return parse_json(text.encode("utf-8", "surrogatepass"), source, kind)


def write_atomic(path: Path, data: bytes) -> None:
    """`data` into `path` through a temporary file beside it, renamed over `path` once whole: a reader never sees half
    a file. The temporary file's name is unique (two writers of one path do not share one) and it is removed when
    writing fails. A folder is refused naming `path`; a device or a pipe (`/dev/stdout`, `/dev/full`) is written
    into, never replaced by a file (`--out /dev/full` run as root turned the device into a 741 KB file)."""
    if path.is_symlink():  # the file it points to is written (the link was replaced by a file)
        path = Path(os.path.realpath(path))
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder; give the name of a file to write", str(path))
    if path.exists() and not path.is_file():
        try:
            with path.open("wb") as device:
                device.write(data)
        except OSError as exc:  # a write's error names no file: named here
            raise type(exc)(exc.errno, exc.strerror, str(path)) from None
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # `--out afile/x.json`: "afile: File exists."
        raise NotADirectoryError(errno.ENOTDIR, "a file is in the way of the folder to write in", str(path)) from None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # named by the file asked for, not the temporary one
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it 0600; a results file is as readable as any other
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once, at import: setting it to read it is not safe beside other threads


def json_text(doc: Any) -> str:
    """`doc` as JSON indented by two spaces, non-ASCII characters as they are (non-finite numbers as null)."""
    return msgspec.json.format(msgspec.json.encode(doc), indent=2).decode("utf-8")


# --- the words for a text that does not parse ---------------------------------------------------------------


def explain_unparsable(data: bytes, source: str, kind: str) -> ResultsFormatError:
    """Why `data` is not JSON perfci reads, as one error naming the place."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ResultsFormatError(f"{source}: cannot read {kind} file ({exc}).")
    try:
        doc = json.loads(text, parse_constant=_refuse_constant, parse_float=_checked_float, parse_int=_checked_int)
    except _NonFinite as exc:
        return ResultsFormatError(
            f"{source}: invalid {kind} file at {_non_finite_place(text)}: {exc} is not a finite number.",
            hint="perfci reads only finite numbers",
        )
    except json.JSONDecodeError as exc:
        return ResultsFormatError(
            f"{source}: {kind} file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "it may be truncated.",
        )
    except RecursionError:
        return _too_deep(source, kind)
    except ValueError as exc:  # an integer of thousands of digits
        return ResultsFormatError(f"{source}: {kind} file cannot be parsed ({str(exc)[:200]}).")
    where = _surrogate_place(doc)
    if where is not None:
        return ResultsFormatError(f"{source}: invalid {kind} file at {where}: a string holds a lone UTF-16 surrogate.")
    return _too_deep(source, kind)  # what msgspec refuses and json reads: nesting beyond the recursion limit


def _too_deep(source: str, kind: str) -> ResultsFormatError:
    return ResultsFormatError(
        f"{source}: {kind} file nests deeper than {MAX_NESTING:,} levels, which perfci does not read."
    )


def place(key: object) -> str:
    """A key or index as a step of a JSON path in a one-line message (control characters escaped)."""
    return repr(key)[1:-1] if isinstance(key, str) else str(key)


class _NonFinite(ValueError):
    """A NaN, an infinity, or a number beyond the range of a float."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _checked_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _NonFinite(literal if len(literal) < 40 else literal[:37] + "...")
    return value


def _checked_int(literal: str) -> int:
    if len(literal) > 300:  # beyond any float: no count, size or time perfci reads is that large
        raise _NonFinite(literal[:37] + "...")
    return int(literal)


class _Marker:
    def __init__(self, literal: str) -> None:
        self.literal = literal


def _mark_float(literal: str) -> Any:
    value = float(literal)
    return value if math.isfinite(value) else _Marker(literal)


def _non_finite_place(text: str) -> str:
    """The JSON path of the first non-finite number in `text` (parsed again, with markers)."""
    try:
        doc = json.loads(
            text,
            parse_constant=_Marker,
            parse_float=_mark_float,
            parse_int=lambda s: _Marker(s) if len(s) > 300 else int(s),
        )
    except (ValueError, RecursionError):
        return "<unknown>"
    return _first_place(doc, lambda node: isinstance(node, _Marker)) or "<unknown>"


def _surrogate_place(doc: Any) -> str | None:
    def lone(node: Any) -> bool:
        try:
            node.encode("utf-8")
            return False
        except UnicodeEncodeError:
            return True

    return _first_place(doc, lambda node: isinstance(node, str) and lone(node), keys=True)


def _first_place(doc: Any, found: Any, keys: bool = False) -> str | None:
    stack: list[tuple[Any, tuple[str, ...]]] = [(doc, ())]
    while stack:
        node, where = stack.pop()
        if found(node):
            return "/".join(where) or "<top>"
        if isinstance(node, dict):
            items = list(node.items())
            stack.extend(reversed([(v, (*where, place(k))) for k, v in items]))
            if keys:
                stack.extend((k, (*where, place(k))) for k, _ in items)
        elif isinstance(node, list):
            stack.extend(reversed([(v, (*where, str(i))) for i, v in enumerate(node)]))
    return None


def write_text_atomic(path: Path, text: str) -> None:
    """`text` as UTF-8 through `write_atomic`: a report cut off by a full disk was left as the artifact."""
    write_atomic(path, text.encode("utf-8"))
