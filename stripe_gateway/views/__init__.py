"""Stripe's pages and endpoint outside the API: ``cards`` (Billing → Payment methods, paying an
invoice by card, the return from 3-D Secure) and ``webhook`` (Stripe's notifications)."""
