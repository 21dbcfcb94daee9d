"""One run: its layout, job record, tracking and summaries; the actions."""
