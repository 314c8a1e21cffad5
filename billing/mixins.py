"""What every Billing page shares: the area's rights (``BillingPageMixin``: read with
``billing:read``, change with ``billing:write``), and the one invoice or subscription of the
current account a page is about (another account's answers 404).
"""

from functools import cached_property

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext as _

from accounts.mixins import AreaPageMixin
from billing.models import Invoice, Subscription
from billing.selectors import billing_profile_of, invoices_of_account, subscriptions_of_account
from billing.services.gateways import PaymentNotSupported, card_gateway
from hosting.money import format_amount


def tax_label(percentage: str, *, inclusive: bool) -> str:
    """``Tax 21%``, ``Tax 21% (included)``: a tax line's name on a page."""
    if inclusive:
        return _("Tax %(percentage)s%% (included)") % {"percentage": percentage}
    return _("Tax %(percentage)s%%") % {"percentage": percentage}


class BillingPageMixin(AreaPageMixin):
    """A Billing page: readable with ``billing:read``, changed only with ``billing:write``."""

    area = "billing"

    @property
    def refused_url(self) -> str:
        return reverse("billing")

    @cached_property
    def profile(self):
        return billing_profile_of(self.account)

    def money(self, amount: int, currency: str | None = None) -> str:
        """``amount`` in ``currency``, or in the account's billing currency."""
        return format_amount(amount, currency or self.profile.currency)

    @cached_property
    def cards_refused(self) -> str:
        """Why this account cannot pay by card (no card gateway here, or staff chose other
        means for it); empty when it can."""
        try:
            # The profile if this page read it already; else card_gateway reads only the
            # account's gateway list, and only when the service has cards at all.
            card_gateway(account=self.account, profile=self.__dict__.get("profile"))
        except PaymentNotSupported as refusal:
            return refusal.message
        return ""

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            cards_offered=not self.cards_refused,
            cards_page=settings.STRIPE_ENABLED,
            **kwargs,
        )


class InvoiceObjectMixin(BillingPageMixin):
    """A page of one invoice of the current account, found by ``invoice_id``."""

    @cached_property
    def invoice(self) -> Invoice:
        invoices = invoices_of_account(account_id=self.account.id)
        return get_object_or_404(invoices, id=self.kwargs["invoice_id"])

    @property
    def refused_url(self) -> str:
        return reverse("billing_invoice", args=[self.kwargs["invoice_id"]])


class SubscriptionObjectMixin(BillingPageMixin):
    @cached_property
    def subscription(self) -> Subscription:
        subscriptions = subscriptions_of_account(account_id=self.account.id).select_related(
            "price__product", "server", "bot"
        )
        return get_object_or_404(subscriptions, id=self.kwargs["subscription_id"])

    @property
    def refused_url(self) -> str:
        return reverse("billing_subscription", args=[self.kwargs["subscription_id"]])
