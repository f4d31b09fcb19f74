"""Container images for `perfci ab --base-image/--head-image`: each side's processes run inside its image.

A side in an image keeps everything else of a side (perfci/ab/revisions.py): the same working tree or worktree,
the same shim that puts the installed perfci first on PYTHONPATH. What changes is the interpreter its processes
are started with: a launcher script (perfci/ab/container_launch.py) that runs the same command in a fresh
container of the image, with stdin attached (`-i`) for the worker protocol, the working tree, the A/B's
temporary folder and the installed perfci mounted at the same paths, and the host's GPUs passed through
(`--gpus all` for docker, the CDI device `nvidia.com/gpu=all` for podman) with the capability CUPTI needs to read
the device clock (`--cap-add SYS_ADMIN`). Each container is named `perfci-<perfci pid>-<side>-<n>` and killed
with `<runtime> kill NAME` when its worker is stopped for any reason (container_launch.py says how).

Before anything is measured the runtime and both images are checked (`<runtime> image inspect IMAGE`: one
UsageError when either is missing, nothing pulled) and each image is probed like a `--base-python` environment:
its Python, the modules perfci's workers import, and the runner fingerprint as seen inside.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import perfci
from perfci.ab import container_launch
from perfci.ab.container_launch import LaunchSpec
from perfci.ab.environments import probe_interpreter
from perfci.ab.revisions import Side
from perfci.errors import UsageError
from perfci.format.model import CaseStatus, RunResult
from perfci.metrics.registry import DEVICE_TIME

INSPECT_TIMEOUT_S = 60.0
NVIDIA_DEVICE = Path("/dev/nvidiactl")  # present where the host has an NVIDIA driver loaded


@dataclass(frozen=True)
class Runtime:
    """A container runtime: the executable and which flags it takes (docker's or podman's)."""

    command: str
    flavour: str  # "docker" | "podman"


def flavour_of(command: str) -> str:
    """podman for an executable named podman*, else docker (a path to another runtime is taken to speak docker's
    command line, as nerdctl and the test stand-in do)."""
    return "podman" if Path(command).name.startswith("podman") else "docker"


def find_runtime(named: str, which: Callable[[str], str | None] = shutil.which) -> Runtime:
    """The runtime `named` (docker, podman, or a path to an executable); a UsageError when it is not there."""
    hint = "install docker or podman, or name the runtime's executable: --container-runtime PATH"
    # `.` and `..` are paths though they have no slash: `..` was looked up on PATH and said to be missing there
    a_path = os.sep in named or named in (os.curdir, os.pardir)
    if a_path and os.path.isdir(named):
        raise UsageError(f"--container-runtime {named}: is a directory, not an executable file.", hint=hint)
    if not a_path:
        path = which(named)
        if path is None:
            raise UsageError(f"--container-runtime {named}: no such executable on PATH.", hint=hint)
    elif not os.path.exists(named):
        raise UsageError(f"--container-runtime {named}: no such file.", hint=hint)
    elif not (os.path.isfile(named) and os.access(named, os.X_OK)):
        raise UsageError(f"--container-runtime {named}: the file is not executable.", hint=hint)
    else:
        path = named
    return Runtime(str(Path(path).absolute()), flavour_of(named))


_DAEMON_DOWN = re.compile(
    r"cannot connect to the docker daemon|is the docker daemon running|connection refused|no such file or directory.*"
    r"\.sock|unable to connect to podman|error during connect",
    re.IGNORECASE,
)


# how docker ("No such image: X", older ones "No such object: X") and podman ("X: image not known", "failed to
# find image") say that an image is not on the machine; only then is a pull the fix
_NO_IMAGE = re.compile(r"no such image|no such object|image not known|failed to find image", re.IGNORECASE)


def check_image(runtime: Runtime, image: str, option: str) -> None:
    """`<runtime> image inspect IMAGE`: a UsageError when the image is not on this machine (nothing is pulled: a
    pull in the middle of an A/B would be timed by nobody, and a typo should not download anything)."""
    if not image.strip() or image.startswith("-"):  # `--base-image=--help` was passed to the runtime as its option
        raise UsageError(f"{option} {image!r}: not an image name.", hint="e.g. --base-image myproject:main")
    try:
        proc = subprocess.run(
            [runtime.command, "image", "inspect", image],
            capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"{option} {image}: cannot run {runtime.command} ({exc}).") from None
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        name = Path(runtime.command).name
        if _DAEMON_DOWN.search(proc.stderr):  # the image may well be there: pulling would fail the same way
            raise UsageError(
                f"{option} {image}: {name} cannot reach its daemon ({said})",
                hint=f"start it (e.g. sudo systemctl start {name}) or point {name} at one, then run the A/B again",
            )
        if _NO_IMAGE.search(proc.stderr):
            raise UsageError(
                f"{option} {image}: no such image on this machine ({name} says: {said})",
                hint=f"pull or build it first: {name} pull {shlex.quote(image)}",
            )
        # any other failure (a broken runtime, its own configuration missing) is the runtime's, said as it said it:
        # a pull would not help
        raise UsageError(f"{option} {image}: {name} image inspect failed: {said}")


def host_has_gpus(device: Path = NVIDIA_DEVICE) -> bool:
    return device.exists()


def mounts(folders: Iterable[Path]) -> tuple[str, ...]:
    """The folders to mount (each at its own path), resolved, without those inside another one."""
    resolved = sorted({str(Path(f).resolve()) for f in folders})
    kept: list[str] = []
    for folder in resolved:
        if not any(folder == k or folder.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
            kept.append(folder)
    return tuple(kept)


def perfci_folder() -> Path:
    """The installed perfci package, which the side's shim links to."""
    return Path(perfci.__file__).resolve().parent


