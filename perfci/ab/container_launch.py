"""The stand-in interpreter of a side that runs in a container image (`perfci ab --base-image/--head-image`).

perfci starts a side's processes (the case listing, the probe, every worker) as `<python> ARGS...`; for an image
side, `<python>` is a small script (written by perfci/ab/containers.py) that runs this file with the host's
interpreter, isolated (`python -I`), so that it imports nothing but the standard library:

    <host python> -I container_launch.py SPEC.json ARGS...

It runs `<runtime> run --rm -i --name perfci-<perfci pid>-<side>-<launcher pid> -w <cwd> -v P:P... -e K=V...
[GPU flags] IMAGE <python in the image> ARGS...` with its own stdin, stdout and stderr, so the worker protocol
flows over the container's stdin and stdout as it does over a local worker's pipes.

The container is a process of the runtime's daemon, not of this one: killing the runtime's client (a time-out,
Ctrl-C, perfci's exit: the supervisor kills the worker's process group) leaves it running. So before it starts
the client, the launcher forks a watchdog in a session of its own that holds the read end of a pipe the launcher
keeps the write end of. When the client exits by itself, the launcher writes to the pipe and the watchdog exits;
when the launcher dies any other way (killed with its group, or by its parent's death through PR_SET_PDEATHSIG),
the watchdog reads end-of-file and runs `<runtime> kill NAME`. No container outlives the process that started it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Set in the container for the worker (engine/worker.py): its parent is the runtime's, not perfci, so it must not
# exit when the parent is not perfci; `<runtime> kill` is what stops it.
CONTAINER_VAR = "PERFCI_CONTAINER"

# What the container gets of the worker's environment (a host PATH, HOME or VIRTUAL_ENV would break the image's
# own): perfci's variables, Python's, and the thread and device settings of the numeric libraries.
FORWARDED_PREFIXES = (
    "PERFCI_", "PYTHON", "OMP_", "MKL_", "OPENBLAS_", "NUMEXPR_", "VECLIB_", "GLIBC_TUNABLES", "CUDA_",
    "NVIDIA_", "CUBLAS_", "CUDNN_", "NCCL_", "TORCH", "ORT_", "HF_", "TRANSFORMERS_",
)  # fmt: skip

CLEAN_EXIT = b"exited"  # what the launcher writes to the watchdog when the client exited by itself


@dataclass(frozen=True)
class LaunchSpec:
    """How a side's processes are started in its image."""

    runtime: str  # the runtime's executable (docker, podman or a path)
    flavour: str  # "docker" | "podman": which GPU flags the runtime takes
    image: str
    side: str  # "base" | "head"
    parent_pid: int  # perfci's process: in every container name
    python: str = "python3"  # the interpreter in the image
    mounts: tuple[str, ...] = ()  # host folders, mounted at the same paths
    gpus: bool = False  # pass the host's GPUs through (and the profiling permission CUPTI needs)
    memory_bytes: int | None = None  # the container's memory limit: the supervisor's, which cannot see inside it

    def to_json(self) -> str:
        return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()})

    @classmethod
    def from_json(cls, text: str) -> LaunchSpec:
        data = json.loads(text)
        return cls(**{**data, "mounts": tuple(data.get("mounts", ()))})


def gpu_flags(flavour: str) -> list[str]:
    """All GPUs, and the capability that lets CUPTI read the GPU's counters and activity (device time): docker's
    `--gpus all` (the NVIDIA container toolkit), podman's CDI device `nvidia.com/gpu=all`."""
    gpus = ["--device", "nvidia.com/gpu=all"] if flavour == "podman" else ["--gpus", "all"]
    return [*gpus, "--cap-add", "SYS_ADMIN"]


def container_name(parent_pid: int, side: str, n: int) -> str:
    return f"perfci-{parent_pid}-{side}-{n}"


def forwarded(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` the container gets (FORWARDED_PREFIXES), sorted by name."""
    return {k: env[k] for k in sorted(env) if k.startswith(FORWARDED_PREFIXES)}


def run_args(spec: LaunchSpec, name: str, cwd: str, env: Mapping[str, str], args: Sequence[str]) -> list[str]:
    """The runtime's command line that runs `<python in the image> ARGS...` in a fresh container named `name`,
    with stdin attached (`-i`), in `cwd`, the mounts at their host paths, and `env`'s forwarded variables."""
    cmd = [spec.runtime, "run", "--rm", "-i", "--name", name, "-w", cwd]
    for folder in spec.mounts:
        cmd += ["-v", f"{folder}:{folder}"]
    for key, value in {**forwarded(env), CONTAINER_VAR: name}.items():
        cmd += ["-e", f"{key}={value}"]
    if spec.memory_bytes:
        cmd += ["--memory", str(spec.memory_bytes)]
    if spec.gpus:
        cmd += gpu_flags(spec.flavour)
    return [*cmd, spec.image, spec.python, *args]


def kill_args(runtime: str, name: str) -> list[str]:
    return [runtime, "kill", name]


def _die_with_parent(parent_pid: int) -> None:
    """SIGKILL for this launcher when perfci dies (so its watchdog kills the container); exit now if it is gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        sys.exit(1)


WATCHDOG_NAME = "perfci-watchdog"  # its process name (15 bytes, Linux's limit): supervisor.SPARED_NAME


def _name_self(name: str) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(15, name.encode())  # 15 = PR_SET_NAME


def _watchdog(read_fd: int, runtime: str, name: str) -> None:
    """In a forked child: leave the launcher's session and pipes, wait for the launcher's word or end."""
    os.setsid()
    _name_self(WATCHDOG_NAME)  # the supervisor kills a worker's descendants, but not this one (engine/supervisor.py)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # never hold the worker's stdout open: the supervisor reads it to its end
        os.dup2(devnull, fd)
    word = os.read(read_fd, len(CLEAN_EXIT))
    if word != CLEAN_EXIT:
        subprocess.run(kill_args(runtime, name), stdin=devnull, stdout=devnull, stderr=devnull, check=False)
    os._exit(0)


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as fh:
        spec = LaunchSpec.from_json(fh.read())
    _die_with_parent(spec.parent_pid)
    name = container_name(spec.parent_pid, spec.side, os.getpid())
    read_fd, write_fd = os.pipe()
    if os.fork() == 0:
        os.close(write_fd)
        _watchdog(read_fd, spec.runtime, name)
    os.close(read_fd)
    # close_fds (the default) keeps the pipe's write end from the client: only this process holds it
    client = subprocess.Popen(run_args(spec, name, os.getcwd(), os.environ, argv[2:]))
    code = client.wait()
    os.write(write_fd, CLEAN_EXIT)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
