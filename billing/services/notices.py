"""Billing's e-mails: invoice issued, payment received, payment overdue, suspension warning,
suspension, termination warning, termination, trial ending.

They go to the billing profile's e-mail when one is set, else to the account's owners, admins
and billing members; they are sent once the transaction that caused them commits (a rollback
sends nothing), through Django's mail backend (console by default, SMTP or django-anymail
when configured).
"""

from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string

from accounts.models import Account, Membership
from accounts.roles import Role
from billing.models import BillingProfile, Invoice, Subscription
from billing.money import format_amount

SUBJECTS = {
    "invoice_issued": "Invoice {number} issued",
    "payment_received": "Payment received for invoice {number}",
    "payment_overdue": "Invoice {number} is overdue",
    "suspension_warning": "Your service will be suspended: invoice {number} is unpaid",
    "suspended": "Your service is suspended: invoice {number} is unpaid",
    "termination_warning": "Your service will be deleted: invoice {number} is unpaid",
    "terminated": "Your service was deleted: invoice {number} was not paid",
    "trial_will_end": "Your trial ends soon",
}
BILLING_ROLES = (Role.OWNER, Role.ADMIN, Role.BILLING)


def recipients(account: Account) -> list[str]:
    """Who billing writes to for ``account``."""
    profile_email = (
        BillingProfile.objects.filter(account=account).values_list("email", flat=True).first()
    )
    if profile_email:
        return [profile_email]
    emails = Membership.objects.filter(account=account, role__in=BILLING_ROLES).values_list(
        "user__email", flat=True
    )
    return sorted(set(emails))


def plan_label(subscription: Subscription | None) -> str:
    if subscription is None:
        return ""
    return subscription.price.product.name


def instance_label(subscription: Subscription) -> str:
    instance = subscription.server or subscription.bot
    kind = "Server" if subscription.server_id else "Bot"
    return f"{kind} “{instance.name}”" if instance else f"The {plan_label(subscription)} service"


def notify(
    kind: str,
    *,
    account: Account,
    invoice: Invoice | None = None,
    subscription: Subscription | None = None,
    **extra: Any,
) -> None:
    """Send the ``kind`` e-mail about ``invoice`` / ``subscription`` after the commit."""
    to = recipients(account)
    if not to:
        return
    subscription = subscription or (invoice.subscription if invoice else None)
    context: dict[str, Any] = {
        "account": account,
        "invoice": invoice,
        "subscription": subscription,
        "plan": plan_label(subscription),
        "site_url": settings.SITE_URL,
        **extra,
    }
    if invoice is not None:
        context["total"] = format_amount(invoice.total, invoice.currency)
        context["remaining"] = format_amount(invoice.amount_remaining, invoice.currency)
    if subscription is not None:
        context["instance_label"] = instance_label(subscription)
        price = subscription.price
        context["price"] = format_amount(price.unit_amount * subscription.quantity, price.currency)
    subject = SUBJECTS[kind].format(number=invoice.number if invoice else "")
    message = render_to_string(f"billing/email/{kind}.txt", context)
    transaction.on_commit(
        lambda: send_mail(subject=subject, message=message, from_email=None, recipient_list=to)
    )
