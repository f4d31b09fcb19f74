"""Precision variants of an ONNX file (fp32, fp16, int8-dynamic, int8-static), converted once and cached, and
the ONNX Runtime sessions that run them.

- fp16: onnxconverter-common's `convert_float_to_float16` with `keep_io_types=True`, so the fp16 model takes
  and returns the same fp32 tensors as the original (the same inputs feed every variant, and the outputs compare
  directly).
- int8-dynamic: `quantize_dynamic`, int8 weights with `reduce_range=True` (7-bit: the u8 x s8 kernels of CPUs
  without VNNI saturate at 8 bits).
- int8-static: `quantize_static` in QDQ format, activations calibrated on batches drawn from the same seeded
  generator as the timed inputs.

Converted files live in a cache folder (`$PERFCI_CACHE_DIR`, else ~/.cache/perfci) under `onnx/<digest>/`, so that
each round's worker does not convert again; the digest (`model_digest`) is the sha256 of the file and of every
external data file its tensors name (`model.onnx.data`, where `torch.onnx.export` may write the weights), so new
weights are a new folder. A file is written under a temporary name and renamed, as rounds of several cases may
convert the same model at once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from perfci.work_folder import cache_dir
from perfci.workloads.checks import Tolerance
from perfci.workloads.ort_session import open_session

VARIANTS = ("fp32", "fp16", "int8-dynamic", "int8-static")
INT8_VARIANTS = ("int8-dynamic", "int8-static")
# Relative L2 error of the outputs against fp32. fp16 keeps ~3 significant digits; int8 with random inputs
# and untrained calibration is a coarse check that the model still computes the same function.
TOLERANCES: Mapping[str, Tolerance] = {
    "fp16": Tolerance(max_rel_l2=1e-2),
    "int8-dynamic": Tolerance(max_rel_l2=5e-2),
    "int8-static": Tolerance(max_rel_l2=0.1),  # activations quantised too, on ranges from random calibration
}
CALIBRATION_BATCHES = 8

Feeds = dict[str, np.ndarray[Any, Any]]


def cache_root() -> Path:
    return cache_dir()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def external_data_files(path: Path) -> list[str]:
    """The external data files that the model's tensors name (their `location`, relative to the model's folder),
    each once, read without loading them: initializers, sparse initializers and tensors in node attributes, in
    subgraphs and functions too."""
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    model = onnx.load(str(path), load_external_data=False)
    found: dict[str, None] = {}

    def tensors(graph: Any) -> Iterator[Any]:
        for sparse in graph.sparse_initializer:
            yield from (sparse.values, sparse.indices)
        yield from graph.initializer
        yield from node_tensors(graph.node)

    def node_tensors(nodes: Any) -> Iterator[Any]:
        for attribute in (a for node in nodes for a in node.attribute):
            yield from [attribute.t, *attribute.tensors]
            for sparse in [attribute.sparse_tensor, *attribute.sparse_tensors]:
                yield from (sparse.values, sparse.indices)
            for graph in [attribute.g, *attribute.graphs]:
                yield from tensors(graph)

    every = [*tensors(model.graph), *(t for f in model.functions for t in node_tensors(f.node))]
    for tensor in every:
        if uses_external_data(tensor):
            found[ExternalDataInfo(tensor).location] = None
    return list(found)


def model_digest(path: Path) -> str:
    """The cache key of a model: the file's sha256 where it keeps its weights inside it (the key is unchanged from
    earlier versions); else the sha256 of that digest and of each external data file's name and digest, so that
    overwriting the weights (`model.onnx.data`) gives the converted variants a new folder instead of stale ones."""
    digest = file_digest(path)
    locations = sorted(external_data_files(path))
    if not locations:
        return digest
    h = hashlib.sha256(digest.encode())
    for location in locations:
        data = path.parent / location
        h.update(f"\0{location}\0{file_digest(data) if data.is_file() else 'missing'}".encode())
    return h.hexdigest()


def variant_path(path: Path, variant: str, calibration: Callable[[], Iterator[Feeds]], key: str = "") -> Path:
    """The file to load for `variant`: the original for fp32, else the cached conversion (made when missing).
    `key` tells apart static quantisations calibrated on different inputs (batch size, seed)."""
    if variant == "fp32":
        return path
    if variant not in VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r} (known: {', '.join(VARIANTS)})")
    folder = cache_root() / "onnx" / model_digest(path)[:32]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a cache that cannot be written (a read-only home): converted in the temporary folder instead
        folder = Path(tempfile.gettempdir()) / f"perfci-{os.getuid()}" / "onnx" / model_digest(path)[:32]
        folder.mkdir(parents=True, exist_ok=True)
    out = folder / (f"{variant}-{key}.onnx" if key and variant == "int8-static" else f"{variant}.onnx")
    if out.exists():
        return out
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=f".{variant}-", suffix=".onnx")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _convert(path, tmp, variant, calibration)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _convert(src: Path, dst: Path, variant: str, calibration: Callable[[], Iterator[Feeds]]) -> None:
    if variant == "fp16":
        import onnx
        from onnxconverter_common import float16

        model = onnx.load(str(src))
        _name_nodes(model.graph)
        onnx.save(float16.convert_float_to_float16(model, keep_io_types=True), str(dst))
        return
    from onnxruntime import quantization as q

    logging.disable(logging.WARNING)  # the quantizer logs a pre-processing advice on the root logger each time
    try:
        if variant == "int8-dynamic":
            q.quantize_dynamic(src, dst, weight_type=q.QuantType.QInt8, reduce_range=True)
        else:
            q.quantize_static(
                src,
                dst,
                _reader(calibration()),
                quant_format=q.QuantFormat.QDQ,
                weight_type=q.QuantType.QInt8,
                reduce_range=True,
            )
    finally:
        logging.disable(logging.NOTSET)


def _name_nodes(graph: Any) -> None:
    """A name for each unnamed node: the converter names the casts it adds after the node they feed, so an input
    read by two unnamed nodes got two casts of one name, and the fp16 model was invalid ("two nodes with same node
    name (X_cast_to_)")."""
    taken = {n.name for n in graph.node if n.name}
    for i, node in enumerate(graph.node):
        if not node.name:
            name = f"{node.op_type}_{i}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)


def _reader(feeds: Iterator[Feeds]) -> Any:
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        """Calibration batches from the workload's seeded input generator."""

        def get_next(self) -> Feeds | None:
            return next(feeds, None)

    return Reader()


def cast_count(path: Path) -> int:
    import onnx

    return sum(node.op_type == "Cast" for node in onnx.load(str(path)).graph.node)


def runs_fp16_as_fp32(fp16_path: Path, providers: list[Any], threads: int) -> bool:
    """Whether ONNX Runtime changed the fp16 graph's Cast nodes when optimising it for these providers: the CPU
    provider has no fp16 kernels for most operators, so it inserts Casts to fp32 around them (and folds
    adjacent ones), and the case then times fp32 arithmetic plus conversions."""
    with tempfile.TemporaryDirectory(prefix="perfci-onnx-opt-") as tmp:
        optimized = Path(tmp) / "optimized.onnx"
        open_session(fp16_path, providers, threads, optimized_to=optimized)
        return cast_count(optimized) != cast_count(fp16_path)
