# Sourced by gpu_ab_time.sh and gpu_ab_bar.sh: `ab_workload FACTOR` prints the two-case CUDA workload file of
# the GPU A/B benchmarks (a 256 MiB copy scaled by FACTOR, a 4096^3 bf16 GEMM); `ab_repo` makes a throwaway git
# repository with it at FACTOR 1.0 (one commit) and prints its path.
ab_workload() {
  cat <<PY
import perfci

COPY_FACTOR = $1  # 1.01 in the head of gpu_ab_bar.sh: the copy moves 1% more bytes


@perfci.workload(devices=["cuda"])
def copy(ctx):
    import torch

    g = torch.Generator(device="cuda").manual_seed(ctx.seed)
    src = torch.randn(int(2**26 * COPY_FACTOR), device=ctx.device, generator=g)  # 256 MiB of float32
    dst = torch.empty_like(src)
    ctx.bytes = 2.0 * src.numel() * src.element_size()
    return lambda: dst.copy_(src)


@perfci.workload(devices=["cuda"])
def gemm(ctx):
    import torch

    g = torch.Generator(device="cuda").manual_seed(ctx.seed)
    a = torch.randn(4096, 4096, device=ctx.device, generator=g, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=ctx.device, generator=g, dtype=torch.bfloat16)
    ctx.flops = 2.0 * 4096**3
    return lambda: a @ b
PY
}

ab_repo() {
  local repo
  repo=$(mktemp -d)
  mkdir -p "$repo/perf"
  ab_workload 1.0 >"$repo/perf/bench_ab.py"
  git -C "$repo" init -q && git -C "$repo" add -A && git -C "$repo" -c user.email=x@y -c user.name=x commit -qm base
  echo "$repo"
}
