"""The servers app's periodic upkeep (run by ``manage.py housekeeping``)."""

from servers.counts import instance_counts_compact
from servers.services import actions_recover_stale
from servers.services.backups import backups_fail_stale, backups_purge_left
from servers.services.schedules import schedule_steps_recover, schedules_dispatch


def run() -> dict[str, int]:
    actions = actions_recover_stale()
    return {
        "actions failed": actions["failed"],
        "actions resumed": actions["resumed"],
        "actions requeued": actions["requeued"],
        "server count rows folded": instance_counts_compact(),
        "stale backups failed": backups_fail_stale(),
        "deleted instances' backups purged": backups_purge_left(),
        "schedule runs started": schedules_dispatch()["started"],
        "schedule steps timed out": schedule_steps_recover(),
    }
