"""The measuring engine: runner (select, schedule, interleave rounds), worker process, supervisor (time-outs,
crashes), case session, lockstep pairs."""
