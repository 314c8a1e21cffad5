"""Write-side operations of card payments: the Stripe client, customers, saved cards, charges,
Stripe's notifications and reconciliation. The modules, lowest first: ``client``,
``customers``, ``methods``, ``charges``, ``gateway``, ``notifications``."""
