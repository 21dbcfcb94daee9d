"""The run drivers and what a run writes.

Training, the evaluator task and `--follow`, the actions; the job layout,
its record, tracking and summaries.
"""
