"""``{{ name|full_stop }}``: a name that ends a sentence, without a doubled full stop."""

from django import template

from hosting import text

register = template.Library()
register.filter("full_stop", text.full_stop)
