"""The event types the service records, and the patterns that name them (``server.*``, ``*``).

One catalogue for everything that names event types: the event log's ``type`` filter, webhook
endpoints' ``enabled_events``, and who may see which events (``events.visibility``). It sits
below the apps that use it, so none of them imports another to learn the types.
"""

from django.db.models import Q

EVENT_TYPES: dict[str, list[str]] = {
    "Servers": [
        "server.created",
        "server.updated",
        "server.status_changed",
        "server.crashed",
        "server.not_responding",
        "server.responding",
        "server.suspended",
        "server.unsuspended",
        "server.deleted",
        "server.files.deleted",
        "server.files.uploaded",
        "server.user_added",
        "server.user_updated",
        "server.user_removed",
        "server.allocation_added",
        "server.allocation_updated",
        "server.allocation_removed",
    ],
    "Bots": [
        "bot.created",
        "bot.updated",
        "bot.status_changed",
        "bot.crashed",
        "bot.suspended",
        "bot.unsuspended",
        "bot.deleted",
        "bot.files.deleted",
        "bot.files.uploaded",
        "bot.user_added",
        "bot.user_updated",
        "bot.user_removed",
    ],
    "Backups": [
        "backup.created",
        "backup.completed",
        "backup.failed",
        "backup.updated",
        "backup.deleted",
        "backup.restore_started",
        "backup.restored",
        "backup.restore_failed",
    ],
    "Databases": ["database.created", "database.password_rotated", "database.deleted"],
    "Schedules": [
        "schedule.created",
        "schedule.updated",
        "schedule.deleted",
        "schedule.run_failed",
    ],
    "Actions": ["action.succeeded", "action.failed"],
    "API keys": ["api_key.created", "api_key.revoked", "api_key.rotated", "api_key.expiring"],
    "Team": [
        "member.invited",
        "member.invitation_revoked",
        "member.added",
        "member.removed",
        "member.role_changed",
    ],
    "Account": [
        "account.created",
        "account.updated",
        "account.suspended",
        "account.unsuspended",
        "user.updated",
        "user.login_failed",
        "user.signed_in",
        "user.factor_added",
        "user.factor_removed",
        "user.factor_reset",
        "user.factor_failed",
        "user.sso_linked",
        "user.sso_unlinked",
    ],
    "SSH keys and SFTP": [
        "ssh_key.created",
        "ssh_key.deleted",
        "user.sftp_password_set",
        "user.sftp_password_removed",
        "user.sftp_login_changed",
    ],
    "Billing": [
        "subscription.created",
        "subscription.updated",
        "subscription.canceled",
        "subscription.trial_will_end",
        "invoice.created",
        "invoice.finalized",
        "invoice.paid",
        "invoice.payment_failed",
        "invoice.voided",
        "invoice.marked_uncollectible",
        "invoice.overdue",
        "payment.processing",
        "payment.succeeded",
        "payment.failed",
        "payment.refunded",
        "payment.refund_failed",
        "credit_note.created",
        "customer.balance_changed",
        "customer.billing_profile_updated",
        "payment_method.attached",
        "payment_method.updated",
        "payment_method.detached",
    ],
    "Support": [
        "ticket.created",
        "ticket.updated",
        "ticket.replied",
        "ticket.status_changed",
        "ticket.assigned",
        "ticket.sla_breached",
    ],
    "Webhooks": [
        "webhook_endpoint.created",
        "webhook_endpoint.updated",
        "webhook_endpoint.deleted",
        "webhook_endpoint.disabled",
        "webhook.test",
    ],
}
ALL_EVENT_TYPES = frozenset(t for types in EVENT_TYPES.values() for t in types)
EVENT_AREAS = sorted({event_type.split(".")[0] for event_type in ALL_EVENT_TYPES})
# Every pattern a client may write: everything, every type of an area, or one type.
EVENT_PATTERNS = ["*", *(f"{area}.*" for area in EVENT_AREAS), *sorted(ALL_EVENT_TYPES)]
_KNOWN_PATTERNS = frozenset(EVENT_PATTERNS)


def is_event_pattern(pattern: object) -> bool:
    """Whether ``pattern`` names known event types (``*``, ``server.*``, ``server.created``)."""
    return isinstance(pattern, str) and pattern in _KNOWN_PATTERNS


def pattern_matches(pattern: str, event_type: str) -> bool:
    """``*`` matches everything, ``server.*`` every server event, anything else itself."""
    if pattern == "*" or pattern == event_type:
        return True
    return pattern.endswith(".*") and event_type.startswith(pattern[:-1])


def pattern_q(pattern: str, field: str = "type") -> Q:
    """``pattern_matches`` as a filter on an event type column."""
    if pattern == "*":
        return Q()
    if pattern.endswith(".*"):
        return Q(**{f"{field}__startswith": pattern[:-1]})
    return Q(**{field: pattern})
