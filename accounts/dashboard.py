"""Temporary: the old name of ``accounts.mixins``, for billing's views/ package only, which
imports ``AreaPageMixin`` from here; once it imports ``accounts.mixins`` (issue 29 item 2),
this module goes."""

from accounts.mixins import AccountChangeMixin, AccountPageMixin, AreaPageMixin

__all__ = ["AccountChangeMixin", "AccountPageMixin", "AreaPageMixin"]
