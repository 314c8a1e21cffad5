"""Billing's e-mails: invoice issued, payment received, payment overdue, suspension warning,
suspension, termination warning, termination, trial ending.

They go to the billing profile's e-mail when one is set, else to the account's owners, admins
and billing members. ``notify`` does not send: it queues a ``billing_notices_send`` task in the
caller's transaction (the task table is in the same database, so a rollback queues nothing and
a commit cannot lose one), and the worker renders and sends it through Django's mail backend
(console by default, SMTP or django-anymail when configured). The billing job and the request
that caused the e-mail never wait for a mail server; the billing job queues one task for a
whole batch of renewals (``notices_queue``).

What the e-mail says about the invoice (its number, due date, amounts) is frozen when it is
queued, so an invoice paid from credit a moment after it was issued is still announced as
issued; the account's name and the plan are read when it is sent.

Each recipient reads the e-mail in their own language (``hosting.i18n.in_language_of``): one
e-mail per language among the recipients, subject and body rendered, and amounts and dates
formatted, in it. A billing profile's address that is no member's is written to in English.
Amounts travel in the task unformatted (minor units and the currency) for that reason.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.tasks import task
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import Account, Membership, User
from accounts.roles import Role
from billing.models import BillingProfile, Invoice, Subscription
from hosting.i18n import language_of
from hosting.money import format_amount

logger = logging.getLogger(__name__)

SUBJECTS = {
    "invoice_issued": gettext_lazy("Invoice %(number)s issued"),
    "payment_received": gettext_lazy("Payment received for invoice %(number)s"),
    "payment_overdue": gettext_lazy("Invoice %(number)s is overdue"),
    "suspension_warning": gettext_lazy(
        "Your service will be suspended: invoice %(number)s is unpaid"
    ),
    "suspended": gettext_lazy("Your service is suspended: invoice %(number)s is unpaid"),
    "termination_warning": gettext_lazy(
        "Your service will be deleted: invoice %(number)s is unpaid"
    ),
    "terminated": gettext_lazy("Your service was deleted: invoice %(number)s was not paid"),
    "trial_will_end": gettext_lazy("Your trial ends soon"),
    "payment_action_required": gettext_lazy("Confirm the payment of invoice %(number)s"),
}
# How a payment was made, as pages and e-mails name it (``Payment.gateway`` codes).
GATEWAY_LABELS = {
    "credit": gettext_lazy("account credit"),
    "bank_transfer": gettext_lazy("bank transfer"),
    "stripe": gettext_lazy("card"),
}
BILLING_ROLES = (Role.OWNER, Role.ADMIN, Role.BILLING)
# Extra values that are moments (written as ISO 8601 in the task, read back as datetimes).
MOMENTS = frozenset({"suspend_at", "terminate_at"})
# The most notices one task carries (a batch of renewals queues one task per this many).
NOTICES_PER_TASK = 500


def recipients(account: Account) -> list[str]:
    """Who billing writes to for ``account``."""
    grouped = recipients_by_language(account)
    return sorted({email for emails in grouped.values() for email in emails})


def recipients_by_language(account: Account) -> dict[str, list[str]]:
    """Who billing writes to for ``account``, grouped by the language each reads: the billing
    profile's e-mail (in its member's language when a member has that address, else in the
    language of the account's first owner: an accounts mailbox of a German company reads German;
    English when that owner chose none), else the account's owners, admins and billing members,
    each in their own."""
    profile_email = (
        BillingProfile.objects.filter(account=account).values_list("email", flat=True).first()
    )
    members = Membership.objects.filter(account=account).select_related("user")
    if profile_email:
        member = (
            members.filter(user__email__iexact=profile_email).first()
            or members.filter(role=Role.OWNER).order_by("created_at", "pk").first()
        )
        return {_language(member.user if member else None): [profile_email]}
    grouped: dict[str, set[str]] = {}
    for membership in members.filter(role__in=BILLING_ROLES):
        grouped.setdefault(_language(membership.user), set()).add(membership.user.email)
    return {language: sorted(emails) for language, emails in sorted(grouped.items())}


def _language(user: User | None) -> str:
    return language_of(user) or settings.LANGUAGE_CODE


def plan_label(subscription: Subscription | None) -> str:
    if subscription is None:
        return ""
    return subscription.price.product.name


def instance_label(subscription: Subscription) -> str:
    """The server or bot an e-mail is about, in the active language."""
    instance = subscription.server or subscription.bot
    if instance is None:
        return _("The %(plan)s service") % {"plan": plan_label(subscription)}
    if subscription.server_id:
        return _("Server “%(name)s”") % {"name": instance.name}
    return _("Bot “%(name)s”") % {"name": instance.name}


@dataclass(frozen=True)
class Notice:
    """One e-mail to send: its kind, whom it is about, and the invoice as it stood."""

    kind: str
    account_id: str
    subscription_id: str | None = None
    invoice: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_task_argument(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "account": self.account_id,
            "subscription": self.subscription_id,
            "invoice": self.invoice,
            "extra": {
                key: value.isoformat() if key in MOMENTS and value is not None else value
                for key, value in self.extra.items()
            },
        }


def invoice_facts(invoice: Invoice) -> dict[str, Any]:
    """What an e-mail says about ``invoice``, as it is now (JSON for the task): amounts in
    minor units, formatted when the e-mail is rendered, in its recipient's language."""
    return {
        "id": invoice.id,
        "number": invoice.number,
        "due_date": invoice.due_date.isoformat() if invoice.due_date else None,
        "currency": invoice.currency,
        "amount_remaining": invoice.amount_remaining,
        "amount_total": invoice.total,
    }


