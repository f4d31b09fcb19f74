"""perfci: continuous performance-regression gate for ML kernels and models."""

from perfci.workloads.api import Workload, WorkloadContext, workload

__version__ = "0.1.0"
__all__ = ["Workload", "WorkloadContext", "__version__", "workload"]
