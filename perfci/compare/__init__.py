"""Baselines and decisions: compare a candidate's results with a baseline's."""
