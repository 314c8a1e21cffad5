"""A server's or bot's plan on its own page (issue 34): the plan, its price, the next renewal
and the ways to change or cancel it. Servers sit below billing, so their page loads this
library rather than importing billing."""

from datetime import UTC, time

from django import template
from django.utils.formats import date_format

from accounts.roles import scopes_allowed_for
from billing.forms import price_label
from billing.models import Subscription, SubscriptionStatus

register = template.Library()


@register.inclusion_tag("billing/includes/instance_plan.html", takes_context=True)
def instance_plan(context, instance) -> dict:
    request = context["request"]
    membership = getattr(request, "membership", None)
    scopes = scopes_allowed_for(membership.role if membership else None, is_staff=False)
    if "billing:read" not in scopes:
        return {"shown": False}  # the role sees no billing (a guest, developers, support)
    subscription = (
        Subscription.objects.filter(account_id=instance.account_id, **{instance.kind: instance})
        .exclude(status=SubscriptionStatus.CANCELED)
        .select_related("price__product")
        .order_by("-created_at", "-id")
        .first()
    )
    shown: dict = {"shown": True, "kind": instance.kind, "subscription": subscription}
    if subscription is not None:
        shown |= {
            "plan": subscription.price.product.name,
            "price": price_label(subscription.price),
            "renews": _moment(subscription.current_period_end),
            "can_change": "billing:write" in scopes
            and not request.account.is_suspended
            and subscription.status != SubscriptionStatus.INCOMPLETE,
        }
    return shown


def _moment(moment) -> str:
    """The period's end in the page's language: the day, with the time (UTC) only when it is
    not midnight, as billing's pages write it (``billing.rules.periods.moment_text``)."""
    moment = moment.astimezone(UTC)
    if moment.time() == time.min:
        return date_format(moment.date(), "SHORT_DATE_FORMAT")
    return f"{date_format(moment, 'SHORT_DATETIME_FORMAT')} UTC"
