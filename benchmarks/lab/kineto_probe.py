"""Prints what torch.profiler's Kineto events look like on this GPU machine (names, device types, correlation
links, user annotations), for the reader in perfci/profilers/kineto.py. Usage: python3 benchmarks/lab/kineto_probe.py"""

import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

print("python", sys.version.split()[0], "torch", torch.__version__)
MODULES = "msgspec typer rich jinja2 sqlalchemy scipy pandas psutil pytest pytest_benchmark onnx numpy torchvision"
for mod in MODULES.split():
    try:
        m = __import__(mod)
        print("have", mod, getattr(m, "__version__", "?"))
    except Exception as exc:
        print("MISSING", mod, type(exc).__name__)
x = torch.randn(256, 256, device="cuda")
lin = torch.nn.Linear(256, 256).cuda()
fn = lambda: torch.relu(lin(x)).sum()  # noqa: E731
fn()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for i in range(3):
        with record_function(f"perfci.call#{i}"):
            fn()
        torch.cuda.synchronize()
evs = list(prof.profiler.kineto_results.events())
print("events", len(evs))
for e in evs:
    ids = (e.start_ns(), e.end_ns(), e.correlation_id(), e.linked_correlation_id(), e.is_user_annotation())
    print(repr(e.name())[:40], str(e.device_type()), *ids)
