"""A server's or bot's plan on its own page (issue 34): the plan, its price, the next renewal
and the ways to change or cancel it. Servers sit below billing, so their page loads this
library rather than importing billing."""

from django import template

from accounts.roles import scopes_allowed_for
from billing.forms import price_label
from billing.models import Subscription, SubscriptionStatus
from billing.rules.periods import moment_text

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
            "renews": moment_text(subscription.current_period_end),
            "can_change": "billing:write" in scopes
            and not request.account.is_suspended
            and subscription.status != SubscriptionStatus.INCOMPLETE,
        }
    return shown
