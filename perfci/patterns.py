"""Case-id patterns, shared by `-k` on the command line and by `thresholds` in the configuration.

A pattern is one of three kinds, told apart by its text:

- `re:<regex>`: a Python regular expression, searched anywhere in the case id (`re:^kernels\\.(mm|sdpa)`);
- text containing `*` or `?`: a shell-style glob that must match the *whole* case id (`kernels.*@cuda`,
  `*runtime=ort*`). Unlike `fnmatch`, `[` and `]` are literal, because every parameterised case id contains
  them (`kernels.matmul[n=512,dtype=float32]@cpu`);
- anything else: a plain substring of the case id (`matmul[n=512`, `@cuda`, `runtime=ort-int8`).

Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GLOB_CHARS = frozenset("*?")
REGEX_PREFIX = "re:"


@dataclass(frozen=True)
class CasePattern:
    text: str
    regex: re.Pattern[str]
    kind: str  # "regex" | "glob" | "substring"

    def matches(self, case_id: str) -> bool:
        if self.kind == "glob":
            return self.regex.fullmatch(case_id) is not None
        return self.regex.search(case_id) is not None


_PYTEST_EXPRESSION = re.compile(r"\s(?:or|and)\s|^\s*not\s|\(")


def pytest_expression_hint(patterns: list[str] | tuple[str, ...] | None) -> str | None:
    """A hint for a `-k` written as pytest's boolean expression (`hog or good`), which is a plain substring here."""
    for p in patterns or ():
        if not p.startswith(REGEX_PREFIX) and _PYTEST_EXPRESSION.search(p):
            words = re.split(r"\s+or\s+", p.strip())
            simple = len(words) > 1 and all(re.fullmatch(r"[\w.\[\]=,@:-]+", w) for w in words)
            negated = re.fullmatch(r"\s*not\s+([\w.\[\]=,@:-]+)\s*", p)
            if negated:
                example = f"all but {negated[1]}: -k 're:^(?!.*{re.escape(negated[1])})'"
            else:
                example = "several: " + (" ".join(f"-k {w}" for w in words) if simple else "-k A -k B")
            return (
                f"-k {p!r} is read as one substring: perfci's -k takes a substring, a glob or re:REGEX, not pytest's "
                f"expressions; repeat -k for several (any may match), or use re:; {example}"
            )
    return None


def _glob_to_regex(text: str) -> str:
    return "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in text)


def case_pattern(text: str) -> CasePattern:
    """Parse a pattern; ValueError (with the reason) when it is empty or an invalid regular expression."""
    if not text.strip():
        raise ValueError("a case pattern must not be empty")
    if text.startswith(REGEX_PREFIX):
        body = text[len(REGEX_PREFIX) :]
        if not body:
            raise ValueError("'re:' must be followed by a regular expression")
        try:
            return CasePattern(text, re.compile(body), "regex")
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
    if GLOB_CHARS & set(text):
        return CasePattern(text, re.compile(_glob_to_regex(text)), "glob")
    return CasePattern(text, re.compile(re.escape(text)), "substring")


def matches_any(patterns: tuple[CasePattern, ...], case_id: str) -> bool:
    return any(p.matches(case_id) for p in patterns)
