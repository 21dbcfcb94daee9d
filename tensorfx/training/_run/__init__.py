"""One run: its layout, job record, tracking, summaries and progress; actions."""
