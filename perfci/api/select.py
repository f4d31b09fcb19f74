"""Which cases run: discovery of the named sources, then the filters (`-k`, suites, devices).

The PATHS given, else the configuration's `paths`, plus the built-in suites named (else the configuration's
`suites`); the built-in default suite when none of these name anything. Then the filters: `-k` (substring, glob
or `re:` on the case id, see perfci.patterns), suites, devices (default: the configuration's `devices`, else the
devices present on this runner; cases for other devices are counted, so the CLI can say so).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perfci.api.settings import Settings
from perfci.errors import UsageError, WorkloadDefinitionError
from perfci.format.model import CaseSpec
from perfci.patterns import CasePattern, case_pattern
from perfci.profilers.nvml import gpu_inventory
from perfci.workloads.discovery import BUILTIN_SUITES, all_cases_from_sources
from perfci.workloads.pytest_cases import PYTEST_SUITE
from perfci.workloads.selection import Selection, plan_sources, unknown_suites


def compile_patterns(patterns: list[str] | tuple[str, ...] | None) -> tuple[CasePattern, ...]:
    """`-k` patterns, compiled; a bad one is a usage error."""
    try:
        return tuple(case_pattern(p) for p in patterns or ())
    except ValueError as exc:
        raise UsageError(f"-k: {exc}.") from None


def present_devices() -> tuple[str, ...]:
    """cpu, and cuda when NVML sees an NVIDIA GPU (cheap: does not import torch)."""
    return ("cpu", "cuda") if gpu_inventory().gpus else ("cpu",)


@dataclass(frozen=True)
class CaseChoice:
    """The cases to run, and the ones discovered but left out (with the reason), for `list --all`."""

    cases: list[CaseSpec]
    left_out: list[tuple[CaseSpec, str]]
    other_devices: int  # cases dropped only because their device is not selected (and none was named)
    deselected: tuple[CaseSpec, ...] = ()  # discovered, not matched by -k or --suite

    def other_device_names(self) -> list[str]:
        return sorted({s.device for s, r in self.left_out if r.startswith("device ")})


def _unique(found: list[tuple[CaseSpec, str | None]]) -> list[tuple[CaseSpec, str | None]]:
    """Each case once, in the order first found: a file named twice (`perf perf/wl.py`) gives its cases twice,
    and they are one case each (the runner keeps one state per id). The same id from two files is an error."""
    ids: dict[str, CaseSpec] = {}
    kept: list[tuple[CaseSpec, str | None]] = []
    for spec, reason in found:
        if spec.id in ids:
            if ids[spec.id].source != spec.source:
                raise WorkloadDefinitionError(
                    f"case {spec.id} is defined twice: in {ids[spec.id].source} and in {spec.source}.",
                    hint="rename one workload or file",
                )
            continue
        ids[spec.id] = spec
        kept.append((spec, reason))
    return kept


def _check_suites(found: list[tuple[CaseSpec, str | None]], wanted: tuple[str, ...]) -> None:
    unknown = unknown_suites([s for s, _ in found], wanted)
    if unknown:
        mine = sorted({s.suite for s, _ in found} - set(BUILTIN_SUITES))
        raise UsageError(
            f"unknown suite {unknown[0]!r}.",
            hint=f"built-in suites: {', '.join(BUILTIN_SUITES)}" + (f"; yours: {', '.join(mine)}" if mine else ""),
        )


def select_cases(
    settings: Settings,
    paths: list[Path] | None = None,
    patterns: list[str] | None = None,
    suites: list[str] | None = None,
    devices: list[str] | None = None,
    pytest: list[Path] | None = None,
) -> CaseChoice:
    """`pytest`: pytest files or folders whose benchmark tests are cases too (named by path, so a suite filter
    keeps them)."""
    wanted_suites = settings.suites(suites)
    compiled = compile_patterns(patterns)
    found = _unique(all_cases_from_sources(plan_sources(settings.paths(paths), wanted_suites, pytest or ())))
    _check_suites(found, wanted_suites)
    explicit_devices = settings.devices(devices)
    kept_suites = (*wanted_suites, PYTEST_SUITE) if wanted_suites and pytest else wanted_suites
    by_rest = Selection(patterns=compiled, suites=kept_suites)
    by_device = Selection(devices=explicit_devices or present_devices())
    chosen, left_out, other = [], [], 0
    deselected: list[CaseSpec] = []
    for spec, reason in found:
        if reason is not None:
            left_out.append((spec, reason))
        elif not by_rest.keeps(spec):
            deselected.append(spec)
        elif not by_device.keeps(spec):
            other += 1
            left_out.append((spec, f"device {spec.device} not selected"))
        else:
            chosen.append(spec)
    return CaseChoice(chosen, left_out, 0 if explicit_devices else other, tuple(deselected))


def case_row(spec: CaseSpec, reason: str | None) -> dict[str, object]:
    """A case as `perfci list --format json` shows it."""
    return {
        "id": spec.id,
        "workload": spec.workload,
        "suite": spec.suite,
        "params": spec.params,
        "device": spec.device,
        "tags": list(spec.tags),
        "source": spec.source,
        "left_out": reason,
    }


def nothing_selected(
    patterns: list[str] | None,
    suites: list[str] | None,
    devices: list[str] | None,
    choice: CaseChoice | None = None,
) -> str:
    """Why nothing was selected, naming what was given: `-k 'x' matches no case`; with nothing given, what left
    every case out (CUDA-only workloads on a runner without a GPU read "no workloads found"), or no workloads at
    all."""
    given = [f"-k {p!r}" for p in patterns or ()] + [f"--suite {s}" for s in suites or ()]
    given += [f"--device {d}" for d in devices or ()]
    skipped = [reason for _, reason in choice.left_out if not reason.startswith("device ")] if choice else []
    if given and skipped:  # `-k fp16` on a CPU: the case exists, its workload's skip rule left it out
        return (
            f"{', '.join(given)} {'matches' if len(given) == 1 else 'match'} no case that runs here; "
            f"{len(skipped)} case(s) were left out by their workloads' skip rules (e.g. {skipped[0]})"
        )
    if not given:
        if choice is not None and choice.left_out:
            devices_missing = choice.other_device_names()
            why = [f"{len(choice.left_out) - len(skipped)} for {', '.join(devices_missing)} (no such device on this "
                   "runner)"] if devices_missing else []  # fmt: skip
            why += [f"{len(skipped)} by their workloads' skip rules (e.g. {skipped[0]})"] if skipped else []
            return f"every one of the {len(choice.left_out)} case(s) found was left out: {'; '.join(why)}"
        return "no workloads found"
    return f"{', '.join(given)} {'matches' if len(given) == 1 else 'match'} no case"
