"""Held-out models for the steady-clock bars (benchmarks/gpu_heldout.sh): an OPT-125m language model
(transformers, built from its config, random weights, bf16, batch 8 x 128 tokens) and a ConvNeXt-Tiny (timm,
random weights, bf16, batch 16 at 224x224), neither used to tune the device clock. The head adds `EXTRA` small
elementwise kernels after the language model.

    python3 benchmarks/gpu_heldout.py models N > models.py      # the models file, N extra kernels
    python3 benchmarks/gpu_heldout.py calibrate TARGET          # N for a TARGET change (0.006: +0.6%)
    python3 benchmarks/gpu_heldout.py truth MODELS_A MODELS_B K  # the true change: summed kernel time per call,
                                                                 # K separate processes a side, 5 blocks each

`calibrate` and `truth` read the summed CUPTI kernel time of a call through perfci's own profiled slice
(profilers/kineto.take_slice, read_slice), in processes of their own, outside any A/B.

HELDOUT_MODELS=neox-vit picks a second pair, first measured after the A/B's pair blocks, release step and
stopping rule were tuned on the first: a Pythia-160m-sized GPT-NeoX language model (transformers, built from a
config, random weights, bf16, batch 8 x 128 tokens; the head's kernels after it) and a ViT-S/16 (timm, random
weights, bf16, batch 32 at 224x224). HELDOUT_MODELS=gpt2-swin, a third, first measured after the first look of a
GPU A/B went from 4 to 5 pairs: a GPT-2 small (transformers, from its config) and a Swin-T (timm, batch 16).
HELDOUT_MODELS=llama-effnet, a fourth, first measured once every code point of the steady-clock work was in: a
Llama of about 160M parameters (transformers, from a config: 12 layers, width 768, bf16, batch 8 x 128 tokens)
and an EfficientNet-B0 (timm, random weights, bf16, batch 32). HELDOUT_MODELS=bloom-regnet, a fifth, first measured
after the baseline of the steady-clock work was re-run on the same card: a BLOOM of about 125M parameters
(transformers, from a config: 12 layers, width 768, ALiBi attention, bf16, batch 8 x 128 tokens) and a RegNetY-1.6GF
(timm, random weights, bf16, batch 32). HELDOUT_MODELS=qwen-mobilenet, a sixth, first measured on
2026-12-06: a Qwen2 of about 150M parameters (transformers, from a config: 12 layers, width 768, grouped-query attention
with 4 key-value heads, bf16, batch 8 x 128 tokens) and a MobileNetV3-Large (timm, random weights, bf16, batch 32).
HELDOUT_MODELS=phi-densenet, a seventh, first measured after the seventh hostile-input pass (2026-12-06): a Phi of
about 150M parameters (transformers, from a config: 12 layers, width 768, partial rotary attention, bf16, batch
8 x 128 tokens) and a DenseNet-121 (timm, random weights, bf16, batch 32). HELDOUT_MODELS=mistral-mixer, an eighth,
first measured on 2026-12-06 after the eighth audit: a Mistral of about 150M parameters (transformers, from a config:
12 layers, width 768, grouped-query attention with 4 key-value heads, a 64-token sliding window, bf16, batch
8 x 128 tokens) and an MLP-Mixer-B/16 (timm, random weights, bf16, batch 32). HELDOUT_MODELS=bigcode-inception, a
ninth, added on 2026-12-06 and first measured that evening (docs/gpu.md): a GPTBigCode of about
125M parameters (transformers, from a config: 12 layers, width 768, multi-query attention, bf16, batch 8 x 128
tokens) and an Inception-v3 (timm, random weights, bf16, batch 32 at 224x224). HELDOUT_MODELS=gptj-poolformer, a tenth,
added on 2026-12-06 for the first H200 lent after the ninth: a GPT-J of about 125M parameters (transformers, from a
config: 12 layers, width 768, rotary attention on 64 dimensions, bf16, batch 8 x 128 tokens) and a PoolFormer-S12
(timm, random weights, bf16, batch 32). HELDOUT_MODELS=gptneo-dla, an eleventh, added on 2026-12-07 for that
day's H200: a GPT-Neo of about 125M parameters (transformers, from a config: 12 layers, width 768, global and local
attention alternating, bf16, batch 8 x 128 tokens) and a DLA-34 (timm, random weights, bf16, batch 32).
HELDOUT_MODELS=falcon-hrnet, a twelfth, added on 2026-12-07 for the next device lent: a Falcon of about 125M
parameters (transformers, from a config: 12 layers, width 768, parallel attention and MLP, multi-query attention,
bf16, batch 8 x 128 tokens) and an HRNet-W18-Small (timm, random weights, bf16, batch 32).
HELDOUT_MODELS=codegen-cspdarknet, a thirteenth, added on 2026-12-07 (late) for the next device lent: a CodeGen of
about 125M parameters (transformers, from a config: 12 layers, width 768, rotary attention on 64 dimensions, parallel
attention and MLP, bf16, batch 8 x 128 tokens) and a CSPDarkNet-53 (timm, random weights, bf16, batch 32); and
HELDOUT_MODELS=olmo-ghostnet, a fourteenth, the fallback where the device's transformers has no CodeGen: an OLMo of
about 150M parameters (12 layers, width 768, non-parametric layer norm) and a GhostNet-1.0 (timm, batch 32).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

LANGUAGE_MODEL = """

