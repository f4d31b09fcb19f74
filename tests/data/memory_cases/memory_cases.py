"""Three cases whose own memory is known: a resident 400 MB tensor read 1,000 elements a call, a
4 KB tensor, and a call that allocates, fills and sums its own 200 MB tensor."""

import perfci

N_BIG = 100_000_000  # float32: 400 MB
N_TRANSIENT = 50_000_000  # float32: 200 MB


@perfci.workload(timing={"budget_s": 0.1, "min_samples": 3, "warmup_s": 0.0, "min_warmup_calls": 1})
def big_resident(ctx):
    import torch

    t = torch.ones(N_BIG)

    def fn():
        return t[:1000].sum()

    return fn


@perfci.workload(timing={"budget_s": 0.1, "min_samples": 3})
def small_case(ctx):
    import torch

    t = torch.ones(1024)

    def fn():
        return t.sum()

    return fn


@perfci.workload(timing={"budget_s": 0.1, "min_samples": 3, "warmup_s": 0.0, "min_warmup_calls": 1})
def transient_alloc(ctx):
    import torch

    def fn():
        t = torch.empty(N_TRANSIENT)
        t.fill_(1.0)
        return t.sum()

    return fn


@perfci.workload(timing={"budget_s": 0.1, "min_samples": 3})
def setup_scratch(ctx):
    """A set-up that builds its state through a 24 MB scratch tensor it frees (a model made on the CPU, then moved
    to the GPU, does this): below the workers' 32 MiB mmap threshold the freed pages stay in the C heap, and they
    are not the case's."""
    import torch

    scratch = torch.ones(6_000_000)  # float32: 24 MB
    t = scratch[:1024].clone()
    del scratch

    def fn():
        return t.sum()

    return fn
