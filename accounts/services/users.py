"""A person's own profile, and what a failed sign-in leaves behind."""

from django.db import transaction

from accounts.actors import Actor
from accounts.models import Account, User
from events.services import changed_attributes, record_event
from hosting.errors import (
    ValidationFailed,
)


@transaction.atomic
def user_update_profile(*, user: User, name: str, email: str, actor: Actor) -> User:
    """Change a user's name or e-mail; an e-mail change is noted in each of their accounts."""
    email = email.strip().lower()
    if User.objects.filter(email__iexact=email).exclude(pk=user.pk).exists():
        raise ValidationFailed.field("email", "unique", "Another user has this e-mail address.")
    user = User.objects.select_for_update().get(pk=user.pk)
    before = {"id": user.id, "email": user.email, "name": user.name}
    user.name, user.email = name.strip(), email
    user.save(update_fields=["name", "email"])
    after = {"id": user.id, "email": user.email, "name": user.name}
    if previous := changed_attributes(before, after):
        for account in Account.objects.filter(memberships__user=user):
            record_event(
                type="user.updated",
                account=account,
                object_type="user",
                obj=after,
                actor=actor,
                previous_attributes=previous,
            )
    return user


def login_failure_record(*, email: str, ip: str | None) -> None:
    """Note a failed sign-in in the event log of every account the address belongs to."""
    user = User.objects.filter(email__iexact=email.strip()).first()
    subject = {"id": user.id if user else "", "email": email.strip().lower()[:254]}
    accounts: list[Account | None] = (
        list(Account.objects.filter(memberships__user=user)) if user else []
    )
    for account in accounts or [None]:
        record_event(
            type="user.login_failed",
            account=account,
            object_type="user",
            obj=subject,
            actor=Actor(ip=ip),
        )
