"""Definition-time checks of workloads: the devices, the set-up's signature and what it returns, and the arguments
of `perfci.model_workload` and `perfci.onnx_workload` (batch sizes, variants, tolerances, dims). Each bad input is
one WorkloadDefinitionError naming the workload and the argument, raised when the workload is defined."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import perfci
from perfci.errors import WorkloadDefinitionError
from perfci.workloads.api import LocatedFailure, WorkloadContext
from perfci.workloads.checks import Tolerance
from perfci.workloads.discovery import load_source, workloads_in
from perfci.workloads.model_args import batch_sizes


def _setup(ctx: WorkloadContext, n: int) -> object:
    return lambda: n


def tiny() -> object:
    import torch

    return torch.nn.Linear(4, 3)


def _inputs(batch: int) -> object:
    import torch

    return torch.randn(batch, 4)


def _write_model(path: Path, dims: tuple[int | str, ...] = ("N", 8)) -> Path:
    """X [dims] @ W [8, 4] -> Y."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])],
        "tiny",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(dims))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [*dims[:-1], 4])],
        [numpy_helper.from_array(w, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


# devices


@pytest.mark.parametrize(
    ("devices", "hint"),
    [(["cpu", "tpu"], None), (["GPU:1"], "did you mean 'cuda:1'?"), (["CPU"], "did you mean 'cpu'?")],
)
def test_an_unknown_device_is_refused_naming_the_workload_and_the_valid_devices(
    devices: list[str], hint: str | None
) -> None:
    with pytest.raises(WorkloadDefinitionError) as refused:
        perfci.workload(params={"n": [1]}, devices=devices, name="gemm")(_setup)
    bad = next(d for d in devices if d != "cpu")
    assert refused.value.message == (
        f"workload 'gemm': devices names {bad!r}, which perfci cannot run a workload on; use 'cpu', 'cuda' or "
        "'cuda:N' (a GPU by index, e.g. 'cuda:1')."
    )
    assert refused.value.hint == hint


def test_valid_devices_are_kept_even_where_this_runner_lacks_them_and_a_twice_listed_one_is_refused() -> None:
    w = perfci.workload(params={"n": [1]}, devices=["cpu", "cuda", "cuda:1"])(_setup)
    assert [c.device for c in w.cases("f", "src")] == ["cpu", "cuda", "cuda:1"]
    with pytest.raises(WorkloadDefinitionError, match="workload '_setup': devices lists a device twice"):
        perfci.workload(params={"n": [1]}, devices=["cuda", "cuda"])(_setup)


def test_a_model_workload_with_an_unknown_device_is_refused_at_definition() -> None:
    with pytest.raises(WorkloadDefinitionError, match="workload 'tiny': devices names 'tpu'"):
        perfci.model_workload(tiny, inputs=_inputs, devices=["tpu"])


# the set-up's signature and what it returns


def test_a_set_up_without_ctx_is_refused_with_the_signature_it_needs() -> None:
    def plain() -> object:
        return lambda: None

    def by_keyword(*, ctx: WorkloadContext) -> object:
        return lambda: None

    def params_only(n: int) -> object:
        return lambda: None

    for setup, params, wanted in [
        (plain, None, "`def plain(ctx):`"),
        (by_keyword, None, "`def by_keyword(ctx):`"),
        (params_only, {"n": [1]}, "`def params_only(ctx, n):`"),
    ]:
        with pytest.raises(WorkloadDefinitionError) as refused:
            perfci.workload(params=params)(setup)
        assert refused.value.message.startswith(f"workload {setup.__name__!r}: the set-up {setup.__name__}(")
        assert "does not take the context `ctx` as its first argument" in refused.value.message
        assert wanted in refused.value.message


def test_a_set_up_argument_that_is_no_parameter_is_refused_unless_it_has_a_default() -> None:
    def needs_m(ctx: WorkloadContext, n: int, m: int) -> object:
        return lambda: n + m

    def defaults_m(ctx: WorkloadContext, n: int, m: int = 2) -> object:
        return lambda: n + m

    with pytest.raises(WorkloadDefinitionError, match="takes 'm', which is no parameter of the workload") as refused:
        perfci.workload(params={"n": [1]})(needs_m)
    assert refused.value.hint == "declare it in params=, or give it a default"
    w = perfci.workload(params={"n": [1]})(defaults_m)
    assert w(WorkloadContext("cpu", {}, 0), n=1)() == 3


def test_set_ups_that_take_parameters_through_kwargs_or_args_are_accepted() -> None:
    def kwargs(ctx: WorkloadContext, **params: int) -> object:
        return lambda: params["n"]

    def star(*args: object, **params: int) -> object:
        return lambda: (len(args), params["n"])

    assert perfci.workload(params={"n": [4]})(kwargs)(WorkloadContext("cpu", {}, 0), n=4)() == 4
    assert perfci.workload(params={"n": [4]})(star)(WorkloadContext("cpu", {}, 0), n=4)() == (1, 4)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("    x = [1, 2]\n", "returned None; it must return the callable to time (e.g. `return lambda: step(x)`)."),
        (
            "    return sum([1, 2])\n",
            "returned int 3, not a callable; it must return the callable to time (e.g. `return lambda: a @ b`, not "
            "the result `a @ b`).",
        ),
    ],
)
def test_a_set_up_that_returns_no_callable_fails_naming_its_own_file_and_line(
    tmp_path: Path, body: str, words: str
) -> None:
    """Not "'NoneType' object is not callable (at case_memory.py:192)": the worker reports a LocatedFailure as it
    is, and this one names the set-up's file and the line its definition starts on."""
    (tmp_path / "bench.py").write_text(f"import perfci\n\n\n@perfci.workload\ndef forgot(ctx):\n{body}")
    [w] = workloads_in(load_source(str(tmp_path / "bench.py")))
    with pytest.raises(LocatedFailure) as failed:
        w(WorkloadContext("cpu", {}, 0))
    assert str(failed.value) == f"bench.py:4: workload 'forgot': its set-up {words}"


