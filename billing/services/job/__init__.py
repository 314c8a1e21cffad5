"""The billing job: what happens to subscriptions and invoices by the clock. ``renewals`` is the
run (one subscription at a time, and the walk of a test clock), ``renewal_batch`` its common
case many at once, ``dunning`` what follows a failed collection. ``billing/upkeep.py`` runs it
with the other apps' upkeep, ``manage.py billing_run`` on its own.

The e-mails stay in ``billing.services.notices``: invoices and payments send them too, and the
worker finds their queued task by that module's path.
"""
