"""The example project's own kernels."""
