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
