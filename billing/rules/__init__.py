"""Billing's rules: how money is computed, never stored. ``periods`` (where a period ends),
``proration`` (a change in the middle of one), ``tax`` (which tax, how much), ``pricing`` (an
invoice's discounts and tax, line by line) and ``cycle`` (when a renewal is issued, how long
dunning waits).

Nothing here writes to the database: the services read what a rule needs, ask it, and write
the answer, so the billing job, the order preview and the analytics' MRR compute alike. The
layer sits between the services and the models (the inner-layer contract in pyproject.toml).
"""
