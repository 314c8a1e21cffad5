"""Card payments through Stripe: the ``stripe`` gateway on billing's gateway interface."""
