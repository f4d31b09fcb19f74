"""Same-machine A/B: revisions, environments, lockstep orchestration, confirmation."""
