"""Writes of the analytics app: usage (samples, rollups, expiry)."""
