"""Evaluation: targets, slices, percentiles, the evaluator task."""
