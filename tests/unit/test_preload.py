"""What a lockstep worker started ahead imports while it waits (perfci/engine/preload.py)."""

from __future__ import annotations

import types
from pathlib import Path

from perfci.engine.preload import TORCH, learned_imports, library_folders, preload, write_list


def _module(name: str, path: str | None) -> types.ModuleType:
    mod = types.ModuleType(name)
    if path is not None:
        mod.__file__ = path
    return mod


def test_learned_imports_are_the_new_library_modules_in_import_order(tmp_path: Path) -> None:
    lib = tmp_path / "site-packages"
    project = tmp_path / "repo"
    modules = {
        "json": _module("json", str(lib / "json/__init__.py")),  # imported before: not learned
        "transformers": _module("transformers", str(lib / "transformers/__init__.py")),
        "perfci.extra": _module("perfci.extra", str(lib / "perfci/extra.py")),  # perfci's own
        "perfci_user_1_models": _module("perfci_user_1_models", str(project / "perf/models.py")),
        "helpers": _module("helpers", str(project / "perf/helpers.py")),  # the project's: could be shadowed
        "namespace": _module("namespace", None),  # no file
        "transformers.models.opt": _module("transformers.models.opt", str(lib / "transformers/models/opt.py")),
    }
    learned = learned_imports({"json"}, modules, (str(lib) + "/",))
    assert learned == ("transformers", "transformers.models.opt")


def test_library_folders_hold_the_standard_library() -> None:
    assert any(
        Path(json_file := __import__("json").__file__).resolve().as_posix().startswith(f) for f in library_folders()
    ), json_file


def test_preload_imports_torch_first_then_the_listed_modules_and_skips_failures(tmp_path: Path) -> None:
    listed = write_list(tmp_path / "logs" / "preload.txt", ["transformers", TORCH, "broken", "timm"])
    assert Path(listed).read_text().split() == [TORCH, "transformers", "broken", "timm"]
    imported: list[str] = []

    def importer(name: str) -> None:
        if name == "broken":
            raise RuntimeError("import-time failure")  # the set-up imports it again and reports it
        imported.append(name)

    assert preload(listed, importer) == 3
    assert imported == [TORCH, "transformers", "timm"]


def test_preload_of_torch_alone_nothing_or_an_unreadable_file(tmp_path: Path) -> None:
    imported: list[str] = []
    assert preload(TORCH, imported.append) == 1 and imported == [TORCH]
    assert preload(None, imported.append) == 0 and preload("", imported.append) == 0
    assert preload(str(tmp_path / "gone.txt"), imported.append) == 1 and imported == [TORCH, TORCH]


def test_a_runner_keeps_what_its_first_pair_imported_for_the_next_run_of_the_same_workloads(tmp_path: Path) -> None:
    """The first pair's learned modules are kept in the runner's cache folder: the next run of the same
    workloads has its first pair's workers import them ahead; other workloads or no cache folder: torch alone."""
    from perfci.engine.protocol import PRELOAD_VAR
    from perfci.engine.runner import Runner, RunSettings, _CaseState
    from perfci.format.model import CaseSpec

    def runner(cache: Path | None, workload: str = "models.opt") -> Runner:
        r = Runner(RunSettings(peaks_cache=cache), tmp_path / f"out-{len(list(tmp_path.iterdir()))}")
        spec = CaseSpec(workload=workload, params={}, device="cuda")
        r.states = {spec.id: _CaseState(spec)}
        return r

    def preloaded(r: Runner) -> list[str]:
        value = r._lockstep_env(0, "A")[PRELOAD_VAR]
        return [TORCH] if value == TORCH else Path(value).read_text(encoding="utf-8").split()

    cache = tmp_path / "cache"
    first = runner(cache)
    assert preloaded(first) == [TORCH]  # nothing learned yet, nothing kept
    first.learn_imports(("json", "transformers.models.opt"))
    assert preloaded(first) == [TORCH, "json", "transformers.models.opt"]
    assert preloaded(runner(cache)) == [TORCH, "json", "transformers.models.opt"]  # the next run, before its pair
    assert preloaded(runner(cache, "models.other")) == [TORCH]
    assert preloaded(runner(None)) == [TORCH]
    (file,) = (cache / "imports").iterdir()
    file.write_text("json\nnot a module;rm\n", encoding="utf-8")  # a damaged list: its bad lines are ignored
    assert preloaded(runner(cache)) == [TORCH, "json"]
