"""Pure statistics: functions over sequences of numbers. No I/O, no clocks; seeds are parameters."""
