"""Lab: is the device clock's profiled slice slower than the timed loop, and why? (GPU machine)

One process per run: BERT-base (random weights, batch 8, eager, fp32) or ResNet-50; blocks alternated 6 times:
  timed      a CUDA-event loop of 30 back-to-back calls (per call)
  synced     30 calls, each followed by a synchronize, no profiler (CUDA events per call; median, min)
  slice      perfci's profiled slice (profilers/kineto.profile_device: a synchronize after every call)
  nosync     the same profiled slice without the per-call synchronize (calls back to back)
Prints per block the per-call figure in ms, and NVML's SM clock and clock-event reasons after it.

    python3 benchmarks/lab/profile_slice_check.py bert|resnet50 [--blocks 6]
"""

from __future__ import annotations

import argparse
import statistics

import pynvml
import torch

from perfci.profilers.device_time import CUPTI, calls, summarize
from perfci.profilers.kineto import MARK, WARM_CALLS, profile_device, read_events


def model(name: str):
    torch.manual_seed(0)
    if name == "bert":
        from transformers import BertConfig, BertModel

        m = BertModel(BertConfig()).cuda().eval()
        ids = torch.randint(0, 30000, (8, 128), device="cuda")
        return lambda: m(input_ids=ids).last_hidden_state
    import torchvision

    m = torchvision.models.resnet50(weights=None).cuda().eval()
    x = torch.randn(8, 3, 224, 224, device="cuda")
    return lambda: m(x)


def nosync_slice(fn, n: int):
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(WARM_CALLS + n):
            with record_function(f"{MARK}{i}"):
                fn()
        torch.cuda.synchronize()
    w, o, a = read_events(list(prof.profiler.kineto_results.events()), WARM_CALLS)
    return summarize(calls(w, o, a), CUPTI)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--blocks", type=int, default=6)
    args = ap.parse_args()
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)

    def gpu() -> str:
        clock = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
        return f"{clock} MHz reasons 0x{reasons:x} {pynvml.nvmlDeviceGetPowerUsage(h) / 1000:.0f} W"

    fn = model(args.name)
    with torch.inference_mode():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        for b in range(args.blocks):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(30):
                fn()
            e.record()
            e.synchronize()
            print(f"block {b} timed   {s.elapsed_time(e) / 30:.3f} ms/call          {gpu()}")
            per = []
            for _ in range(30):
                s.record()
                fn()
                e.record()
                e.synchronize()
                per.append(s.elapsed_time(e))
            print(f"block {b} synced  med {statistics.median(per):.3f} min {min(per):.3f} ms  {gpu()}")
            d = profile_device(torch, fn, 30)
            print(f"block {b} slice   med {statistics.median(d.samples) * 1e3:.3f} min {min(d.samples) * 1e3:.3f} ms "
                  f"kernels {d.kernels} dropped {d.dropped_calls}  {gpu()}")  # fmt: skip
            d = nosync_slice(fn, 30)
            print(f"block {b} nosync  med {statistics.median(d.samples) * 1e3:.3f} min {min(d.samples) * 1e3:.3f} ms "
                  f"kernels {d.kernels} dropped {d.dropped_calls}  {gpu()}")  # fmt: skip


if __name__ == "__main__":
    main()
