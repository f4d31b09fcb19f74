"""Memory sizes as people write them (`8GiB`, `512MB`, `1000000`)."""

from __future__ import annotations

import re

from perfci.errors import UsageError

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 2**10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 2**20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 2**30,
    "t": 10**12,
    "tb": 10**12,
    "tib": 2**40,
}


def parse_size(text: str) -> int:
    """`8GiB`, `512MB`, `1000000` -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _SIZE_UNITS:
        raise UsageError(f"cannot read {text!r} as a memory size.", hint="write it like 8GiB, 512MiB or 2GB")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


MEMORY_LIMIT_RANGE = (64 * 2**20, 2**60)  # a worker's limit: what Python itself needs, to an exbibyte


def memory_limit_bytes(text: str, where: str = "--memory-limit") -> int:
    """`--memory-limit` / $PERFCI_MEMORY_LIMIT (`where`: which of them gave `text`, named in the error) in bytes;
    UsageError outside MEMORY_LIMIT_RANGE (`0` or `1B` made every case fail as out of memory, and 10^23 GiB was
    taken)."""
    example = f"{where}=8GiB" if where.startswith("$") else f"{where} 8GiB"
    try:
        limit = parse_size(text)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}", hint=f"e.g. {example.lstrip('$')}") from None
    low, high = MEMORY_LIMIT_RANGE
    if not low <= limit <= high:
        raise UsageError(f"{where}: {text!r} is not between 64 MiB and 1 EiB.", hint=f"e.g. {example.lstrip('$')}")
    return limit
