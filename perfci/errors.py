"""Error types. Each carries one clear sentence and an optional hint; the CLI maps them to exit codes."""

from __future__ import annotations


class PerfciError(Exception):
    """Base class: a failure that the CLI reports as one line plus a hint."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class UsageError(PerfciError):
    """Bad command-line usage."""


class ConfigError(PerfciError):
    """Configuration file problem: unknown key, wrong type, bad pattern, missing path."""


class ResultsFormatError(PerfciError):
    """A results file that is truncated, malformed, of an unknown version or fails validation."""


class WorkloadDefinitionError(PerfciError):
    """A workload file that cannot be imported or declares an invalid workload."""


class NoCasesError(WorkloadDefinitionError):
    """The sources and filters left no case to measure or compare."""


class InfrastructureError(PerfciError):
    """The machinery failed: worker could not start, device missing, git failed."""

    exit_code = 3
