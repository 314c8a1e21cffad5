"""Dashboard pages of Support: ``customer`` (the account's tickets, ``support/…``) and ``desk``
(the staff desk, ``desk/…``)."""
