"""What vulture cannot see being used (pyproject.toml [tool.vulture] reads this file with perfci/): the keys of
open objects that perfci reads by string (`fingerprint.get("cpu_logical_cores")`), and a format field that is
written and kept but read only by the reader of a file (a case error's round), and the API of pytest-benchmark's
fixture that perfci serves to users' tests, and the report rows' sort keys that only the HTML template reads."""

from perfci.format.model import CaseError, DeviceTime, FingerprintKeys, TelemetryKeys
from perfci.metrics.definition import MetricRegistry
from perfci.pytest_plugin.benchmark_fixture import ServedBenchmark
from perfci.reports.case_rows import ComparisonRow, RunRow
from perfci.stats.components import JobTerm

FingerprintKeys.os
FingerprintKeys.machine
FingerprintKeys.python
FingerprintKeys.cpu_model
FingerprintKeys.cpu_physical_cores
FingerprintKeys.cpu_logical_cores
FingerprintKeys.cpu_affinity_cores
FingerprintKeys.memory_total_bytes
FingerprintKeys.libraries
FingerprintKeys.gpus
FingerprintKeys.gpu_driver
FingerprintKeys.cuda_driver
FingerprintKeys.gpu_note
FingerprintKeys.peaks
TelemetryKeys.timer
TelemetryKeys.timer_overhead_s
TelemetryKeys.work_sources
TelemetryKeys.minor_faults_per_call
TelemetryKeys.memory_host_bytes
TelemetryKeys.memory_device_bytes
TelemetryKeys.nvml_process_bytes
TelemetryKeys.energy_per_call_j
TelemetryKeys.reference_per_call_s
TelemetryKeys.throttle_flagged
TelemetryKeys.throttle_dropped
TelemetryKeys.sustained
TelemetryKeys.notes
CaseError.round_index
TelemetryKeys.cpu_wait
TelemetryKeys.cpu_pressure
TelemetryKeys.cpu_steal
TelemetryKeys.speed_probe_s
DeviceTime.unstable  # a results-format field: written for readers of the file and the report
ServedBenchmark.pedantic  # pytest-benchmark's fixture API, called by users' tests
ServedBenchmark.weave
DeviceTime.kernels  # results-format fields: written for readers of the file and the report
DeviceTime.dropped_calls
JobTerm.jobs  # written into `perfci history noise --format json` rows by asdict
MetricRegistry.with_metrics  # a project's own metric definitions join the registry here
ComparisonRow.mdc_v
ComparisonRow.baseline_v
ComparisonRow.candidate_v
ComparisonRow.noise_v
RunRow.median_v
RunRow.noise_v
RunRow.bandwidth_v
RunRow.flops_v
RunRow.memory_v
RunRow.energy_v
RunRow.vs_ref_v
