"""Container images in `perfci ab`: the runtime's command lines (docker and podman), names, kill, the launcher's
spec, which variables a container gets, finding the runtime, and the image fingerprints' differences."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfci.ab import container_launch
from perfci.ab.container_launch import LaunchSpec, container_name, forwarded, gpu_flags, kill_args, run_args
from perfci.ab.containers import device_clock_warnings, find_runtime, flavour_of, mounts, source_folders
from perfci.ab.environments import Environment, changes_line, environment_changes
from perfci.engine import worker
from perfci.errors import UsageError
from perfci.format.model import CaseResult, CaseSpec, CaseStatus, Direction, Metric, RunResult
from perfci.metrics.registry import DEVICE_TIME, LATENCY
from tests.fakes import runtime_saying


def spec(flavour: str = "docker", gpus: bool = True) -> LaunchSpec:
    return LaunchSpec(
        runtime=f"/usr/bin/{flavour}", flavour=flavour, image="reg/img:1", side="head", parent_pid=4242,
        mounts=("/repo", "/tmp/perfci-x"), gpus=gpus,
    )  # fmt: skip


ENV = {"PATH": "/host/bin", "HOME": "/root", "VIRTUAL_ENV": "/v", "PYTHONPATH": "/tmp/perfci-x/shim:/repo",
       "PYTHONSAFEPATH": "1", "OMP_NUM_THREADS": "1", "PERFCI_HEAP_PAD": "12", "CUDA_VISIBLE_DEVICES": "0"}  # fmt: skip


def test_docker_run_line() -> None:
    cmd = run_args(spec("docker"), "perfci-4242-head-7", "/repo", ENV, ["-m", "perfci.engine.worker"])
    assert cmd[:8] == ["/usr/bin/docker", "run", "--rm", "-i", "--name", "perfci-4242-head-7", "-w", "/repo"]
    assert cmd[8:12] == ["-v", "/repo:/repo", "-v", "/tmp/perfci-x:/tmp/perfci-x"]
    assert cmd[-4:] == ["reg/img:1", "python3", "-m", "perfci.engine.worker"]
    i = cmd.index("--gpus")
    assert cmd[i : i + 4] == ["--gpus", "all", "--cap-add", "SYS_ADMIN"]
    assert "--device" not in cmd


def test_podman_takes_the_cdi_device() -> None:
    cmd = run_args(spec("podman"), "n", "/repo", {}, [])
    i = cmd.index("--device")
    assert cmd[i : i + 4] == ["--device", "nvidia.com/gpu=all", "--cap-add", "SYS_ADMIN"]
    assert "--gpus" not in cmd
    assert gpu_flags("podman") != gpu_flags("docker")


def test_the_memory_limit_goes_to_the_container() -> None:
    limited = run_args(replace(spec(), memory_bytes=8 * 2**30), "n", "/repo", {}, [])
    i = limited.index("--memory")
    assert limited[i + 1] == str(8 * 2**30) and i < limited.index("reg/img:1")
    assert "--memory" not in run_args(spec(), "n", "/repo", {}, [])


def test_no_gpu_flags_without_gpus() -> None:
    cmd = run_args(spec(gpus=False), "n", "/repo", {}, [])
    assert not {"--gpus", "--device", "--cap-add"} & set(cmd)


def test_only_perfci_python_and_library_variables_reach_the_container() -> None:
    cmd = run_args(spec(), "perfci-1-base-2", "/repo", ENV, [])
    envs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-e"]
    assert envs == [
        "CUDA_VISIBLE_DEVICES=0", "OMP_NUM_THREADS=1", "PERFCI_HEAP_PAD=12", "PYTHONPATH=/tmp/perfci-x/shim:/repo",
        "PYTHONSAFEPATH=1", "PERFCI_CONTAINER=perfci-1-base-2",
    ]  # fmt: skip
    assert "PATH" not in forwarded(ENV) and "HOME" not in forwarded(ENV) and "VIRTUAL_ENV" not in forwarded(ENV)


def test_names_and_kill() -> None:
    assert container_name(4242, "base", 17) == "perfci-4242-base-17"
    assert kill_args("/usr/bin/podman", "perfci-4242-base-17") == ["/usr/bin/podman", "kill", "perfci-4242-base-17"]


def test_the_worker_and_the_launcher_spell_the_container_variable_alike() -> None:
    assert worker.CONTAINER_VAR == container_launch.CONTAINER_VAR


def test_spec_round_trip() -> None:
    s = spec("podman")
    assert LaunchSpec.from_json(s.to_json()) == s


def test_flavour_from_the_executable_name() -> None:
    assert flavour_of("podman") == "podman"
    assert flavour_of("/opt/bin/podman-remote") == "podman"
    assert flavour_of("docker") == "docker"
    assert flavour_of("/x/fake_container_runtime.py") == "docker"


def test_missing_runtime_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--container-runtime docker: no such executable on PATH"):
        find_runtime("docker", which=lambda name: None)
    found = find_runtime("podman", which=lambda name: f"/usr/bin/{name}")
    assert (found.command, found.flavour) == ("/usr/bin/podman", "podman")
    with pytest.raises(UsageError, match="/nonexistent/runtime: no such file"):
        find_runtime("/nonexistent/runtime")
    with pytest.raises(UsageError, match="is a directory, not an executable file"):
        find_runtime("/")  # a folder is no runtime


def test_mounts_drop_folders_inside_others() -> None:
    assert mounts([Path("/a/b/c"), Path("/a/b"), Path("/a/bc"), Path("/z")]) == ("/a/b", "/a/bc", "/z")


def test_source_folders(tmp_path: Path) -> None:
    wl = tmp_path / "wl.py"
    wl.write_text("")
    found = source_folders([str(wl), f"pytest:{tmp_path}", "module:perfci.workloads.builtin.default", "rel/x.py"])
    assert found == [tmp_path, tmp_path]


def env(libs: dict[str, str | None], image: str) -> Environment:
    fp = {"python": "3.11.9", "cuda_driver": "12.4", "gpu_driver": "550.54", "libraries": libs}
    return Environment(image, "/tmp/launcher", "3.11.9", fp, image=image, runtime="/usr/bin/docker")


def test_image_changes_name_torch_cuda_cudnn_and_ort() -> None:
    old = env({"torch": "2.5.1", "torch.cuda": "12.4", "cudnn": "9.1.0", "onnxruntime": "1.19.0"}, "app:old")
    new = env({"torch": "2.6.0", "torch.cuda": "12.6", "cudnn": "9.5.1", "onnxruntime": "1.20.1"}, "app:new")
    changes = environment_changes(old, new)
    assert changes == [("cudnn", "9.1.0", "9.5.1"), ("onnxruntime", "1.19.0", "1.20.1"), ("torch", "2.5.1", "2.6.0"),
                       ("torch.cuda", "12.4", "12.6")]  # fmt: skip
    assert "torch 2.5.1 -> 2.6.0" in changes_line(changes)
    assert old.label == "image app:old, Python 3.11.9"


def _gpu_case(name: str, with_device_clock: bool) -> CaseResult:
    spec = CaseSpec(workload=name, params={}, device="cuda")
    latency = Metric(LATENCY, "s", Direction.LOWER, 1e-3)
    device = Metric(DEVICE_TIME, "s", Direction.LOWER, 9e-4)
    return CaseResult.of(spec, CaseStatus.OK, (), (latency, device) if with_device_clock else (latency,))


def _run(*cases: CaseResult) -> RunResult:
    return RunResult(run_id="r", started_at="", finished_at="", fingerprint={}, git=None, settings={}, cases=cases)


def test_a_side_without_a_device_clock_says_so() -> None:
    run = _run(_gpu_case("wl.a", True), _gpu_case("wl.b", False))
    (said,) = device_clock_warnings(run, "head (image app:new)")
    assert said.startswith("head (image app:new) has no device clock for 1 CUDA case(s) (wl.b@cuda)")
    assert "compared on latency only" in said
    assert device_clock_warnings(_run(_gpu_case("wl.a", True)), "base (image app:old)") == []


def test_a_daemon_that_is_down_is_not_blamed_on_the_image(tmp_path: Path) -> None:
    """docker with its daemon down said "no such image ... pull it first"; `--base-image=--help` reached the runtime
    as its own option and passed the image check."""
    from perfci.ab.containers import Runtime, check_image

    said = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    fake = runtime_saying(tmp_path / "docker", said, 1)
    runtime = Runtime(str(fake), "docker")
    with pytest.raises(UsageError, match="docker cannot reach its daemon") as down:
        check_image(runtime, "python:3.11", "--base-image")
    assert "pull" not in str(down.value) and "start it" in (down.value.hint or "")
    missing = runtime_saying(tmp_path / "podman", "Error: python:3.99: image not known", 125)
    with pytest.raises(UsageError, match="no such image on this machine") as gone:
        check_image(Runtime(str(missing), "podman"), "python:3.99", "--head-image")
    assert "podman pull python:3.99" in (gone.value.hint or "")
    for odd in ("--help", "", "  "):
        with pytest.raises(UsageError, match="not an image name"):
            check_image(runtime, odd, "--base-image")


def test_an_empty_image_name_is_said_as_such() -> None:
    """`--base-image "" --head-image b` said the two flags "go together", though both were given."""
    from perfci.ab.containers import image_settings

    with pytest.raises(UsageError, match="--base-image is empty"):
        image_settings("", "b", "docker")
    assert image_settings(None, None, "docker") is None
    settings = image_settings("a", None, "docker")  # one alone: the API's pair check refuses it
    assert settings is not None and (settings.base, settings.head) == ("a", "")


def test_the_supervisor_spares_the_watchdog_by_the_name_it_takes() -> None:
    """The supervisor kills a worker's descendants outside its group, but not a container launcher's watchdog, which
    leaves the group to stop the container; the two modules write the name apart (the launcher imports no perfci
    module), so they are checked against each other here, and the name fits Linux's 15 bytes."""
    from perfci.engine.supervisor import SPARED_NAME

    assert container_launch.WATCHDOG_NAME == SPARED_NAME and len(SPARED_NAME.encode()) <= 15
