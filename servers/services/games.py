"""The game catalogue's games as staff manage them (the staff API, Django admin): create, change,
remove, import from a Pterodactyl or Pelican egg, and export as one.

Every write runs the checks ``Game.clean`` runs (``servers.game_checks``: the template as the
node agent reads it, the variables as ``validate_variables`` reads them), so a game that is
saved is one a customer can create a server of: a bad template is refused when it is saved,
every problem listed (400 ``validation_failed`` by field), never at a customer's first create.
Each change is a staff event (``game.created``, ``game.updated``, ``game.deleted``; no
account's log or webhooks see them, as the nodes' events). The catalogue's own sync
(``servers.services.catalogue``) keeps writing the folder's games itself, idempotently.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parseaddr
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, npgettext

from accounts.actors import SYSTEM, Actor
from events.services import changed_attributes, record_event
from hosting.changes import UNSET, Changes, Unset
from hosting.errors import Conflict, ValidationFailed
from servers.eggs import NODE_PACKAGES, EggError, egg_load, egg_to_game, game_to_egg
from servers.models import Game
from servers.representations import game_representation

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
# /v1/admin/games/import is the staff API's import: no game may be called that.
RESERVED_SLUGS = frozenset({"import"})


class GameInUse(Conflict):
    code = "game_in_use"
    message = gettext_noop("Servers or plans still use this game.")


class GameExists(Conflict):
    code = "game_exists"
    message = gettext_noop("A game with this slug exists.")


class InvalidEgg(ValidationFailed):
    code = "invalid_egg"
    message = gettext_noop("The egg cannot be imported.")


@dataclass(frozen=True)
class GameChanges(Changes):
    """What one edit of a game sets. Its slug stays: servers and plans name it."""

    name: str | Unset = UNSET
    default_port: int | Unset = UNSET
    template: dict | Unset = UNSET
    variables: list | Unset = UNSET


def _checked(game: Game) -> None:
    """``Game.clean`` and the fields' own rules, as field errors of the envelope."""
    try:
        game.full_clean(validate_unique=False)
    except ValidationError as error:
        fields = [
            {"name": name, "code": "invalid", "message": message}
            for name, messages in error.message_dict.items()
            for message in messages
        ]
        if len(fields) == 1:
            # Translators: %(problem)s is the one problem found, a sentence of its own.
            message = _("The game is not saved: %(problem)s") % {"problem": fields[0]["message"]}
        else:
            message = _("The game is not saved: %(count)s problems.") % {"count": len(fields)}
        raise ValidationFailed(message, details={"fields": fields}) from None


def _event(game: Game, event: str, actor: Actor, previous: dict | None = None) -> None:
    # Staff's, as the nodes' and database hosts' are: no account's log or webhooks see them.
    record_event(
        type=f"game.{event}",
        account=None,
        object_type="game",
        obj=game_representation(game),
        actor=actor,
        previous_attributes=previous,
    )


def game_create(
    *,
    slug: str,
    name: str,
    default_port: int,
    template: dict,
    variables: list,
    origin: dict | None = None,
    actor: Actor = SYSTEM,
) -> Game:
    """A new game of the catalogue (409 ``game_exists`` when the slug is taken)."""
    if not isinstance(slug, str) or not SLUG.match(slug) or slug in RESERVED_SLUGS:
        raise ValidationFailed.field(
            "slug",
            "invalid",
            _("slug is lowercase letters, digits and -, at most 64 (not import)."),
        )
    game = Game(
        slug=slug,
        name=name,
        default_port=default_port,
        template=template,
        variables=variables,
        origin=origin or {},
    )
    taken = GameExists(
        _("A game with the slug %(slug)s exists.") % {"slug": slug}, details={"slug": slug}
    )
    with transaction.atomic():
        if Game.objects.filter(slug=slug).exists():
            raise taken
        _checked(game)
        try:
            # A savepoint: a create of the same slug that committed since the check above (no
            # row to lock yet) is the primary key's to refuse, as 409, not a 500.
            with transaction.atomic():
                game.save(force_insert=True)
        except IntegrityError:
            raise taken from None
        _event(game, "created", actor)
    return game


def game_update(
    *, game: Game, changes: GameChanges, actor: Actor = SYSTEM, origin: dict | None = None
) -> Game:
    """Change a game's name, port, template or variables (all checked together, as saved).
    Servers get a changed template at their next start or reinstall; their variables'
    values are checked against new definitions at their next change."""
    given = changes.given()
    with transaction.atomic():
        game = Game.objects.select_for_update().get(pk=game.pk)
        before = game_representation(game)
        for key, value in given.items():
            setattr(game, key, value)
        if origin is not None:
            game.origin = origin
        _checked(game)
        after = game_representation(game)
        if after == before:
            return game
        game.save()
        _event(game, "updated", actor, changed_attributes(before, after))
    return game


# What else names a game by its slug, filled by the apps above this one (billing's plans, in
# its AppConfig.ready): each answers the ids of what names it, under its key of 409's details.
_GAME_USERS: dict[str, Callable[[str], list[str]]] = {}


def game_users_register(key: str, users: Callable[[str], list[str]]) -> None:
    _GAME_USERS[key] = users


def game_delete(*, game: Game, actor: Actor = SYSTEM) -> None:
    """Remove a game no server (nor a deleted server's record) and no plan uses: 409
    ``game_in_use`` (``details.servers``, ``details.deleted_servers``, ``details.products``)."""
    with transaction.atomic():
        game = Game.objects.select_for_update().get(pk=game.pk)
        live = game.servers.filter(deleted_at=None).count()
        gone = game.servers.exclude(deleted_at=None).count()
        others = {key: users(game.slug) for key, users in _GAME_USERS.items()}
        products = others.get("products", [])
        if live or gone or any(others.values()):
            raise GameInUse(
                _still_used_by(game.name, live, gone, len(products)),
                details={"servers": live, "deleted_servers": gone} | others,
            )
        _event(game, "deleted", actor)
        game.delete()


