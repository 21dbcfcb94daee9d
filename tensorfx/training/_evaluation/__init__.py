"""Evaluation: validation targets, slices, aggregation and percentiles."""
