"""The ONNX variants' cache with weights in an external data file (`model.onnx.data`, where `torch.onnx.export`
may write them): the cache key covers that file, so new weights of the same shape are converted afresh instead of
the stale fp16 and int8 conversions of the old ones failing every accuracy check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfci.workloads import onnx_variants
from perfci.workloads.api import WorkloadContext
from perfci.workloads.onnx_file import onnx_workload

pytestmark = pytest.mark.integration

DATA = "model.onnx.data"


def _save(path: Path, seed: int, external: bool = True) -> Path:
    """X [N, 16] @ W1 [16, 32] + b1 -> Relu -> @ W2 [32, 4] -> Y, weights from `seed`, in `DATA` when `external`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weights = {
        "W1": rng.standard_normal((16, 32)).astype(np.float32),
        "b1": rng.standard_normal(32).astype(np.float32),
        "W2": rng.standard_normal((32, 4)).astype(np.float32),
    }
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["X", "W1"], ["H"]),
            helper.make_node("Add", ["H", "b1"], ["A"]),
            helper.make_node("Relu", ["A"], ["R"]),
            helper.make_node("MatMul", ["R", "W2"], ["Y"]),
        ],
        "mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])],
        [numpy_helper.from_array(w, name) for name, w in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    if external:
        onnx.save_model(
            model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=DATA, size_threshold=0
        )
    else:
        onnx.save_model(model, str(path))
    return path


def _overwrite_weights(path: Path, seed: int) -> None:
    """The data file next to `path` overwritten with the weights of `seed` (the same shapes and offsets), the graph
    file left as it is: saved in a folder of its own and copied over, as a user would."""
    other = path.parent / f"weights-{seed}"
    other.mkdir(exist_ok=True)
    _save(other / path.name, seed)
    (path.parent / DATA).write_bytes((other / DATA).read_bytes())


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("PERFCI_CACHE_DIR", str(folder))
    return folder


def test_the_cache_key_covers_the_external_data_file(tmp_path: Path) -> None:
    path = _save(tmp_path / "model.onnx", seed=1)
    assert (tmp_path / DATA).stat().st_size == (16 * 32 + 32 + 32 * 4) * 4  # the weights live in the data file
    assert onnx_variants.external_data_files(path) == [DATA]
    before, graph = onnx_variants.model_digest(path), path.read_bytes()
    assert onnx_variants.model_digest(path) == before  # unchanged weights: the same key
    _overwrite_weights(path, seed=2)  # new weights of the same shapes; the graph file is the same, byte for byte
    assert path.read_bytes() == graph
    assert onnx_variants.model_digest(path) != before
    _overwrite_weights(path, seed=1)
    assert onnx_variants.model_digest(path) == before  # the old weights back: the old key


def test_a_model_without_external_data_keeps_the_key_of_its_file(tmp_path: Path) -> None:
    path = _save(tmp_path / "inline.onnx", seed=1, external=False)
    assert onnx_variants.external_data_files(path) == []
    assert onnx_variants.model_digest(path) == onnx_variants.file_digest(path)  # conversions cached before still hit


@pytest.mark.parametrize("variant", ["fp16", "int8-dynamic", "int8-static"])
def test_new_weights_in_the_data_file_are_converted_afresh_and_pass_their_check(
    tmp_path: Path, cache: Path, variant: str
) -> None:
    """The user's repro: run, overwrite model.onnx.data with other weights of the same shape, run again. The cached
    variant of the old weights failed its check ("relative L2 error 1.45"); now it is a new conversion."""
    path = _save(tmp_path / "model.onnx", seed=1)
    w = onnx_workload(path, batch=[2], variants=[variant], devices=["cpu"])

    def set_up() -> tuple[WorkloadContext, set[Path]]:
        ctx = WorkloadContext("cpu", {"variant": variant, "batch": 2}, seed=0)
        w(ctx, variant=variant, batch=2)()
        assert ctx.check is not None
        ctx.check()
        return ctx, set(cache.rglob("*.onnx"))

    first, converted = set_up()
    _, still = set_up()
    assert still == converted and len(converted) == 1  # the same weights: the conversion is reused
    stamp = next(iter(converted)).stat().st_mtime_ns
    _overwrite_weights(path, seed=2)
    fresh, now = set_up()  # the check passes: the variant was converted from the new weights
    assert len(now - converted) == 1 and next(iter(converted)).stat().st_mtime_ns == stamp
    assert fresh.notes["accuracy"]["rel_l2"] <= fresh.notes["accuracy"]["tolerance"]["max_rel_l2"]
    assert fresh.notes["accuracy"]["max_abs_diff"] != first.notes["accuracy"]["max_abs_diff"]