@perfci.workload(devices=["cuda"])
def {name}(ctx):
    import torch
    from transformers import {imports}

    torch.manual_seed(ctx.seed)
{build}
    model = model.to(ctx.device, torch.bfloat16).eval()
    ids = torch.randint(0, 50000, (8, 128), device=ctx.device)
    pad = torch.ones(64 * 1024, device=ctx.device, dtype=torch.bfloat16)

    def call():
        with torch.inference_mode():
            y = model(input_ids=ids).last_hidden_state
            for _ in range(EXTRA_KERNELS):  # the head: small elementwise kernels after the model
                pad.mul_(1.0)
            return y

    return call
"""

VISION_MODEL = """

@perfci.workload(devices=["cuda"])
def {name}(ctx):
    import timm
    import torch

    torch.manual_seed(ctx.seed)
    model = timm.create_model("{timm_name}", pretrained=False).to(ctx.device, torch.bfloat16).eval()
    x = torch.randn({batch}, 3, 224, 224, device=ctx.device, dtype=torch.bfloat16)

    def call():
        with torch.inference_mode():
            return model(x)

    return call
"""


def _file(language: dict[str, str], vision: dict[str, str]) -> str:
    """A models file: the language model (the head's kernels after it) and the vision model."""
    body = LANGUAGE_MODEL.format(**language) + VISION_MODEL.format(**vision)
    return "import perfci\n\nEXTRA_KERNELS = {extra}\n" + body


OPT = {"name": "opt125m", "imports": "OPTConfig, OPTModel", "build": "    model = OPTModel(OPTConfig())"}
NEOX = {
    "name": "pythia160m",
    "imports": "GPTNeoXConfig, GPTNeoXModel",
    "build": "    config = GPTNeoXConfig(\n"
    "        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=50304\n"
    "    )\n    model = GPTNeoXModel(config)",
}
GPT2 = {"name": "gpt2_small", "imports": "GPT2Config, GPT2Model", "build": "    model = GPT2Model(GPT2Config())"}
MODELS = _file(OPT, {"name": "convnext_tiny", "timm_name": "convnext_tiny", "batch": "16"})
NEOX_VIT = _file(NEOX, {"name": "vit_small", "timm_name": "vit_small_patch16_224", "batch": "32"})

PROBE = """
import importlib.util, json, sys, statistics
import torch
from perfci.profilers.kineto import read_slice, take_slice
from perfci.workloads.api import WorkloadContext
spec = importlib.util.spec_from_file_location("models", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
fn = getattr(mod, sys.argv[3])(WorkloadContext(device="cuda", params={}, seed=0))
for _ in range(20):
    fn()
blocks = []
for _ in range(int(sys.argv[2])):
    d = read_slice(take_slice(torch, fn, 20))
    blocks.append(statistics.median(d.samples))
print("PROBE " + json.dumps(blocks))
"""


# the model files and the language model's workload (the one the head changes), by HELDOUT_MODELS
GPT2_SWIN = _file(GPT2, {"name": "swin_tiny", "timm_name": "swin_tiny_patch4_window7_224", "batch": "16"})
LLAMA = {
    "name": "llama160m",
    "imports": "LlamaConfig, LlamaModel",
    "build": "    config = LlamaConfig(\n"
    "        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=2048, vocab_size=50304\n"
    "    )\n    model = LlamaModel(config)",
}
LLAMA_EFFNET = _file(LLAMA, {"name": "efficientnet_b0", "timm_name": "efficientnet_b0", "batch": "32"})
BLOOM = {
    "name": "bloom125m",
    "imports": "BloomConfig, BloomModel",
    "build": "    model = BloomModel(BloomConfig(vocab_size=50304, hidden_size=768, n_layer=12, n_head=12))",
}
BLOOM_REGNET = _file(BLOOM, {"name": "regnety_016", "timm_name": "regnety_016", "batch": "32"})
QWEN2 = {
    "name": "qwen2_150m",
    "imports": "Qwen2Config, Qwen2Model",
    "build": "    config = Qwen2Config(\n"
    "        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,\n"
    "        intermediate_size=2048, vocab_size=50304,\n"
    "    )\n    model = Qwen2Model(config)",
}
QWEN_MOBILENET = _file(QWEN2, {"name": "mobilenetv3_large", "timm_name": "mobilenetv3_large_100", "batch": "32"})
PHI = {
    "name": "phi150m",
    "imports": "PhiConfig, PhiModel",
    "build": "    config = PhiConfig(\n"
    "        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=51200\n"
    "    )\n    model = PhiModel(config)",
}
PHI_DENSENET = _file(PHI, {"name": "densenet121", "timm_name": "densenet121", "batch": "32"})
MISTRAL = {
    "name": "mistral150m",
    "imports": "MistralConfig, MistralModel",
    "build": "    config = MistralConfig(\n"
    "        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,\n"
    "        intermediate_size=2048, vocab_size=50304, sliding_window=64,\n"
    "    )\n    model = MistralModel(config)",
}
MISTRAL_MIXER = _file(MISTRAL, {"name": "mixer_b16", "timm_name": "mixer_b16_224", "batch": "32"})
BIGCODE = {
    "name": "bigcode125m",
    "imports": "GPTBigCodeConfig, GPTBigCodeModel",
    "build": "    config = GPTBigCodeConfig(\n"
    "        n_embd=768, n_layer=12, n_head=12, n_inner=3072, vocab_size=50304, multi_query=True\n"
    "    )\n    model = GPTBigCodeModel(config)",
}
BIGCODE_INCEPTION = _file(BIGCODE, {"name": "inception_v3", "timm_name": "inception_v3", "batch": "32"})
GPTJ = {
    "name": "gptj125m",
    "imports": "GPTJConfig, GPTJModel",
    "build": "    config = GPTJConfig(n_embd=768, n_layer=12, n_head=12, rotary_dim=64, vocab_size=50304)\n"
    "    model = GPTJModel(config)",
}
GPTJ_POOLFORMER = _file(GPTJ, {"name": "poolformer_s12", "timm_name": "poolformer_s12", "batch": "32"})
GPTNEO = {
    "name": "gptneo125m",
    "imports": "GPTNeoConfig, GPTNeoModel",
    "build": "    config = GPTNeoConfig(\n"
    "        vocab_size=50304, hidden_size=768, num_layers=12, num_heads=12,\n"
    '        attention_types=[[["global", "local"], 6]], window_size=256,\n'
    "    )\n    model = GPTNeoModel(config)",
}
GPTNEO_DLA = _file(GPTNEO, {"name": "dla34", "timm_name": "dla34", "batch": "32"})
FALCON = {
    "name": "falcon125m",
    "imports": "FalconConfig, FalconModel",
    "build": "    config = FalconConfig(\n"
    "        vocab_size=50304, hidden_size=768, num_hidden_layers=12, num_attention_heads=12\n"
    "    )\n    model = FalconModel(config)",
}
FALCON_HRNET = _file(FALCON, {"name": "hrnet_w18_small", "timm_name": "hrnet_w18_small", "batch": "32"})
CODEGEN = {
    "name": "codegen125m",
    "imports": "CodeGenConfig, CodeGenModel",
    "build": "    config = CodeGenConfig(vocab_size=50304, n_embd=768, n_layer=12, n_head=12, rotary_dim=64)\n"
    "    model = CodeGenModel(config)",
}
CODEGEN_CSPDARKNET = _file(CODEGEN, {"name": "cspdarknet53", "timm_name": "cspdarknet53", "batch": "32"})
OLMO = {
    "name": "olmo150m",
    "imports": "OlmoConfig, OlmoModel",
    "build": "    config = OlmoConfig(\n"
    "        vocab_size=50304, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=2048\n"
    "    )\n    model = OlmoModel(config)",
}
OLMO_GHOSTNET = _file(OLMO, {"name": "ghostnet", "timm_name": "ghostnet_100", "batch": "32"})
MODEL_SETS = {
    "opt-convnext": (MODELS, "opt125m"),
    "neox-vit": (NEOX_VIT, "pythia160m"),
    "gpt2-swin": (GPT2_SWIN, "gpt2_small"),
    "llama-effnet": (LLAMA_EFFNET, "llama160m"),
    "bloom-regnet": (BLOOM_REGNET, "bloom125m"),
    "qwen-mobilenet": (QWEN_MOBILENET, "qwen2_150m"),
    "phi-densenet": (PHI_DENSENET, "phi150m"),
    "mistral-mixer": (MISTRAL_MIXER, "mistral150m"),
    "bigcode-inception": (BIGCODE_INCEPTION, "bigcode125m"),
    "gptj-poolformer": (GPTJ_POOLFORMER, "gptj125m"),
    "gptneo-dla": (GPTNEO_DLA, "gptneo125m"),
    "falcon-hrnet": (FALCON_HRNET, "falcon125m"),
    "codegen-cspdarknet": (CODEGEN_CSPDARKNET, "codegen125m"),
    "olmo-ghostnet": (OLMO_GHOSTNET, "olmo150m"),
}


def _chosen() -> tuple[str, str]:
    name = os.environ.get("HELDOUT_MODELS", "opt-convnext")
    if name not in MODEL_SETS:
        raise SystemExit(f"HELDOUT_MODELS: one of {', '.join(MODEL_SETS)}, not {name!r}")
    return MODEL_SETS[name]


def models(extra: int) -> str:
    return _chosen()[0].format(extra=extra)


def _probe(models_file: Path, blocks: int) -> list[float]:
    lm = _chosen()[1]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(models_file), str(blocks), lm], capture_output=True, text=True
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("PROBE ")), None)
    if line is None:
        raise SystemExit(f"probe failed: {out.stderr.strip().splitlines()[-1:]}")
    values: list[float] = json.loads(line[len("PROBE ") :])
    return values


