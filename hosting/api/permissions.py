"""Scope checks: a view names the scopes each action needs; the key must hold all of them."""

from collections.abc import Set as AbstractSet

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import BasePermission

from hosting.errors import AuthenticationRequired, InsufficientScope


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


def require_scopes(*, required: list[str], held: AbstractSet[str]) -> None:
    """Raise ``insufficient_scope`` naming the missing scopes unless ``held`` has them all."""
    if missing := sorted(set(required) - held):
        raise InsufficientScope(
            f"This operation needs the scope{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}.",
            details={"required_scopes": required},
        )


class HasRequiredScopes(BasePermission):
    def has_permission(self, request, view) -> bool:
        principal = request.auth
        if principal is None:
            raise AuthenticationRequired()
        required = required_scopes_for(view, request.method)
        # Kept with an idempotent request's answer: a replay needs these scopes still.
        request._request.required_scopes = required
        require_scopes(required=required, held=principal.scopes)
        return True
