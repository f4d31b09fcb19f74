#!/usr/bin/env python3
"""A stand-in container runtime for tests, on machines with no container daemon: it takes docker's command line
and runs the container's command as a child process, in a CLEAN environment, the way a container would see it.

    fake_container_runtime.py run --rm -i --name N -w DIR -v SRC:DST -e K=V --gpus all IMAGE CMD...
    fake_container_runtime.py kill N
    fake_container_runtime.py image inspect IMAGE

Its state is the folder named by $PERFCI_FAKE_RUNTIME_DIR (the client's environment, as docker reads
$DOCKER_HOST):
- `images.json`: the images there are, each with the variables its "ENV" sets, e.g.
  {"slow": {"env": {"PATH": "/usr/bin", "WORK_SCALE": "1.2"}}};
- `log.jsonl`: one line per invocation (what the tests read): the command, the container's name, whether stdin
  was attached (-i), the mounts, the GPU flags, the child's pid;
- `containers/NAME.pid`: the running containers, for `kill NAME`.

Like a real container: the command's environment is only the -e variables, the image's variables and
PERFCI_FAKE_MOUNTS (the mounted folders, os.pathsep-separated) and PERFCI_FAKE_CONTAINER (its name); its working
folder must lie in a mount; it runs in a session of its own, so killing this client does not stop it (only
`kill NAME` does); without -i it would get no stdin, so a `run` without -i is refused, as is an unknown image, a
mount whose folder does not exist or that is not mounted at its own path (the stand-in cannot move folders).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

WITH_VALUE = {"--name", "-v", "--volume", "-e", "--env", "-w", "--workdir", "--gpus", "--device", "--cap-add",
              "--memory", "--ipc", "--shm-size", "--user", "--security-opt"}  # fmt: skip
FLAGS = {"--rm", "-i", "--interactive", "--init", "--privileged"}


def state() -> Path:
    folder = os.environ.get("PERFCI_FAKE_RUNTIME_DIR")
    if not folder:
        fail("PERFCI_FAKE_RUNTIME_DIR is not set", 125)
    return Path(folder)


def fail(message: str, code: int) -> NoReturn:
    print(f"fake-runtime: {message}", file=sys.stderr)
    sys.exit(code)


def log(entry: dict[str, object]) -> None:
    line = (json.dumps(entry) + "\n").encode()
    fd = os.open(state() / "log.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of an O_APPEND file: lines of concurrent clients do not interleave
    finally:
        os.close(fd)


def images() -> dict[str, dict[str, dict[str, str]]]:
    path = state() / "images.json"
    return json.loads(path.read_text()) if path.exists() else {}


def pid_file(name: str) -> Path:
    return state() / "containers" / f"{name}.pid"


def parse_run(args: list[str]) -> tuple[dict[str, list[str]], set[str], list[str]]:
    """(options with values, flags, [IMAGE, CMD...])."""
    values: dict[str, list[str]] = {}
    flags: set[str] = set()
    i = 0
    while i < len(args) and args[i].startswith("-"):
        opt = args[i]
        if opt in FLAGS:
            flags.add({"--interactive": "-i"}.get(opt, opt))
            i += 1
        elif opt in WITH_VALUE and i + 1 < len(args):
            key = {"--volume": "-v", "--env": "-e", "--workdir": "-w"}.get(opt, opt)
            values.setdefault(key, []).append(args[i + 1])
            i += 2
        else:
            fail(f"unknown flag: {opt}", 125)
    return values, flags, args[i:]


def run(args: list[str]) -> int:
    values, flags, rest = parse_run(args)
    name = (values.get("--name") or [""])[-1]
    entry: dict[str, object] = {
        "command": "run", "name": name, "interactive": "-i" in flags, "mounts": values.get("-v", []),
        "gpus": values.get("--gpus", []), "devices": values.get("--device", []), "cap_add": values.get("--cap-add", []),
        "memory": values.get("--memory", []),
        "workdir": (values.get("-w") or [""])[-1], "argv": rest, "stdin_is_pipe": not os.isatty(0),
    }  # fmt: skip
    if "-i" not in flags:
        log({**entry, "refused": "no -i"})
        fail("refusing `run` without -i: the command would get no stdin", 125)
    if not rest:
        fail("run needs an image", 125)
    image, cmd = rest[0], rest[1:]
    known = images()
    if image not in known:
        log({**entry, "refused": "no such image"})
        fail(f"Unable to find image '{image}' locally", 125)
    mounted: list[str] = []
    for volume in values.get("-v", []):
        src, _, dst = volume.partition(":")
        if not Path(src).is_dir() or src != dst:
            fail(f"cannot mount {volume}: the folder must exist and be mounted at its own path", 125)
        mounted.append(dst)
    workdir = (values.get("-w") or ["/"])[-1]
    if not any(workdir == m or workdir.startswith(m.rstrip("/") + "/") for m in mounted):
        fail(f"working folder {workdir} is not in a mount: the container would not have it", 125)
    env = dict(known[image].get("env", {}))
    for kv in values.get("-e", []):
        key, _, value = kv.partition("=")
        env[key] = value
    env["PERFCI_FAKE_MOUNTS"] = os.pathsep.join(mounted)
    env["PERFCI_FAKE_CONTAINER"] = name
    try:
        child = subprocess.Popen(cmd, env=env, cwd=workdir, start_new_session=True)
    except OSError as exc:
        fail(f"cannot start {cmd[:1]}: {exc}", 127)
    if name:
        pid_file(name).parent.mkdir(parents=True, exist_ok=True)
        pid_file(name).write_text(str(child.pid))
    log({**entry, "pid": child.pid})
    code = child.wait()
    if name:
        pid_file(name).unlink(missing_ok=True)
    return code if code >= 0 else 128 - code


def kill(name: str) -> int:
    path = pid_file(name)
    if not path.exists():
        log({"command": "kill", "name": name, "found": False})
        print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
        return 1
    pid = int(path.read_text())
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # the container's whole session
    path.unlink(missing_ok=True)
    log({"command": "kill", "name": name, "found": True, "pid": pid})
    print(name)
    return 0


def inspect(image: str) -> int:
    known = images()
    log({"command": "image inspect", "image": image, "found": image in known})
    if image not in known:
        print(f"Error: No such image: {image}", file=sys.stderr)
        return 1
    print(json.dumps([{"Id": f"sha256:fake-{image}", "RepoTags": [image], "Config": known[image]}]))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"]:
        return run(argv[1:])
    if argv[:1] == ["kill"] and len(argv) == 2:
        return kill(argv[1])
    if argv[:2] == ["image", "inspect"] and len(argv) == 3:
        return inspect(argv[2])
    fail(f"unsupported command: {' '.join(argv)}", 125)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
