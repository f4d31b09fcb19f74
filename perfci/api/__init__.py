"""The library API under the CLI: select cases, run, compare files, A/B two revisions, gate."""
