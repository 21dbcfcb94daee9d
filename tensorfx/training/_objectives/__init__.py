"""Objectives: regression losses, multi-task losses, weights."""
