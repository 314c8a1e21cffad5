"""Scope checks: a view names the scopes each action needs; the key must hold all of them.

A staff endpoint (``/v1/admin/...``) declares ``admin:read`` or ``admin:write``; which staff
area it belongs to comes from its path, by the table the accounts app registers at start-up
(``accounts/roles.py``), and the endpoint then needs that verb in its area:
``admin:billing:write`` for ``POST /v1/admin/invoices/{id}/void``. ``admin:write`` itself holds
every area's write (CONTRACT §5), so a key that held it before staff roles still works.
"""

import re
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import BasePermission

from hosting.errors import AuthenticationRequired, InsufficientScope

STAFF_VERBS = {"admin:read": "read", "admin:write": "write"}
API_PREFIX = "/v1/"

# (path pattern under /v1, area), first match wins; filled by ``staff_areas_register``.
_staff_areas: list[tuple[re.Pattern[str], str]] = []
# What a principal holds beyond its role, asked only when the role falls short: the servers app
# registers the scopes of its per-server grants (each endpoint on one server then asks that
# server's permissions). The hot path of a role that holds the scopes never reaches it.
_extra_scopes: list[Callable[[Any, Any], AbstractSet[str]]] = []


def extra_scopes_register(provider: Callable[[Any, Any], AbstractSet[str]]) -> None:
    """Add scopes a principal may also exercise (``provider(principal, django_request)``),
    such as grants'; the provider may leave what it read on the request for the view."""
    if provider not in _extra_scopes:
        _extra_scopes.append(provider)


def held_scopes(principal, required: list[str], request) -> AbstractSet[str]:
    """The principal's scopes, with the registered extra ones when its own lack one required."""
    held = principal.scopes
    if set(required) <= held or not _extra_scopes:
        return held
    return held.union(*(provider(principal, request) for provider in _extra_scopes))


def staff_areas_register(areas: Iterable[tuple[str, str]]) -> None:
    """Say which staff area each staff endpoint's path belongs to (the accounts app does)."""
    _staff_areas[:] = [(re.compile(pattern), area) for pattern, area in areas]


def staff_area_of(path: str) -> str | None:
    relative = path.removeprefix(API_PREFIX)
    return next((area for pattern, area in _staff_areas if pattern.match(relative)), None)


def scopes_in_area(required: list[str], path: str) -> list[str]:
    """``required`` with each staff verb made its area's scope, for the endpoint at ``path``.

    A staff endpoint whose path has no area fails closed with a 500, like an undeclared scope.
    """
    if not any(scope in STAFF_VERBS for scope in required):
        return required
    area = staff_area_of(path)
    if area is None:
        raise ImproperlyConfigured(f"No staff area is registered for {path!r}.")
    return [
        f"admin:{area}:{STAFF_VERBS[scope]}" if scope in STAFF_VERBS else scope
        for scope in required
    ]


def required_scopes_for(view, method: str) -> list[str]:
    """The scopes ``view`` declares for this request, keyed by viewset action or HTTP method.

    A view that declares nothing for an action fails closed with a 500: forgetting to declare
    is a bug, never a reason to let a request through.
    """
    unrouted = hasattr(view, "action_map") and view.action is None
    if method == "OPTIONS" or unrouted or not hasattr(view, method.lower()):
        return []  # no handler (OPTIONS is switched off): DRF answers 405 right after this
    declared = getattr(view, "required_scopes", None) or {}
    action = getattr(view, "action", None) or method.lower()
    scopes = declared.get(action, declared.get(method.lower()))
    if scopes is None:
        raise ImproperlyConfigured(f"{type(view).__name__} declares no scopes for {action!r}.")
    return list(scopes)


def require_scopes(
    *, required: list[str], held: AbstractSet[str], declared: list[str] | None = None
) -> None:
    """Raise ``insufficient_scope`` unless ``held`` has every scope of ``required``.

    ``details.required_scopes`` names what the endpoint declares (``declared``, when the staff
    verbs were made area scopes): holding those is always enough; the message names both.
    """
    if missing := sorted(set(required) - held):
        shown = required if declared is None else declared
        message = f"This operation needs the scope{'s' if len(missing) > 1 else ''} "
        if narrower := sorted(set(required) - set(shown)):
            message += f"{', '.join(shown)} (or, for this area only, {', '.join(narrower)})."
        else:
            message += f"{', '.join(missing)}."
        raise InsufficientScope(message, details={"required_scopes": shown})


class HasRequiredScopes(BasePermission):
    def has_permission(self, request, view) -> bool:
        principal = request.auth
        if principal is None:
            raise AuthenticationRequired()
        declared = required_scopes_for(view, request.method)
        required = scopes_in_area(declared, request.path_info)
        # Kept with an idempotent request's answer: a replay needs these scopes still.
        request._request.required_scopes = required
        held = held_scopes(principal, required, request._request)
        require_scopes(required=required, held=held, declared=declared)
        return True
