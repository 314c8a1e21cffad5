"""``{% load usage %}``: a server's or bot's usage on its own pages (servers' templates).

Usage is analytics' data, and analytics sits above servers: the servers' pages name these tags,
Django finds them when it renders the page, and servers imports nothing of analytics.
"""

from django import template
from django.template.loader import render_to_string
from django.urls import reverse

from accounts.roles import scopes_allowed_for
from analytics.selectors.instances import usage_readable
from analytics.selectors.usage import usage_latest

register = template.Library()

# The history's range buttons: the ``range`` its JSON view takes (``analytics.views``).
CHART_RANGES = [("1h", "1 h"), ("24h", "24 h"), ("7d", "7 d"), ("30d", "30 d")]


@register.inclusion_tag("analytics/includes/usage_figures.html")
def usage_figures(instance) -> dict:
    """The last figures a node measured of ``instance`` (none before it is placed on one);
    console.js keeps them live."""
    return {
        "instance": instance,
        "usage": usage_latest(instance.pk) if instance.node_id else None,
    }


@register.simple_tag(takes_context=True)
def usage_history(context, instance) -> str:
    """The usage charts of ``instance`` for a role that may read its usage (``analytics:read``
    and its kind's read scope), else nothing."""
    role = context["request"].membership.role
    if not usage_readable(scopes_allowed_for(role, is_staff=False), instance.kind):
        return ""
    return render_to_string(
        "analytics/includes/usage_charts.html",
        {
            "usage_url": reverse(f"{instance.kind}_usage", args=[instance.pk]),
            "usage_ranges": CHART_RANGES,
        },
    )