# model_workload's arguments


def test_model_workload_takes_one_batch_size_as_a_list_of_one() -> None:
    w = perfci.model_workload(tiny, inputs=_inputs, variants=["eager"], batch=8, devices=["cpu"])
    assert [c.id for c in w.cases("m", "src")] == ["m.tiny[variant=eager,batch=8]@cpu"]
    assert batch_sizes("w", (1, 8)) == [1, 8] and batch_sizes("w", np.int64(4)) == [4]


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        ([], "model workload 'tiny': batch=[] lists no batch size; give at least one, e.g. batch=[1]."),
        ([0, -1], "model workload 'tiny': batch=[0, -1] has 0, but a batch size must be an integer of at least 1."),
        ([2, -1], "model workload 'tiny': batch=[2, -1] has -1, but a batch size must be an integer of at least 1."),
        ([2.0], "model workload 'tiny': batch=[2.0] has 2.0, but a batch size must be an integer of at least 1."),
        ([True], "model workload 'tiny': batch=[True] has True, but a batch size must be an integer of at least 1."),
        ("8", "model workload 'tiny': batch='8' is not a batch size or a list of them; give e.g. batch=8 or"),
    ],
)
def test_model_workload_refuses_bad_batch_sizes_naming_the_workload(batch: object, message: str) -> None:
    with pytest.raises(WorkloadDefinitionError) as refused:
        perfci.model_workload(tiny, inputs=_inputs, batch=batch)  # type: ignore[arg-type]
    assert refused.value.message.startswith(message)


def test_a_bad_batch_in_a_workload_file_names_the_file_and_the_workload_not_an_internal_function(
    tmp_path: Path,
) -> None:
    (tmp_path / "models.py").write_text(
        "import perfci\nimport torch\n"
        "perfci.model_workload(lambda: torch.nn.Linear(4, 3), inputs=lambda b: torch.randn(b, 4), batch=[],"
        " name='linear')\n"
    )
    with pytest.raises(WorkloadDefinitionError) as refused:
        load_source(str(tmp_path / "models.py"))
    assert refused.value.message == (
        f"{tmp_path / 'models.py'}: model workload 'linear': batch=[] lists no batch size; give at least one, "
        "e.g. batch=[1]."
    )


