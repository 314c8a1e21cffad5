"""Dashboard pages of Billing, one module per page or resource: the overview, invoices (with
their PDFs and "pay with credit"), payments, the credit ledger (``balance``), the billing
profile, ordering a plan (``orders``) and subscriptions. What the pages share is in ``mixins``;
no page module imports another's views.

Views parse input, call one service of billing/services with the signed-in person as the actor,
and render; amounts are shown with ``hosting.money.format_amount``. Every document is looked up
within ``request.account``, so another account's invoices and credit notes answer 404.
Reading needs ``billing:read`` in the role's scopes (else 404, like a missing right; the
navigation hides the section then); paying and saving the profile need ``billing:write``, and a
suspended account is read-only.
"""
