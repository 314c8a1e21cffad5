"""The customer 360's billing: balance (credit), subscriptions and invoices, with "Add credit"
(accounts' AccountAdmin page loads this library; billing sits above accounts)."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _

from billing.models import Invoice, Subscription
from billing.selectors import billing_profile_of
from billing.services.ledger import balance_of
from hosting.money import format_amount

register = template.Library()
SHOWN = 10


def _link(url_name: str, obj) -> str:
    return format_html('<a href="{}">{}</a>', reverse(url_name, args=[obj.pk]), obj)


@register.inclusion_tag("admin/accounts/account/panel.html", takes_context=True)
def customer_subscriptions(context, account) -> dict:
    user = context["request"].user
    panel: dict = {"key": "subscriptions", "title": _("Subscriptions")}
    if not user.has_perm("billing.view_subscription"):
        panel["refused"] = _("Your staff role does not see subscriptions.")
        return {"panel": panel}
    subscriptions = (
        Subscription.objects.filter(account=account)
        .select_related("price__product", "server", "bot")
        .order_by("-created_at", "-id")[:SHOWN]
    )
    query = urlencode({"account__id__exact": account.pk})
    panel |= {
        "headers": [
            _("Subscription"),
            _("Plan and price"),
            _("For"),
            _("Status"),
            _("Renews or ends"),
        ],
        "rows": [
            [
                _link("admin:billing_subscription_change", each),
                str(each.price),
                each.server.name if each.server else (each.bot.name if each.bot else "-"),
                _("%(status)s (cancels at period end)") % {"status": each.get_status_display()}
                if each.cancel_at_period_end
                else each.get_status_display(),
                each.current_period_end.strftime("%Y-%m-%d") if each.current_period_end else "-",
            ]
            for each in subscriptions
        ],
        "empty": _("No subscriptions."),
        "more": [
            (_("All subscriptions"), reverse("admin:billing_subscription_changelist") + "?" + query)
        ],
    }
    return {"panel": panel}


@register.inclusion_tag("admin/accounts/account/panel.html", takes_context=True)
def customer_invoices(context, account) -> dict:
    user = context["request"].user
    panel: dict = {"key": "invoices", "title": _("Invoices and balance")}
    if not user.has_perm("billing.view_invoice"):
        panel["refused"] = _("Your staff role does not see invoices or balances.")
        return {"panel": panel}
    currency = billing_profile_of(account).currency
    balance = balance_of(account)
    invoices = Invoice.objects.filter(account=account).order_by("-created_at", "-id")[:SHOWN]
    owed = [
        format_amount(each.amount_remaining, each.currency)
        for each in Invoice.objects.filter(account=account, status="open")
    ]
    summary = [
        _("Balance (credit): %(amount)s") % {"amount": format_amount(balance, currency)}
        if currency
        else _("Balance (credit): none yet (no billing currency)"),
        _("Open invoices: %(count)s (%(amounts)s owed)")
        % {"count": len(owed), "amounts": ", ".join(owed)}
        if owed
        else _("Open invoices: %(count)s") % {"count": len(owed)},
    ]
    query = urlencode({"account__id__exact": account.pk})
    actions = []
    if user.has_perm("billing.add_balancetransaction"):
        url = (
            reverse("admin:billing_balancetransaction_add")
            + "?"
            + urlencode({"account": account.pk})
        )
        actions.append({"label": _("Add credit"), "url": url})
    panel |= {
        "summary": summary,
        "headers": [_("Invoice"), _("Status"), _("Total"), _("Remaining"), _("Due"), _("Created")],
        "rows": [
            [
                _link("admin:billing_invoice_change", each),
                each.get_status_display(),
                format_amount(each.total, each.currency),
                format_amount(each.amount_remaining, each.currency),
                each.due_date.strftime("%Y-%m-%d") if each.due_date else "-",
                each.created_at.strftime("%Y-%m-%d"),
            ]
            for each in invoices
        ],
        "empty": _("No invoices."),
        "actions": actions,
        "more": [
            (_("All invoices"), reverse("admin:billing_invoice_changelist") + "?" + query),
            (
                _("Balance history"),
                reverse("admin:billing_balancetransaction_changelist") + "?" + query,
            ),
        ],
    }
    return {"panel": panel}