@pytest.mark.parametrize(
    ("tolerances", "message", "hint"),
    [
        (
            {"eagr": 1},
            "model workload 'tiny': tolerances names 'eagr', which is no model variant.",
            "did you mean 'eager'?",
        ),
        ({"eager": -1}, "model workload 'tiny': tolerances['eager'] = -1 is negative; give a Tolerance(...) or", None),
        ({"bf16": "0.1"}, "model workload 'tiny': tolerances['bf16'] = '0.1' is not a number;", None),
        ({"bf16": Tolerance(max_rel_l2=float("nan"))}, "tolerances['bf16']: max_rel_l2=nan is not finite;", None),
        ({"eager": Tolerance(atol=-1e-6)}, "tolerances['eager']: atol=-1e-06 is negative;", None),
        ([0.1], "model workload 'tiny': tolerances=[0.1] is not a dict from variant name", None),
    ],
)
def test_model_workload_refuses_unknown_variants_and_bad_tolerances(
    tolerances: object, message: str, hint: str | None
) -> None:
    with pytest.raises(WorkloadDefinitionError) as refused:
        perfci.model_workload(tiny, inputs=_inputs, tolerances=tolerances)  # type: ignore[arg-type]
    assert message in refused.value.message
    assert hint is None or (refused.value.hint or "").startswith(hint)


def test_model_workload_takes_a_number_as_the_largest_relative_l2_error() -> None:
    """A bf16 Linear is some 1e-3 off eager fp32: within 0.5, past 1e-9; a number is the bound the check uses."""
    for bound, passes in ((0.5, True), (1e-9, False)):
        w = perfci.model_workload(tiny, inputs=_inputs, variants=["bf16"], tolerances={"bf16": bound}, devices=["cpu"])
        ctx = WorkloadContext("cpu", {}, seed=0)
        w(ctx, variant="bf16", batch=2)
        assert ctx.notes["accuracy"]["tolerance"] == {"max_rel_l2": bound, "rule": f"relative L2 error <= {bound:g}"}
        assert ctx.check is not None
        if passes:
            ctx.check()
        else:
            with pytest.raises(AssertionError, match="relative L2 error"):
                ctx.check()


def test_model_workload_unknown_variant_has_a_did_you_mean() -> None:
    with pytest.raises(WorkloadDefinitionError, match="unknown model variant 'infrence' in variants") as refused:
        perfci.model_workload(tiny, inputs=_inputs, variants=["eager", "infrence"])
    assert (refused.value.hint or "").startswith("did you mean 'inference'?")


# onnx_workload's arguments


def test_onnx_workload_refuses_dims_the_model_does_not_have_naming_its_symbolic_dimensions(tmp_path: Path) -> None:
    path = _write_model(tmp_path / "m.onnx")
    with pytest.raises(WorkloadDefinitionError) as refused:
        perfci.onnx_workload(path, dims={"seq": 5})
    assert refused.value.message == (
        "onnx workload 'onnx' (m.onnx): dims names 'seq', which is not a symbolic dimension of m.onnx (its symbolic "
        "dimensions are 'N')."
    )
    fixed = _write_model(tmp_path / "fixed.onnx", dims=(2, 8))
    with pytest.raises(WorkloadDefinitionError, match=r"not a symbolic dimension of fixed.onnx \(it has none\)"):
        perfci.onnx_workload(fixed, dims={"seq": 5})


