"""Case patterns (-k, thresholds), selection filters and source planning."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfci.errors import WorkloadDefinitionError
from perfci.format.model import CaseSpec
from perfci.patterns import case_pattern, pytest_expression_hint
from perfci.workloads.discovery import all_cases_from_sources, builtin_source
from perfci.workloads.selection import Selection, device_matches, plan_sources, select, unknown_suites

MM = "kernels.matmul[n=512,dtype=float32]@cpu"


@pytest.mark.parametrize(
    ("pattern", "kind", "hit", "miss"),
    [
        ("matmul[n=512", "substring", MM, "kernels.matmul[n=256,dtype=float32]@cpu"),
        ("@cuda", "substring", "kernels.copy[mib=1024]@cuda", MM),
        ("kernels.*@cpu", "glob", MM, "kernels.copy[mib=1024]@cuda"),
        ("*[n=512,*", "glob", MM, "kernels.matmul[n=256,dtype=float32]@cpu"),
        ("kernels.matmul?n=512*", "glob", MM, "models.mlp@cpu"),
        ("re:^kernels\\.(matmul|sdpa)\\[", "regex", MM, "kernels.copy[mib=64]@cpu"),
    ],
)
def test_pattern_kinds(pattern: str, kind: str, hit: str, miss: str) -> None:
    p = case_pattern(pattern)
    assert p.kind == kind
    assert p.matches(hit)
    assert not p.matches(miss)


def test_glob_must_match_the_whole_id() -> None:
    assert not case_pattern("kernels.*@cpu").matches("x.kernels.a@cpu.y")
    assert case_pattern("*kernels*").matches("x.kernels.a@cpu.y")


@pytest.mark.parametrize("bad", ["", "   ", "re:", "re:(", "re:[a-"])
def test_bad_patterns(bad: str) -> None:
    with pytest.raises(ValueError):
        case_pattern(bad)


def _spec(name: str, device: str = "cpu", suite: str = "s", **params: int) -> CaseSpec:
    return CaseSpec(workload=f"{suite}.{name}", params=dict(params), device=device, suite=suite)


def test_selection_filters_combine() -> None:
    specs = [_spec("a", n=1), _spec("a", "cuda", n=1), _spec("b", suite="t"), _spec("c", "cuda:1")]
    assert select(specs, Selection()) == specs
    assert [s.id for s in select(specs, Selection(devices=("cuda",)))] == ["s.a[n=1]@cuda", "s.c@cuda:1"]
    assert [s.id for s in select(specs, Selection(devices=("cuda:1",)))] == ["s.c@cuda:1"]
    assert [s.id for s in select(specs, Selection(suites=("t",)))] == ["t.b@cpu"]
    pats = (case_pattern("s.a"), case_pattern("*.b@*"))
    assert [s.id for s in select(specs, Selection(patterns=pats, devices=("cpu",)))] == ["s.a[n=1]@cpu", "t.b@cpu"]
    assert unknown_suites(specs, ["s", "zzz"]) == ["zzz"]


def test_device_matches() -> None:
    assert device_matches("cuda", "cuda:0") and device_matches("cuda", "cuda")
    assert not device_matches("cuda:0", "cuda:1") and not device_matches("cpu", "cuda")


def test_plan_sources(tmp_path: Path) -> None:
    (tmp_path / "perf_a.py").write_text("")
    (tmp_path / "_helper.py").write_text("")
    assert plan_sources([], []) == [builtin_source("default")]
    assert plan_sources([], ["kernels", "mine"]) == [builtin_source("kernels")]
    assert plan_sources([tmp_path], ["onnx"]) == [str(tmp_path / "perf_a.py"), builtin_source("onnx")]
    with pytest.raises(WorkloadDefinitionError, match="no such workload file"):
        plan_sources([tmp_path / "missing"], [])


def test_builtin_suites_list_without_importing_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from perfci.workloads.discovery import all_cases_from_sources, builtin_source\n"
        "for s in ('default', 'kernels', 'models', 'onnx'):\n"
        "    assert all_cases_from_sources([builtin_source(s)]), s\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_builtin_suites_declare_cpu_and_cuda_and_triton_is_cuda_only() -> None:
    cases = [s for s, r in all_cases_from_sources([builtin_source("kernels")]) if r is None]
    by_device = {d: {s.workload for s in cases if s.device == d} for d in ("cpu", "cuda")}
    kernels = {"matmul", "softmax", "layernorm", "sdpa", "conv2d", "gelu_chain", "row_sum", "copy"}
    assert {f"kernels.{k}" for k in kernels} <= by_device["cpu"]
    assert {f"kernels.{k}" for k in kernels} | {"kernels.triton_add"} <= by_device["cuda"]
    assert "kernels.triton_add" not in by_device["cpu"]
    ids = {s.id for s in cases}
    assert "kernels.matmul[n=4096,dtype=bfloat16]@cuda" in ids and "kernels.matmul[n=512,dtype=float32]@cpu" in ids


def test_workload_files_import_from_their_folder_and_project_root(tmp_path: Path) -> None:
    import sys

    from perfci.workloads.discovery import import_roots, load_source

    (tmp_path / "perfci.toml").write_text("")
    (tmp_path / "projlib_for_test.py").write_text("VALUE = 41\n")
    perf = tmp_path / "perf"
    perf.mkdir()
    (perf / "sibling_for_test.py").write_text("ONE = 1\n")
    bench = perf / "bench_imports.py"
    bench.write_text(
        "import perfci\nimport projlib_for_test, sibling_for_test\n\n"
        "@perfci.workload\ndef answer(ctx):\n    return lambda: projlib_for_test.VALUE + sibling_for_test.ONE\n"
    )
    assert import_roots(bench) == [perf.resolve(), tmp_path.resolve()]
    try:
        ((spec, reason),) = all_cases_from_sources([str(bench)])
        assert (spec.id, reason) == ("bench_imports.answer@cpu", None)
        assert load_source(str(bench)).answer(None)() == 42
    finally:
        for name in ("projlib_for_test", "sibling_for_test"):
            sys.modules.pop(name, None)
        for folder in (str(perf.resolve()), str(tmp_path.resolve())):
            if folder in sys.path:
                sys.path.remove(folder)


@pytest.mark.parametrize(
    ("patterns", "suggests"),
    [
        (["matmul or softmax"], "several: -k matmul -k softmax"),
        (["not matmul"], "all but matmul: -k 're:^(?!.*matmul)'"),
        (["(matmul and n=512)"], "several: -k A -k B"),
    ],
)
def test_a_pytest_expression_given_to_k_gets_a_hint_that_works(patterns: list[str], suggests: str) -> None:
    hint = pytest_expression_hint(patterns)
    assert hint is not None and suggests in hint and repr(patterns[0]) in hint
    if "all but" in suggests:  # the suggested pattern does what it says
        suggested = case_pattern("re:^(?!.*matmul)")
        assert not suggested.matches(MM) and suggested.matches("default.softmax[rows=256,cols=4096]@cpu")


@pytest.mark.parametrize("patterns", [None, [], ["matmul"], ["kernels.*@cpu"], ["re:a or b"], ["vendor"]])
def test_plain_patterns_get_no_pytest_hint(patterns: list[str] | None) -> None:
    assert pytest_expression_hint(patterns) is None


def test_pytest_paths_are_sources_and_a_missing_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "test_b.py").write_text("def test_x(benchmark):\n    benchmark(lambda: 1)\n")
    assert plan_sources([], [], [tmp_path / "test_b.py"]) == [f"pytest:{tmp_path / 'test_b.py'}"]
    with pytest.raises(WorkloadDefinitionError, match="no such pytest file or folder"):
        plan_sources([], ["default"], [tmp_path / "nope"])


def test_a_file_reached_by_two_spellings_is_planned_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "wl.py").write_text("")
    (tmp_path / "sub" / "other.py").write_text("")
    sources = plan_sources([Path("sub/wl.py"), tmp_path / "sub" / "wl.py", Path("sub/../sub")], [])
    assert sources == ["sub/wl.py", "sub/../sub/other.py"]


def test_nothing_to_run_says_what_left_every_case_out() -> None:
    """CUDA-only workloads on a runner without a GPU read "no workloads found"."""
    from perfci.api.select import CaseChoice, nothing_selected

    gpu = [CaseSpec("w.m", {"batch": b}, "cuda") for b in (1, 2)]
    half = CaseSpec("w.m", {"variant": "fp16"}, "cpu")
    choice = CaseChoice([], [(s, "device cuda not selected") for s in gpu] + [(half, "fp16 is for GPUs")], 2)
    assert nothing_selected(None, None, None, choice) == (
        "every one of the 3 case(s) found was left out: 2 for cuda (no such device on this runner); 1 by their "
        "workloads' skip rules (e.g. fp16 is for GPUs)"
    )
    assert nothing_selected(None, None, None, CaseChoice([], [], 0)) == "no workloads found"
    assert nothing_selected(["x"], None, None, CaseChoice([], [], 0)) == "-k 'x' matches no case"
    assert nothing_selected(["fp16"], None, ["cpu"], choice) == (  # it exists: its skip rule left it out
        "-k 'fp16', --device cpu match no case that runs here; 1 case(s) were left out by their workloads' skip "
        "rules (e.g. fp16 is for GPUs)"
    )


def test_an_empty_folder_named_is_refused_not_replaced_by_the_built_in_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`perfci run empty/` measured the built-in default suite, exit 0, without a word."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkloadDefinitionError, match="empty: no workload files"):
        plan_sources([Path("empty")], [])
    assert plan_sources([], []) == [builtin_source("default")]  # nothing named: the built-in suite, said by the CLI
