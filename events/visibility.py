"""Who may see which events: one table for the event log API and for webhooks.

An event shows its object (``data.object``) as the API shows it, so seeing an event must take
the rights to see that object: a server's events need ``servers:read``, another member's API key
needs what ``GET /v1/api-keys/{id}`` needs, failed sign-ins (e-mails and client addresses) need
what the dashboard's Activity page needs. ``GET /v1/events`` filters with ``visible_events_q``
(in SQL); the webhook fan-out asks ``can_see`` per event for each endpoint's creator.

A rule's patterns never overlap (a test holds them to it), so an event is governed by exactly
one rule. An event type without a rule falls under ``UNKNOWN``: owners and admins only, as on the
Activity page, until someone writes its rule.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce
from operator import or_

from django.db.models import Q

from accounts.roles import Right, role_can
from events.catalogue import pattern_matches, pattern_q


@dataclass(frozen=True)
class Rule:
    """Events of ``pattern`` (``server.*`` or an exact type), optionally only those whose
    ``related_id`` starts with ``related_prefix``, are seen with ``scope`` (and ``right`` when
    set). With ``own_key_unless``, only events about the caller's own API key are seen, unless
    the role has that right (the rule of ``GET /v1/api-keys``)."""

    pattern: str
    scope: str
    right: str | None = None
    related_prefix: str = ""
    own_key_unless: str | None = None

    def matches(self, event_type: str, related_id: str) -> bool:
        return pattern_matches(self.pattern, event_type) and related_id.startswith(
            self.related_prefix
        )

    def match_q(self) -> Q:
        matched = pattern_q(self.pattern)
        if self.related_prefix:
            matched &= Q(related_id__startswith=self.related_prefix)
        return matched

    def allows(self, role: str | None, scopes: frozenset[str]) -> bool:
        return self.scope in scopes and (self.right is None or role_can(role, self.right))

    def own_keys_only(self, role: str | None) -> bool:
        return self.own_key_unless is not None and not role_can(role, self.own_key_unless)


EVENT_VISIBILITY: tuple[Rule, ...] = (
    Rule("server.*", "servers:read"),
    Rule("bot.*", "bots:read"),
    # An action shows its server or bot: it is seen with the right to see that.
    Rule("action.*", "servers:read", related_prefix="srv_"),
    Rule("action.*", "bots:read", related_prefix="bot_"),
    # A backup holds its server's or bot's files: seen with the right to read backups.
    Rule("backup.*", "backups:read"),
    # Where and as whom to sign in to a database: seen with the right to read databases.
    Rule("database.*", "databases:read"),
    # A schedule says what runs on the server (commands, power, backups): schedules:read.
    Rule("schedule.*", "schedules:read"),
    Rule("api_key.*", "api_keys:read", own_key_unless=Right.MANAGE_ALL_KEYS),
    Rule("member.*", "account:read"),
    Rule("account.*", "account:read"),
    Rule("user.updated", "account:read"),
    # E-mail addresses that failed to sign in, and from where: the Activity page's readers only.
    Rule("user.login_failed", "account:read", right=Right.VIEW_ACTIVITY),
    # A member's second factors set up, removed or renewed, and wrong codes typed: a security
    # matter of the account, seen where failed sign-ins are.
    Rule("user.signed_in", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.factor_added", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.factor_removed", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.factor_reset", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.factor_failed", "account:read", right=Right.VIEW_ACTIVITY),
    # A member's single sign-on identities linked and unlinked: another way into the account.
    Rule("user.sso_linked", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.sso_unlinked", "account:read", right=Right.VIEW_ACTIVITY),
    # A member's SFTP credentials changing (their own, recorded in each of their accounts): a
    # security matter of the account, seen where failed sign-ins are.
    Rule("ssh_key.*", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.sftp_password_set", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.sftp_password_removed", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("user.sftp_login_changed", "account:read", right=Right.VIEW_ACTIVITY),
    Rule("subscription.*", "billing:read"),
    Rule("invoice.*", "billing:read"),
    Rule("payment.*", "billing:read"),
    Rule("payment_method.*", "billing:read"),
    Rule("credit_note.*", "billing:read"),
    Rule("customer.*", "billing:read"),
    Rule("ticket.*", "tickets:read"),
    Rule("webhook_endpoint.*", "webhooks:read"),
    Rule("webhook.test", "webhooks:read"),
)
UNKNOWN = Rule("*", "account:read", right=Right.VIEW_ACTIVITY)


def rule_for(event_type: str, related_id: str = "") -> Rule:
    """The rule that governs an event: its own, or ``UNKNOWN``."""
    for rule in EVENT_VISIBILITY:
        if rule.matches(event_type, related_id):
            return rule
    return UNKNOWN


def can_see(event, *, role: str | None, user_id: str | None, scopes: Iterable[str]) -> bool:
    """Whether someone with this role, user id and (implied) scopes may see the event."""
    rule = rule_for(event.type, event.related_id)
    if not rule.allows(role, frozenset(scopes)):
        return False
    if rule.own_keys_only(role):
        key = (event.data or {}).get("object") or {}
        return user_id is not None and key.get("user") == user_id
    return True


def visibility_reads_user(*, role: str | None, scopes: Iterable[str]) -> bool:
    """Whether ``visible_events_q`` for this role and scopes depends on the user (some event
    is visible to them only when it is about their own key)."""
    scopes = frozenset(scopes)
    return any(rule.allows(role, scopes) and rule.own_keys_only(role) for rule in EVENT_VISIBILITY)


def visible_events_q(*, role: str | None, user_id: str | None, scopes: Iterable[str]) -> Q:
    """``can_see`` as a filter on ``Event``: the same table, evaluated by the database."""
    scopes = frozenset(scopes)
    visible = []
    for rule in EVENT_VISIBILITY:
        if not rule.allows(role, scopes):
            continue
        matched = rule.match_q()
        if rule.own_keys_only(role):
            if user_id is None:
                continue
            matched &= Q(data__object__user=user_id)
        visible.append(matched)
    if UNKNOWN.allows(role, scopes):
        visible.append(~reduce(or_, (rule.match_q() for rule in EVENT_VISIBILITY)))
    return reduce(or_, visible) if visible else Q(pk__in=[])
