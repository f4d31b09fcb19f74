"""ONNX files as workloads: shape filling, seeded inputs, output comparison, the variants' cache, a case's set-up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import perfci
from perfci.errors import WorkloadDefinitionError
from perfci.workloads import onnx_variants
from perfci.workloads.api import WorkloadContext
from perfci.workloads.checks import Tolerance, compare_outputs, tolerance_record
from perfci.workloads.discovery import load_source, workloads_in
from perfci.workloads.onnx_file import InputSpec, fill_shape, fixed_batch, make_inputs, model_inputs, onnx_workload


def _write_model(path: Path, batch: int | str = "N", extra_dim: str | None = None) -> Path:
    """X [batch, (extra,) 8] @ W [8, 4] -> Relu -> Y."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    shape_in: list[int | str] = [batch, *([extra_dim] if extra_dim else []), 8]
    shape_out: list[int | str] = [batch, *([extra_dim] if extra_dim else []), 4]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["H"]), helper.make_node("Relu", ["H"], ["Y"])],
        "tiny",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape_in)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, shape_out)],
        [numpy_helper.from_array(w, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PERFCI_CACHE_DIR", str(folder))
    return folder


def test_fill_shape_keeps_fixed_dims_takes_batch_for_a_symbolic_leading_one_and_names_from_dims() -> None:
    assert fill_shape(InputSpec("x", ("N", 3, 8), "tensor(float)"), 4, {}) == (4, 3, 8)
    assert fill_shape(InputSpec("x", (None, 8), "tensor(float)"), 2, {}) == (2, 8)
    assert fill_shape(InputSpec("x", (5, 8), "tensor(float)"), 2, {}) == (5, 8)
    assert fill_shape(InputSpec("x", ("batch", "seq"), "tensor(int64)"), 2, {"seq": 16}) == (2, 16)
    assert fill_shape(InputSpec("x", ("batch", "seq"), "tensor(int64)"), 2, {"batch": 7, "seq": 1}) == (7, 1)


def test_fill_shape_refuses_a_symbolic_inner_dim_without_a_value() -> None:
    with pytest.raises(WorkloadDefinitionError, match="'seq' is symbolic") as err:
        fill_shape(InputSpec("ids", ("N", "seq"), "tensor(int64)"), 1, {})
    assert "dims=" in (err.value.hint or "")
    with pytest.raises(WorkloadDefinitionError, match="#1"):
        fill_shape(InputSpec("ids", ("N", None), "tensor(int64)"), 1, {})


def test_fixed_batch_only_when_no_input_has_a_symbolic_leading_dim() -> None:
    assert fixed_batch([InputSpec("a", (8, 3), "tensor(float)")]) == 8
    assert fixed_batch([InputSpec("a", (8, 3), "tensor(float)"), InputSpec("b", ("N",), "tensor(float)")]) is None
    assert fixed_batch([InputSpec("a", ("N", 3), "tensor(float)")]) is None
    assert fixed_batch([]) is None


def test_make_inputs_is_seeded_and_typed() -> None:
    specs = [
        InputSpec("x", ("N", 4), "tensor(float)"),
        InputSpec("h", ("N", 4), "tensor(float16)"),
        InputSpec("ids", ("N", 6), "tensor(int64)"),
        InputSpec("mask", ("N", 6), "tensor(bool)"),
    ]
    a, b, c = (make_inputs(specs, 3, {}, seed) for seed in (1, 1, 2))
    assert {k: (v.dtype.name, v.shape) for k, v in a.items()} == {
        "x": ("float32", (3, 4)),
        "h": ("float16", (3, 4)),
        "ids": ("int64", (3, 6)),
        "mask": ("bool", (3, 6)),
    }
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["x"], c["x"])
    assert a["ids"].min() >= 0 and a["ids"].max() < 10


def test_make_inputs_refuses_an_unknown_element_type() -> None:
    with pytest.raises(WorkloadDefinitionError, match="tensor\\(string\\)"):
        make_inputs([InputSpec("s", ("N",), "tensor(string)")], 1, {}, 0)


def test_compare_outputs_reports_the_worst_absolute_relative_and_l2_difference() -> None:
    reference = [np.array([1.0, -2.0, 4.0]), np.array([[10.0]])]
    actual = [np.array([1.1, -2.0, 4.0]), np.array([[10.5]])]
    acc = compare_outputs(actual, reference)
    assert acc.max_abs_diff == pytest.approx(0.5)
    assert acc.max_rel_diff == pytest.approx(0.1 / (1.0 + 4e-3))  # the floor is 1e-3 of the largest |value|
    assert acc.rel_l2 == pytest.approx(0.05)
    same = compare_outputs(reference, reference)
    assert (same.max_abs_diff, same.max_rel_diff, same.rel_l2) == (0.0, 0.0, 0.0)


def test_compare_outputs_near_zero_values_do_not_dominate_the_relative_difference() -> None:
    acc = compare_outputs([np.array([1e-9, 100.0])], [np.array([0.0, 100.0])])
    assert acc.max_rel_diff == pytest.approx(1e-9 / 0.1)  # not 1e-9 / 0


def test_compare_outputs_refuses_other_counts_or_shapes() -> None:
    with pytest.raises(AssertionError, match="2 outputs"):
        compare_outputs([np.zeros(2), np.zeros(2)], [np.zeros(2)])
    with pytest.raises(AssertionError, match="shape"):
        compare_outputs([np.zeros((2, 1))], [np.zeros(2)])


def test_tolerance_record_has_the_numbers_and_the_rule() -> None:
    assert tolerance_record(Tolerance(max_rel_l2=0.05)) == {"max_rel_l2": 0.05, "rule": "relative L2 error <= 0.05"}
    assert tolerance_record(Tolerance(rtol=1e-3, atol=1e-4))["rtol"] == 1e-3


def test_model_inputs_read_names_shapes_and_types(tmp_path: Path) -> None:
    path = _write_model(tmp_path / "m.onnx", extra_dim="seq")
    assert model_inputs(path) == [InputSpec("X", ("N", "seq", 8), "tensor(float)")]  # not the initializer W


def test_onnx_workload_grid_defaults_skips_and_relative_path(tmp_path: Path) -> None:
    _write_model(tmp_path / "m.onnx")
    _write_model(tmp_path / "fixed.onnx", batch=8)
    w = onnx_workload(tmp_path / "m.onnx", batch=[1, 4], devices=["cpu", "cuda"])
    assert [c.id for c in w.cases("m", "m.onnx")][:2] == [
        "m.onnx[variant=fp32,batch=1]@cpu",
        "m.onnx[variant=fp32,batch=4]@cpu",
    ]
    assert w.skip_reason({"variant": "int8-static", "batch": 1}, "cuda") is not None
    assert w.skip_reason({"variant": "fp16", "batch": 1}, "cuda") is None
    assert onnx_workload(tmp_path / "fixed.onnx").grid()[0] == {"variant": "fp32", "batch": 8}
    with pytest.raises(WorkloadDefinitionError, match="bf16"):
        onnx_workload(tmp_path / "m.onnx", variants=["fp32", "bf16"])
    with pytest.raises(WorkloadDefinitionError, match="no such ONNX file"):
        onnx_workload(tmp_path / "absent.onnx")
    # a relative path is read from the folder of the file that calls onnx_workload
    (tmp_path / "wl.py").write_text("import perfci\nmine = perfci.onnx_workload('m.onnx', batch=[2], name='mine')\n")
    [found] = workloads_in(load_source(str(tmp_path / "wl.py")))
    assert found.name == "mine" and found.grid()[0] == {"variant": "fp32", "batch": 2}


def test_an_onnx_path_is_one_workload_and_a_broken_one_a_clear_error(tmp_path: Path) -> None:
    path = _write_model(tmp_path / "net.onnx")
    [w] = workloads_in(load_source(str(path)))
    assert next(c.id for c in w.cases("net", str(path))) == "net.onnx[variant=fp32,batch=1]@cpu"
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    with pytest.raises(WorkloadDefinitionError) as bad:
        load_source(str(tmp_path / "bad.onnx"))
    assert bad.value.message.startswith(f"{tmp_path / 'bad.onnx'}: cannot be read as an ONNX model"), bad.value
    assert bad.value.message.count("bad.onnx") == 1, bad.value  # it named the file twice
    # an empty file parsed as an empty model: four cases listed, each failing its own way at run time (exit 3)
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(WorkloadDefinitionError) as empty:
        load_source(str(tmp_path / "empty.onnx"))
    assert empty.value.message == f"{tmp_path / 'empty.onnx'}: not an ONNX model: it holds no graph (0 bytes)."
    with pytest.raises(WorkloadDefinitionError, match=r"empty\.onnx: not an ONNX model: it holds no graph"):
        onnx_workload(tmp_path / "empty.onnx")


def test_onnx_workload_refuses_at_definition_what_failed_every_case_at_run_time(tmp_path: Path) -> None:
    """A symbolic dimension without a value failed each case (exit 3); a truncated file raised protobuf's
    DecodeError naming neither file nor workload; onnx_workload(123) a TypeError at pathlib's line."""
    seq = _write_model(tmp_path / "seq.onnx", extra_dim="seq")
    with pytest.raises(WorkloadDefinitionError, match="input 'X': dimension 'seq' is symbolic and has no value"):
        onnx_workload(seq)
    assert onnx_workload(seq, dims={"seq": 16}).grid()[0] == {"variant": "fp32", "batch": 1}
    with pytest.raises(WorkloadDefinitionError, match=r"seq\.onnx: .*dimension 'seq' is symbolic"):
        load_source(str(seq))  # named on the command line: one definition error at listing
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(_write_model(tmp_path / "whole.onnx").read_bytes()[:60])
    with pytest.raises(WorkloadDefinitionError, match=r"cut.onnx: cannot be read as an ONNX model"):
        onnx_workload(cut)
    with pytest.raises(WorkloadDefinitionError, match="path=123 is not the path of an ONNX file"):
        onnx_workload(123)  # type: ignore[arg-type]


def test_variants_are_converted_once_into_the_cache(tmp_path: Path, cache: Path) -> None:
    path = _write_model(tmp_path / "m.onnx")
    specs = model_inputs(path)
    calls = []

    def calibration():  # type: ignore[no-untyped-def]
        calls.append(1)
        yield from (make_inputs(specs, 2, {}, s) for s in range(3))

    assert onnx_variants.variant_path(path, "fp32", calibration) == path
    first = onnx_variants.variant_path(path, "int8-static", calibration, key="b2-s0")
    stamp = first.stat().st_mtime_ns
    again = onnx_variants.variant_path(path, "int8-static", calibration, key="b2-s0")
    assert again == first and again.stat().st_mtime_ns == stamp and len(calls) == 1
    assert first.is_relative_to(cache / "onnx" / onnx_variants.file_digest(path)[:32])
    assert onnx_variants.variant_path(path, "fp16", calibration).name == "fp16.onnx"
    assert not list(first.parent.glob(".*"))  # no temporary file left behind
    with pytest.raises(ValueError, match="unknown ONNX variant"):
        onnx_variants.variant_path(path, "int4", calibration)


def test_fp16_of_a_graph_whose_input_feeds_two_unnamed_nodes_loads(tmp_path: Path, cache: Path) -> None:
    """The converter names its casts after the nodes they feed: two unnamed readers of one input got two casts named
    `X_cast_to_`, and the fp16 model could not be loaded (a user audit)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["X"], ["A"]), helper.make_node("Sigmoid", ["X"], ["B"]),
             helper.make_node("Add", ["A", "B"], ["Y"], name="Relu_0")]  # fmt: skip
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 8])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(tmp_path / "two.onnx"))
    fp16 = onnx_variants.variant_path(tmp_path / "two.onnx", "fp16", lambda: iter(()))
    ort.InferenceSession(str(fp16), providers=["CPUExecutionProvider"])  # raised: two nodes with same node name
    names = [n.name for n in onnx.load(str(fp16)).graph.node]
    assert len(names) == len(set(names)) and "Relu_0_" in names, names  # a name already taken is not reused


@pytest.mark.parametrize("variant", ["fp16", "int8-dynamic", "int8-static"])
def test_setup_records_accuracy_against_fp32(tmp_path: Path, cache: Path, variant: str) -> None:
    w = onnx_workload(_write_model(tmp_path / "m.onnx"), batch=[3])
    ctx = WorkloadContext(device="cpu", params={"variant": variant, "batch": 3}, seed=5)
    call = w(ctx, variant=variant, batch=3)
    call()
    assert ctx.check is not None
    ctx.check()
    acc = ctx.notes["accuracy"]
    assert acc["reference"] == "fp32"
    assert acc["tolerance"]["max_rel_l2"] == onnx_variants.TOLERANCES[variant].max_rel_l2
    assert 0 < acc["rel_l2"] <= acc["tolerance"]["max_rel_l2"]
    assert acc["max_abs_diff"] > 0 and acc["max_rel_diff"] > 0
    assert ctx.notes["onnx.inputs"] == {"X": [3, 8]}
    explained = " ".join(ctx.notes.get("explain", []))
    assert ("fp32 plus casts" in explained) == (variant == "fp16")  # the CPU provider has no fp16 MatMul
    assert ("random inputs" in explained) == (variant == "int8-static")


def test_setup_check_fails_beyond_the_tolerance_and_fp32_has_no_accuracy_entry(tmp_path: Path, cache: Path) -> None:
    path = _write_model(tmp_path / "m.onnx")
    strict = onnx_workload(path, tolerances={"int8-dynamic": Tolerance(max_rel_l2=1e-9)})
    ctx = WorkloadContext(device="cpu", params={}, seed=0)
    strict(ctx, variant="int8-dynamic", batch=1)
    assert ctx.check is not None
    with pytest.raises(AssertionError, match="int8-dynamic output vs fp32"):
        ctx.check()
    plain = WorkloadContext(device="cpu", params={}, seed=0)
    perfci.onnx_workload(path)(plain, variant="fp32", batch=1)
    assert "accuracy" not in plain.notes and plain.check is not None  # the reference: no accuracy figure
    plain.check()  # checked against a second run of itself


def test_an_fp32_reference_with_non_finite_outputs_fails_its_own_check(tmp_path: Path) -> None:
    """log(x) of normal inputs: fp32 was `ok` and named the best while every other variant failed against it."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Log", ["X"], ["Y"])],
        "log",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(tmp_path / "log.onnx"))
    ctx = WorkloadContext(device="cpu", params={}, seed=0)
    onnx_workload(tmp_path / "log.onnx", variants=["fp32"])(ctx, variant="fp32", batch=2)
    assert ctx.check is not None
    with pytest.raises(AssertionError, match=r"the reference has .* non-finite values"):
        ctx.check()


