"""The workload API, discovery and the built-in suites."""
