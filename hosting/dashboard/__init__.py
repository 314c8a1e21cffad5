"""Plumbing the dashboard's pages share, as ``hosting/api/`` is the API's: it imports no app."""
