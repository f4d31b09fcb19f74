"""How things are measured: clocks, calibration and stopping rules, memory, telemetry, fingerprint."""
