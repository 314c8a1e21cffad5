"""Reads of the analytics app."""