def notices_queue(notices: list[Notice]) -> None:
    """Queue ``notices`` for the worker, in the caller's transaction (one task per
    ``NOTICES_PER_TASK``)."""
    for start in range(0, len(notices), NOTICES_PER_TASK):
        chunk = notices[start : start + NOTICES_PER_TASK]
        billing_notices_send.enqueue([notice.as_task_argument() for notice in chunk])


def notify(
    kind: str,
    *,
    account: Account,
    invoice: Invoice | None = None,
    subscription: Subscription | None = None,
    **extra: Any,
) -> None:
    """Queue the ``kind`` e-mail about ``invoice`` / ``subscription`` (sent once the
    transaction commits, by the worker)."""
    subscription_id = subscription.id if subscription else (invoice and invoice.subscription_id)
    notices_queue(
        [
            Notice(
                kind=kind,
                account_id=account.id,
                subscription_id=subscription_id or None,
                invoice=invoice_facts(invoice) if invoice is not None else None,
                extra=extra,
            )
        ]
    )


@task
def billing_notices_send(notices: list[dict[str, Any]]) -> int:
    """The worker's side: render and send each notice; returns how many were sent. A notice
    whose account is gone, or that has nobody to write to, is skipped."""
    sent = 0
    for notice in notices:
        if _send(notice):
            sent += 1
    return sent


def _send(notice: dict[str, Any]) -> bool:
    account = Account.objects.filter(pk=notice["account"]).first()
    if account is None:
        return False
    by_language = recipients_by_language(account)
    if not by_language:
        return False
    subscription = (
        Subscription.objects.select_related("price__product", "server", "bot")
        .filter(pk=notice["subscription"])
        .first()
        if notice["subscription"]
        else None
    )
    for language, to in by_language.items():
        # The language ``hosting.i18n.in_language_of`` would choose for each of them.
        with translation.override(language):
            subject, message = _render(notice, account, subscription)
        send_mail(subject=subject, message=message, from_email=None, recipient_list=to)
    return True


def _render(
    notice: dict[str, Any], account: Account, subscription: Subscription | None
) -> tuple[str, str]:
    """The e-mail's subject and body, in the active language (amounts and dates too)."""
    extra: dict[str, Any] = {
        key: datetime.fromisoformat(value) if key in MOMENTS and value else value
        for key, value in notice["extra"].items()
    }
    context: dict[str, Any] = {
        "account": account,
        "subscription": subscription,
        "plan": plan_label(subscription),
        "site_url": settings.SITE_URL,
        **extra,
    }
    facts = notice["invoice"]
    if facts is not None:
        context["invoice"] = {
            **facts,
            "due_date": datetime.fromisoformat(facts["due_date"]) if facts["due_date"] else None,
        }
        if "currency" in facts:
            context["total"] = format_amount(facts["amount_total"], facts["currency"])
            context["remaining"] = format_amount(facts["amount_remaining"], facts["currency"])
            if isinstance(extra.get("amount"), int):
                context["amount"] = format_amount(extra["amount"], facts["currency"])
        else:  # queued before amounts travelled unformatted: as they were formatted then
            context["total"], context["remaining"] = facts["total"], facts["remaining"]
    if "gateway" in extra:
        # A code ("credit"); a label written by an older task is shown as it was.
        context["gateway"] = GATEWAY_LABELS.get(extra["gateway"], extra["gateway"])
    if subscription is not None:
        context["instance_label"] = instance_label(subscription)
        price = subscription.price
        context["price"] = format_amount(price.unit_amount * subscription.quantity, price.currency)
    kind = notice["kind"]
    subject = SUBJECTS[kind] % {"number": facts["number"] if facts else ""}
    return str(subject), render_to_string(f"billing/email/{kind}.txt", context)
