"""The game catalogue's sync: the games of ``servers/catalogue/`` (``servers.catalogue``) into
the ``Game`` table, so a fixed script or a new game reaches existing installs.

Idempotent: a game the folder holds is created when missing and updated where its name, port,
template or variables differ; a second run changes nothing. Games staff added (not in the folder)
are left alone, and no game is ever deleted here (servers use them). The test workload is a
game of the folder for tests and the local demo node only: it is synced when named.
"""

from dataclasses import dataclass, field

from django.db import transaction

from servers.catalogue import load_catalogue
from servers.models import Game

SYNCED_FIELDS = ("name", "default_port", "template", "variables")
# Games of the folder that are not for customers: synced only when named.
NOT_LISTED = frozenset({"test-workload"})


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: dict[str, list[str]] = field(default_factory=dict)  # slug: the fields changed
    unchanged: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            *(f"created {slug}" for slug in self.created),
            *(f"updated {slug}: {', '.join(fields)}" for slug, fields in self.updated.items()),
            f"{len(self.unchanged)} unchanged",
        ]


def catalogue_sync(*, slugs: list[str] | None = None, dry_run: bool = False) -> SyncReport:
    """Bring the games of the catalogue folder (those named in ``slugs``, or all but the
    unlisted ones) into the database; with ``dry_run``, only say what would change. A slug the
    folder lacks raises ``KeyError``; a manifest with problems, ``ManifestError`` (nothing is
    written then)."""
    catalogue = load_catalogue()
    if slugs:
        unknown = sorted(set(slugs) - set(catalogue))
        if unknown:
            raise KeyError(", ".join(unknown))
        wanted = {slug: catalogue[slug] for slug in sorted(set(slugs))}
    else:
        wanted = {slug: entry for slug, entry in catalogue.items() if slug not in NOT_LISTED}
    report = SyncReport()
    with transaction.atomic():
        existing = Game.objects.select_for_update().in_bulk(list(wanted))
        for slug, entry in wanted.items():
            game = existing.get(slug)
            if game is None:
                report.created.append(slug)
                if not dry_run:
                    Game.objects.create(slug=slug, **{key: entry[key] for key in SYNCED_FIELDS})
                continue
            changed = [key for key in SYNCED_FIELDS if getattr(game, key) != entry[key]]
            if not changed:
                report.unchanged.append(slug)
                continue
            report.updated[slug] = changed
            if not dry_run:
                for key in changed:
                    setattr(game, key, entry[key])
                game.save(update_fields=changed)
    return report