def write_launcher(spec: LaunchSpec, folder: Path) -> Path:
    """The side's stand-in interpreter: `folder/<side>-python`, a shell script that runs container_launch.py
    with this interpreter, isolated (no PYTHONPATH, no user site: the standard library only), and the spec."""
    folder.mkdir(parents=True, exist_ok=True)
    spec_file = folder / f"{spec.side}-container.json"
    spec_file.write_text(spec.to_json(), encoding="utf-8")
    script = folder / f"{spec.side}-python"
    launch = shlex.join([sys.executable, "-I", container_launch.__file__, str(spec_file)])
    script.write_text(f'#!/bin/sh\nexec {launch} "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return script


@dataclass(frozen=True)
class ImageSettings:
    """What `perfci ab --base-image/--head-image` was given."""

    base: str
    head: str
    runtime: str = "docker"  # docker, podman, or a path to a runtime that takes docker's command line
    python: str = "python3"  # the interpreter on the image's PATH


def image_settings(base: str | None, head: str | None, runtime: str) -> ImageSettings | None:
    """What `--base-image`, `--head-image` and `--container-runtime` ask for: None when neither image is named (one
    image alone is refused by the API, which checks the pair)."""
    for flag, image in (("--base-image", base), ("--head-image", head)):
        if image is not None and not image.strip():  # given but empty: not "the other one is missing"
            raise UsageError(f"{flag} is empty; give an image name.", hint="e.g. --base-image myproject:main")
    return None if base is None and head is None else ImageSettings(base or "", head or "", runtime)


def source_folders(sources: Iterable[str]) -> list[Path]:
    """The folders of workload sources given as absolute paths (one outside the working tree must be mounted
    too); built-in suites and other source kinds name no folder of their own."""
    found: list[Path] = []
    for source in sources:
        path = Path(source.split(":", 1)[1] if ":" in source and not source.startswith(os.sep) else source)
        if path.is_absolute() and path.exists():
            found.append(path if path.is_dir() else path.parent)
    return found


def sides_in_images(
    sides: tuple[Side, Side],
    images: ImageSettings,
    work: Path,
    folders: Sequence[Path],
    memory_bytes: int | None = None,
    gpus: bool | None = None,
) -> tuple[Side, Side]:
    """Both sides with their processes started in their images (`in_image`), after the runtime is found. `work`:
    the A/B's temporary folder (worktrees, the shim, the launchers); `folders`: the working tree and any other
    folder the workloads live in; `memory_bytes`: the workers' memory limit, given to each container (the
    supervisor measures the runtime's client, not the container). `gpus`: pass GPUs through (None: where the host
    has an NVIDIA driver)."""
    runtime = find_runtime(images.runtime)
    gpus = host_has_gpus() if gpus is None else gpus
    everything = [work, *folders]
    base = in_image(sides[0], images.base, "--base-image", runtime, work, everything, gpus, images.python, memory_bytes)
    head = in_image(sides[1], images.head, "--head-image", runtime, work, everything, gpus, images.python, memory_bytes)
    return base, head


def in_image(
    side: Side,
    image: str,
    option: str,
    runtime: Runtime,
    work: Path,
    folders: Sequence[Path],
    gpus: bool,
    python: str = "python3",
    memory_bytes: int | None = None,
) -> Side:
    """The side with its processes started in `image`, the image probed (its Python, the modules perfci's
    workers import, the runner fingerprint inside). `folders`: what the containers mount besides perfci."""
    check_image(runtime, image, option)
    spec = LaunchSpec(
        runtime=runtime.command, flavour=runtime.flavour, image=image, side=side.name, parent_pid=os.getpid(),
        python=python, mounts=mounts([*folders, perfci_folder()]), gpus=gpus, memory_bytes=memory_bytes,
    )  # fmt: skip
    launcher = write_launcher(spec, work / "containers")
    pip = f"(in the image's Dockerfile) RUN {python} -m pip install"
    hint = f"the image needs Python 3.11+ on PATH as {python}, with msgspec, numpy and psutil"
    environment = probe_interpreter(image, str(launcher), option, side.env, side.root, pip, hint, toolkit=True)
    return replace(side, environment=replace(environment, image=image, runtime=runtime.command))


def device_clock_warnings(run: RunResult, label: str) -> list[str]:
    """A warning when CUDA cases of a side in an image measured no device clock: CUPTI inside a container needs
    the GPU profiling permission, and without it those cases are compared on latency only, which is said, never
    done quietly."""
    missing = [
        c.id for c in run.cases
        if c.status is CaseStatus.OK and c.device.startswith("cuda") and c.metric(DEVICE_TIME) is None
    ]  # fmt: skip
    if not missing:
        return []
    return [
        f"{label} has no device clock for {len(missing)} CUDA case(s) ({', '.join(missing[:3])}"
        f"{', ...' if len(missing) > 3 else ''}): CUPTI in the container was refused the GPU profiling permission "
        "(perfci passes --cap-add SYS_ADMIN; a rootless runtime may need NVreg_RestrictProfilingPermission=0 on "
        "the host); these cases are compared on latency only"
    ]
