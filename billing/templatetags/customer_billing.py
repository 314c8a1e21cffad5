"""The customer 360's billing: balance (credit), subscriptions and invoices, with "Add credit"
(accounts' AccountAdmin page loads this library; billing sits above accounts)."""

from urllib.parse import urlencode

from django import template
from django.urls import reverse
from django.utils.html import format_html

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
    panel: dict = {"key": "subscriptions", "title": "Subscriptions"}
    if not user.has_perm("billing.view_subscription"):
        panel["refused"] = "Your staff role does not see subscriptions."
        return {"panel": panel}
    subscriptions = (
        Subscription.objects.filter(account=account)
        .select_related("price__product", "server", "bot")
        .order_by("-created_at", "-id")[:SHOWN]
    )
    query = urlencode({"account__id__exact": account.pk})
    panel |= {
        "headers": ["Subscription", "Plan and price", "For", "Status", "Renews or ends"],
        "rows": [
            [
                _link("admin:billing_subscription_change", each),
                str(each.price),
                each.server.name if each.server else (each.bot.name if each.bot else "-"),
                each.get_status_display()
                + (" (cancels at period end)" if each.cancel_at_period_end else ""),
                each.current_period_end.strftime("%Y-%m-%d") if each.current_period_end else "-",
            ]
            for each in subscriptions
        ],
        "empty": "No subscriptions.",
        "more": [
            ("All subscriptions", reverse("admin:billing_subscription_changelist") + "?" + query)
        ],
    }
    return {"panel": panel}


@register.inclusion_tag("admin/accounts/account/panel.html", takes_context=True)
def customer_invoices(context, account) -> dict:
    user = context["request"].user
    panel: dict = {"key": "invoices", "title": "Invoices and balance"}
    if not user.has_perm("billing.view_invoice"):
        panel["refused"] = "Your staff role does not see invoices or balances."
        return {"panel": panel}
    currency = billing_profile_of(account).currency
    balance = balance_of(account)
    invoices = Invoice.objects.filter(account=account).order_by("-created_at", "-id")[:SHOWN]
    owed = [
        format_amount(each.amount_remaining, each.currency)
        for each in Invoice.objects.filter(account=account, status="open")
    ]
    summary = [
        f"Balance (credit): {format_amount(balance, currency)}"
        if currency
        else "Balance (credit): none yet (no billing currency)",
        f"Open invoices: {len(owed)}" + (f" ({', '.join(owed)} owed)" if owed else ""),
    ]
    query = urlencode({"account__id__exact": account.pk})
    actions = []
    if user.has_perm("billing.add_balancetransaction"):
        url = (
            reverse("admin:billing_balancetransaction_add")
            + "?"
            + urlencode({"account": account.pk})
        )
        actions.append({"label": "Add credit", "url": url})
    panel |= {
        "summary": summary,
        "headers": ["Invoice", "Status", "Total", "Remaining", "Due", "Created"],
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
        "empty": "No invoices.",
        "actions": actions,
        "more": [
            ("All invoices", reverse("admin:billing_invoice_changelist") + "?" + query),
            (
                "Balance history",
                reverse("admin:billing_balancetransaction_changelist") + "?" + query,
            ),
        ],
    }
    return {"panel": panel}