def test_onnx_workload_dims_of_the_model_are_fed_and_a_size_below_one_is_refused(tmp_path: Path) -> None:
    path = _write_model(tmp_path / "s.onnx", dims=("N", "seq", 8))
    with pytest.raises(WorkloadDefinitionError, match=r"dims\['seq'\] = 0 is not an integer of at least 1"):
        perfci.onnx_workload(path, dims={"seq": 0})
    with pytest.raises(WorkloadDefinitionError, match="dims names 'sq'") as refused:
        perfci.onnx_workload(path, dims={"sq": 3})
    assert refused.value.hint == "did you mean 'seq'?"
    w = perfci.onnx_workload(path, dims={"seq": 3}, batch=2, variants=["fp32"], devices=["cpu"])
    assert w.grid() == [{"variant": "fp32", "batch": 2}]
    ctx = WorkloadContext("cpu", {}, seed=0)
    w(ctx, variant="fp32", batch=2)
    assert ctx.notes["onnx.inputs"] == {"X": [2, 3, 8]}


def test_onnx_workload_refuses_bad_batch_and_tolerances_naming_the_workload(tmp_path: Path) -> None:
    path = _write_model(tmp_path / "m.onnx")
    with pytest.raises(WorkloadDefinitionError, match=r"onnx workload 'net' \(m.onnx\): batch=\[0\] has 0"):
        perfci.onnx_workload(path, batch=[0], name="net")
    with pytest.raises(WorkloadDefinitionError, match="tolerances names 'fp61', which is no ONNX variant") as bad:
        perfci.onnx_workload(path, tolerances={"fp61": 0.1})
    assert (bad.value.hint or "").startswith("did you mean 'fp16'?")
    with pytest.raises(WorkloadDefinitionError, match=r"tolerances\['fp16'\] = -0.1 is negative"):
        perfci.onnx_workload(path, tolerances={"fp16": -0.1})
    with pytest.raises(WorkloadDefinitionError, match="devices names 'tpu'"):
        perfci.onnx_workload(path, devices=["tpu"])


MADE_BUT_NOT_KEPT = """
import perfci
import torch

for n in (10, 100, 1000):  # each loop rebinds `w`: the first two were never measured
    def setup(ctx, n=n):
        data = list(range(n))
        return lambda: sum(data)
    w = perfci.workload(name=f"sum{n}")(setup)

def _linear():
    return torch.nn.Linear(4, 4)

listed = [
    perfci.model_workload(_linear, inputs=lambda b: torch.randn(b, 4), variants=["eager"], batch=[2], name=f"m{i}")
    for i in range(2)
]
kept = {"k": perfci.model_workload(_linear, inputs=lambda b: torch.randn(b, 4), variants=["eager"], batch=[2],
                                   name="in_a_dict")}
"""


def test_workloads_made_in_a_loop_a_list_or_a_dict_are_all_measured(tmp_path: Path) -> None:
    """Only workloads bound to a module-level name were found: `perfci list` printed one of the three made in a loop
    and none of those in a list or a dict (a user audit)."""
    (tmp_path / "made.py").write_text(MADE_BUT_NOT_KEPT)
    found = workloads_in(load_source(str(tmp_path / "made.py")))
    assert [w.name for w in found] == ["sum10", "sum100", "sum1000", "m0", "m1", "in_a_dict"]
    assert all(w.preload is not None for w in found[3:])  # the model workloads' own copies, not the drafts
    assert [w.setup.__defaults__ for w in found[:3]] == [(10,), (100,), (1000,)]


def test_workloads_made_in_a_loop_under_one_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "same.py").write_text(
        "import perfci\nfor n in (1, 2):\n    @perfci.workload\n    def step(ctx, n=n):\n        return lambda: n\n"
    )
    with pytest.raises(WorkloadDefinitionError, match=r"two workloads are named 'step'"):
        workloads_in(load_source(str(tmp_path / "same.py")))


def test_a_workload_imported_from_another_file_is_that_files(tmp_path: Path) -> None:
    """A workload another module makes, imported by this file's code, is not this file's unless bound here."""
    (tmp_path / "shared_defs.py").write_text(
        "import perfci\n@perfci.workload\ndef shared(ctx):\n    return lambda: 1\n"
    )
    (tmp_path / "user.py").write_text(
        "import perfci\nimport shared_defs\n@perfci.workload\ndef own(ctx):\n    return lambda: 2\n"
    )
    assert [w.name for w in workloads_in(load_source(str(tmp_path / "user.py")))] == ["own"]
