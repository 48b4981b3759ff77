"""Metrics as mergeable summaries of predictions, exact for any partitioning (registry.py: the
metrics by name)."""
