"""The customer's credit: a ledger whose sum is the balance (never a bare number).

Entries are written under the account's row lock, so two writers cannot both spend the same
credit; the balance can never go below zero (a database constraint on ``ending_balance`` too).
"""

from django.db import transaction
from django.db.models import Sum
from django.utils.translation import gettext as _

from accounts.actors import Actor
from accounts.models import Account
from accounts.services import account_lock
from billing.clock import billing_now
from billing.models import BalanceTransaction, BillingProfile, CreditNote, Invoice
from billing.representations import balance_transaction_representation
from events.services import record_event
from hosting.errors import Conflict, ValidationFailed
from hosting.money import (
    SUPPORTED_CURRENCIES,
    UnsupportedCurrency,
    format_amount,
    validate_currency,
)


def balance_of(account: Account) -> int:
    """The account's credit in its billing currency's minor units: the ledger's sum."""
    total = BalanceTransaction.objects.filter(account=account).aggregate(total=Sum("amount"))
    return total["total"] or 0


def billing_currency_fix(account: Account, currency: str) -> str:
    """Fix the account's billing currency on first use; refuse another one afterwards.
    Returns the currency as the ISO code (``eur`` is EUR; an unknown one is a field error)."""
    try:
        currency = validate_currency(currency)
    except UnsupportedCurrency as unknown:
        # hosting.money's own message, in the request's language.
        message = _("Currency must be one of %(currencies)s.") % {
            "currencies": ", ".join(sorted(SUPPORTED_CURRENCIES))
        }
        raise ValidationFailed.field("currency", unknown.code, message) from None
    profile, _created = BillingProfile.objects.select_for_update().get_or_create(account=account)
    if not profile.currency:
        profile.currency = currency
        profile.save(update_fields=["currency", "updated_at"])
    elif profile.currency != currency:
        raise Conflict(
            _("This account is billed in %(billed_in)s; it cannot be billed in %(currency)s.")
            % {"billed_in": profile.currency, "currency": currency},
            details={"currency": profile.currency},
        )
    return currency


@transaction.atomic
def balance_change(
    *,
    account: Account,
    amount: int,
    currency: str,
    kind: str,
    description: str,
    actor: Actor,
    invoice: Invoice | None = None,
    credit_note: CreditNote | None = None,
) -> BalanceTransaction:
    """Add (positive) or use (negative) credit, with the entry naming its cause."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount == 0:
        raise ValidationFailed.field("amount", "invalid", _("amount must be a non-zero integer."))
    if not description.strip():
        raise ValidationFailed.field("description", "required", _("Say why the balance changes."))
    account_lock(account.pk)  # one ledger writer
    currency = billing_currency_fix(account, currency)
    current = balance_of(account)
    if current + amount < 0:
        raise Conflict(
            # Translators: both are amounts with their currency, e.g. 12.50 EUR.
            _("The account has %(balance)s in credit; %(amount)s cannot be taken from it.")
            % {
                "balance": format_amount(current, currency),
                "amount": format_amount(-amount, currency),
            },
            details={"balance": current},
        )
    entry = BalanceTransaction.objects.create(
        account=account,
        kind=kind,
        amount=amount,
        currency=currency,
        ending_balance=current + amount,
        description=description.strip()[:500],
        invoice=invoice,
        credit_note=credit_note,
        created_by=actor.user,
        created_at=billing_now(account),
    )
    record_event(
        type="customer.balance_changed",
        account=account,
        object_type="balance_transaction",
        obj=balance_transaction_representation(entry),
        actor=actor,
    )
    return entry
