"""Baseline, incremental and audit engines: plain Python over the client and a destination."""
