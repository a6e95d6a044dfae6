"""The decision: rules and search run once per job, read by every command (decision/run.py)."""