def calibrate(target: float, folder: Path) -> int:
    """Extra kernels for a `target` change of the language model's summed kernel time per call."""
    folder.mkdir(parents=True, exist_ok=True)
    base, probe = folder / "base.py", folder / "probe.py"
    base.write_text(models(0))
    # 256 kernels (a fifth of the Llama's call): a process draws its device time at set-up (calibration and truth
    # base processes 0.6-0.8% apart, docs/gpu.md), which over 64 kernels could move the estimate by a fifth
    probe.write_text(models(256))
    t0, t256 = statistics.median(_probe(base, 3)), statistics.median(_probe(probe, 3))
    per_kernel = (t256 - t0) / 256
    n = max(1, round(target * t0 / per_kernel)) if per_kernel > 0 else 8
    print(f"base {t0 * 1e6:,.1f} us, one extra kernel {per_kernel * 1e6:.2f} us: {n} kernels", file=sys.stderr)
    return n


def truth(a: Path, b: Path, processes: int) -> None:
    """The true change: per side, `processes` separate processes of 5 blocks of 20 profiled calls, alternated."""
    sides: dict[str, list[list[float]]] = {"base": [], "head": []}
    for _ in range(processes):
        sides["base"].append(_probe(a, 5))
        sides["head"].append(_probe(b, 5))
    med = {k: statistics.median(statistics.median(p) for p in v) for k, v in sides.items()}
    for k, v in sides.items():
        per = [statistics.median(p) for p in v]
        within = max(max(p) / min(p) - 1 for p in v)
        print(
            f"{k}: {med[k] * 1e6:,.1f} us per call; processes {min(per) * 1e6:,.1f}-{max(per) * 1e6:,.1f} us "
            f"(spread {max(per) / min(per) - 1:.2%}); blocks within a process within {within:.2%}"
        )
    print(f"true change (summed kernel time per call): {med['head'] / med['base'] - 1:+.2%}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "models":
        print(models(int(sys.argv[2])), end="")
    elif cmd == "calibrate":
        print(calibrate(float(sys.argv[2]), Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/heldout-cal")))
    elif cmd == "truth":
        truth(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        raise SystemExit(__doc__)