def _still_used_by(name: str, live: int, gone: int, plans: int) -> str:
    """ "<game> is still used by 2 servers and 1 plan.": each count is a whole phrase of its
    own (three counts take no one plural form), marked with the sentence's context so that
    translators can give each the form that sentence needs."""
    parts = []
    if live:
        parts.append(
            # Translators: what a game is still used by ("Minecraft is still used by 2 servers.").
            npgettext("game used by", "%(count)s server", "%(count)s servers", live)
            % {"count": live}
        )
    if gone:
        parts.append(
            npgettext(
                "game used by",
                # Translators: what a game is still used by; deleted servers keep their records.
                "the records of %(count)s deleted server",
                "the records of %(count)s deleted servers",
                gone,
            )
            % {"count": gone}
        )
    if plans:
        parts.append(
            # Translators: what a game is still used by ("Minecraft is still used by 3 plans.").
            npgettext("game used by", "%(count)s plan", "%(count)s plans", plans) % {"count": plans}
        )
    if not parts:  # another app's use alone (none but billing's plans registers one yet)
        return _(GameInUse.message)
    if len(parts) == 1:
        # Translators: %(game)s is a game's name; %(first)s what uses it ("2 servers").
        return _("%(game)s is still used by %(first)s.") % {"game": name, "first": parts[0]}
    if len(parts) == 2:
        # Translators: %(game)s is a game's name; %(first)s and %(second)s what uses it.
        return _("%(game)s is still used by %(first)s and %(second)s.") % {
            "game": name,
            "first": parts[0],
            "second": parts[1],
        }
    # Translators: %(game)s is a game's name; %(first)s, %(second)s, %(third)s what uses it.
    return _("%(game)s is still used by %(first)s and %(second)s and %(third)s.") % {
        "game": name,
        "first": parts[0],
        "second": parts[1],
        "third": parts[2],
    }


# -- eggs -----------------------------------------------------------------------------------------


@dataclass
class GameImport:
    game: Game
    created: bool
    notes: list[str]


def _free_slug(name: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60].strip("-") or "egg"
    slug, number = base, 1
    while Game.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base[: 60 - len(str(number))]}-{number}"
    return slug


def node_packages() -> frozenset[str]:
    """The packages an egg's install may ask for: the host's list, else ours."""
    return frozenset(settings.EGG_NODE_PACKAGES) or NODE_PACKAGES


def game_import(
    *,
    content: bytes | str | dict,
    slug: str | None = None,
    default_port: int | None = None,
    actor: Actor = SYSTEM,
) -> GameImport:
    """A game from a Pterodactyl or Pelican egg (``servers.eggs``). The egg of a game imported
    before (the same ``uuid``) updates that game; otherwise a new one is made, its slug given or
    made from the egg's name. 400 ``invalid_egg`` (``details.problems``) when the egg cannot be
    imported; ``default_port`` (which eggs do not say) is required for a new game."""
    try:
        data = content if isinstance(content, dict) else egg_load(content)
        imported = egg_to_game(data, packages=node_packages())
    except EggError as error:
        if len(error.problems) == 1:
            # Translators: %(problem)s is the one problem found, a sentence of its own.
            message = _("The egg cannot be imported: %(problem)s") % {"problem": error.problems[0]}
        else:
            message = _("The egg cannot be imported: %(count)s problems.") % {
                "count": len(error.problems)
            }
        raise InvalidEgg(message, details={"problems": error.problems}) from None
    entry, origin = imported.entry, imported.origin
    with transaction.atomic():
        existing = None
        if origin.get("uuid"):
            existing = Game.objects.select_for_update().filter(origin__uuid=origin["uuid"]).first()
        if existing is not None:
            if slug and slug != existing.slug:
                raise GameExists(
                    _(
                        # Translators: %(slug)s is a game's slug (its short name in addresses).
                        "This egg was imported as %(slug)s; import it again without a slug to "
                        "update that game."
                    )
                    % {"slug": existing.slug},
                    details={"slug": existing.slug},
                )
            changes = GameChanges(
                name=entry["name"],
                template=entry["template"],
                variables=entry["variables"],
                default_port=UNSET if default_port is None else default_port,
            )
            game = game_update(game=existing, changes=changes, actor=actor, origin=origin)
            return GameImport(game, False, imported.notes)
        if default_port is None:
            raise ValidationFailed.field(
                "default_port",
                "required",
                _("default_port is required: an egg does not say which port its servers prefer."),
            )
        game = game_create(
            slug=slug or _free_slug(entry["name"]),
            name=entry["name"],
            default_port=default_port,
            template=entry["template"],
            variables=entry["variables"],
            origin=origin,
            actor=actor,
        )
    return GameImport(game, True, imported.notes)


def game_export(game: Game) -> dict[str, Any]:
    """The game as a ``PTDL_v2`` egg, which Pterodactyl and Pelican import."""
    author = parseaddr(settings.DEFAULT_FROM_EMAIL)[1] or "support@example.com"
    return game_to_egg(
        name=game.name,
        slug=game.slug,
        template=game.template,
        variables=game.variables,
        author=author,
        origin=game.origin,
    )


__all__ = [
    "GameChanges",
    "GameExists",
    "GameImport",
    "GameInUse",
    "InvalidEgg",
    "game_create",
    "game_delete",
    "game_export",
    "game_import",
    "game_update",
]
