"""Objectives, one module a family: gradients, hessians, intercepts, transforms (registry.py:
the objectives by name)."""
