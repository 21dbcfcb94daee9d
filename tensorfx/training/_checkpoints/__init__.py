"""Checkpoints: saving, resuming, damaged ones, warm start, export."""
