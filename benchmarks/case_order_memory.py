"""Whether a model case's `memory.host` depends on which case came first in its worker: `perfci run` of small
models, each with eager and bf16 variants at batch 1 and 8, four rounds (each round shuffles its case order), and
per case the highest round's reading minus the lowest (the comparison's floor for memory is 1 MiB).

    python benchmarks/case_order_memory.py [--seed N] [MODEL ...]    # default: every model below, seed 6
    python benchmarks/case_order_memory.py --cost                      # what the warm-up costs a larger CNN
    python benchmarks/case_order_memory.py --cost --device cuda --resnet50    # ResNet-50 at batch 32, on a GPU
    python benchmarks/case_order_memory.py --cost --bare ...           # the same with no own-model warm-up

Models: `encoder` (a transformer encoder layer), `gru`, `conv` (Conv2d, BatchNorm, pooling), `decoder` (a
transformer decoder layer), `lstm` (an embedding and a two-layer LSTM), `conv1d` (Conv1d, GroupNorm, SiLU).
Prints one line per case: its id, its four readings in MiB and their spread. docs/measurement.md ("Memory")
records what it printed before and after model workloads warmed their own model. `--cost` times, in this process,
the warm-up of a four-block CNN at 224x224 (batch 1; eager and bf16) against one case's set-up and one call;
`--bare` leaves the own-model step out, so that the first set-up pays what it would have warmed: the warm-up's
added cost is (own model + set-ups) minus (bare set-ups), each from a fresh process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

MODELS = {
    "encoder": (
        "lambda: torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)",
        "lambda b: torch.randn(b, 32, 128)",
    ),
    "gru": ("GRUHead", "lambda b: torch.randn(b, 20, 64)"),
    "conv": (
        "lambda: torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), "
        "torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))",
        "lambda b: torch.randn(b, 3, 32, 32)",
    ),
    "decoder": ("SelfDecoder", "lambda b: torch.randn(b, 24, 96)"),
    "lstm": ("LSTMClassifier", "lambda b: torch.randint(0, 500, (b, 30))"),
    "conv1d": (
        "lambda: torch.nn.Sequential(torch.nn.Conv1d(8, 32, 5, padding=2), torch.nn.GroupNorm(4, 32), "
        "torch.nn.SiLU(), torch.nn.Conv1d(32, 32, 3, stride=2), torch.nn.AdaptiveMaxPool1d(1), "
        "torch.nn.Flatten(), torch.nn.Linear(32, 4))",
        "lambda b: torch.randn(b, 8, 400)",
    ),
}

CLASSES = """
import perfci
import torch


class GRUHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru, self.head = torch.nn.GRU(64, 128, batch_first=True), torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.gru(x)[0][:, -1])


class SelfDecoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerDecoderLayer(96, 3, 192, batch_first=True)

    def forward(self, x):
        return self.layer(x, x)


class LSTMClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(500, 48)
        self.lstm = torch.nn.LSTM(48, 96, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(96, 5)

    def forward(self, x):
        return self.head(self.lstm(self.embed(x))[0].mean(1))
"""


def _workload_file(name: str) -> str:
    factory, inputs = MODELS[name]
    return CLASSES + (
        f"\n\n{name} = perfci.model_workload({factory}, inputs={inputs}, name={name!r},\n"
        '    variants=["eager", "bf16"], batch=[1, 8], devices=["cpu"])\n'
    )


def cost(device: str, resnet50: bool, bare: bool) -> None:
    import time

    import torch

    from perfci.profilers.case_memory import warm_runtime
    from perfci.workloads.api import WorkloadContext
    from perfci.workloads.torch_model import MODEL_TOLERANCES, TorchModel, warm_variant

    if device == "cpu":
        torch.set_num_threads(1)
    warm_runtime(torch, device)

    def block(c_in: int, c_out: int) -> list[torch.nn.Module]:
        return [torch.nn.Conv2d(c_in, c_out, 3, padding=1), torch.nn.BatchNorm2d(c_out), torch.nn.ReLU(),
                torch.nn.MaxPool2d(2)]  # fmt: skip

    def cnn() -> torch.nn.Module:
        if resnet50:
            import torchvision  # the device machine has it; CI does not

            return torchvision.models.resnet50()
        blocks = [*block(3, 32), *block(32, 64), *block(64, 128), *block(128, 256)]
        return torch.nn.Sequential(*blocks, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 10))

    def done() -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()

    batch = 32 if resnet50 else 1
    model = TorchModel(cnn, lambda b: torch.randn(b, 3, 224, 224), MODEL_TOLERANCES)
    t0 = done()
    for variant in ("eager", "bf16"):
        warm_variant(device, {"variant": variant})
    t1 = done()
    if not bare:
        model.warm(device, {"variant": "eager"}, ["eager", "bf16"], [batch])
    own = 0.0 if bare else done() - t1
    name = "resnet50" if resnet50 else "cnn"
    said = "left out (--bare)" if bare else f"{own:.3f} s"
    print(f"{name} on {device}, batch {batch}, eager and bf16 warm-up: small model {t1 - t0:.3f} s, own model {said}")
    setups = 0.0
    for variant in ("eager", "bf16"):
        t2 = done()
        ctx = WorkloadContext(device=device, params={}, seed=0)
        call = model.setup(ctx, variant, batch)
        if ctx.check is not None:
            ctx.check()
        t3 = done()
        call()
        t4 = done()
        setups += t3 - t2
        print(f"{name} {variant:<6} case set-up {t3 - t2:.3f} s, one call {t4 - t3:.3f} s")
    print(f"{name} own model and set-ups: {own + setups:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=6)
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--device", default="cpu", help="with --cost")
    parser.add_argument("--resnet50", action="store_true", help="with --cost: torchvision's ResNet-50 at batch 32")
    parser.add_argument("--bare", action="store_true", help="with --cost: no own-model warm-up")
    parser.add_argument("models", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    if args.cost:
        cost(args.device, args.resnet50, args.bare)
        return
    for name in args.models:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "wl.py").write_text(_workload_file(name))
            run = ["run", "wl.py", "--out", "out", "--rounds", "4", "--seed", str(args.seed), "--round-time", "0.05"]
            subprocess.run([sys.executable, "-m", "perfci", *run], cwd=tmp, check=True, capture_output=True)
            doc = json.loads((Path(tmp) / "out" / "results.json").read_text())
        for case in doc["cases"]:
            mib = [r["telemetry"]["memory_host_bytes"] / 2**20 for r in case["rounds"]]
            readings = " ".join(f"{m:5.2f}" for m in mib)
            print(f"{case['id']:<40} {readings}  spread {max(mib) - min(mib):.2f} MiB")


if __name__ == "__main__":
    main()