def test_dims_naming_the_batch_dimension_are_refused(tmp_path: Path) -> None:
    """`dims={"N": 3}` on an input [N, seq, 8] overrode `batch`: every case fed 3 rows, per item divided by 1 or 4."""
    seq = _write_model(tmp_path / "seq.onnx", extra_dim="seq")
    with pytest.raises(WorkloadDefinitionError, match="dims names 'N', the inputs' leading \\(batch\\) dimension"):
        onnx_workload(seq, dims={"N": 3, "seq": 2}, batch=[1, 4])


def test_setup_skips_a_batch_a_fixed_model_cannot_take(tmp_path: Path, cache: Path) -> None:
    from perfci.workloads.api import SkipCase

    w = onnx_workload(_write_model(tmp_path / "fixed.onnx", batch=8), batch=[1, 8])
    with pytest.raises(SkipCase, match="fixed leading dimension 8"):
        w(WorkloadContext(device="cpu", params={}, seed=0), variant="fp32", batch=1)


def test_the_preload_runs_every_variant_once_and_keeps_the_fp32_session_for_the_checks(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first int8 case of a process read 23.7 MiB of host memory for a 7 KB model (the quantizer's imports, ORT's
    int8 kernels, the fp32 session of its accuracy check), the next 58 KiB: the preload takes them before any case's
    memory window, once per process and device kind."""
    import torch

    from perfci.workloads import onnx_file

    monkeypatch.setattr(onnx_file, "_WARMED", set())
    monkeypatch.setattr(onnx_file, "_REFERENCE_SESSIONS", {})
    opened: list[str] = []
    real_open = onnx_file.open_session

    def counting(path: Path, providers: list[object], threads: int) -> object:
        opened.append(path.name)
        return real_open(path, providers, threads)

    monkeypatch.setattr(onnx_file, "open_session", counting)
    w = onnx_workload(_write_model(tmp_path / "m.onnx"), batch=[1, 3], variants=["fp32", "int8-dynamic"])
    assert w.preload is not None
    w.preload("cpu", {"variant": "int8-dynamic", "batch": 3})
    assert opened == ["m.onnx", "int8-dynamic.onnx", "m.onnx"]  # each variant once (at batch 2), then the reference
    assert list(onnx_file._REFERENCE_SESSIONS) == [(str(tmp_path / "m.onnx"), "cpu", torch.get_num_threads())]
    w.preload("cpu", {"variant": "fp32", "batch": 1})
    assert len(opened) == 3  # once per process and device kind
    opened.clear()
    ctx = WorkloadContext(device="cpu", params={"variant": "int8-dynamic", "batch": 3}, seed=0)
    w(ctx, variant="int8-dynamic", batch=3)
    assert opened == ["int8-dynamic.onnx"] and ctx.check is not None  # the check ran the kept fp32 session
    ctx.check()
