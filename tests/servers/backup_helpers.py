"""What the backup tests share: a stand-in for a node's agent that records each backup call
(``FakeAgent``; the fixtures are in conftest.py), and backups made as the agent's reports
would leave them."""

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from servers.drivers import DriverError
from servers.models import Backup, BackupStatus

CHECKSUM = "sha256:" + "ab" * 32


@dataclass
class FakeAgent:
    """Answers the backup calls as the agent does (202, 204, the progress of one it works
    on); ``down`` makes it unreachable, ``answers`` overrides one call's answer."""

    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    down: bool = False
    answers: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    working_on: set[str] = field(default_factory=set)

    def __call__(self, node, method, path, *, body=None, headers=None, timeout=None):
        self.calls.append((method, path, body))
        if self.down:
            raise DriverError(f"The node {node.name} cannot be reached right now.")
        kind = re.sub(r"bkp_\w+", "{backup}", re.sub(r"(srv|bot)_\w+", "{id}", path))
        if (method, kind) in self.answers:
            status, answer = self.answers[(method, kind)]
            return status, answer, {}
        backup_id = (re.search(r"bkp_\w+", path) or [None])[0] or (body or {}).get("backup_id")
        if method == "POST" and kind == "servers/{id}/backups":
            return 202, {"backup_id": backup_id, "status": "running"}, {}
        if method == "POST" and kind.endswith("/restore"):
            return 202, {"backup_id": backup_id, "status": "running"}, {}
        if method == "DELETE":
            return 204, None, {}
        if method == "GET" and backup_id in self.working_on:
            answer = {"backup_id": backup_id, "operation": "backup", "status": "running"}
            return 200, answer | {"bytes": 2048, "files": 7}, {}
        return 404, {"error": {"code": "not_found", "message": "No such backup."}}, {}

    def of(self, method: str) -> list[tuple[str, str, Any]]:
        return [call for call in self.calls if call[0] == method]


def completed_backup(instance, *, at: datetime | None = None, size=1024, **fields) -> Backup:
    """A completed backup of ``instance`` as the agent's report leaves it."""
    target = {instance.kind: instance}
    return Backup.objects.create(
        account=instance.account,
        node=instance.node,
        name=fields.pop("name", "A backup"),
        status=fields.pop("status", BackupStatus.COMPLETED),
        size=size,
        checksum=CHECKSUM,
        files=3,
        storage_kind=fields.pop("storage_kind", "node"),
        created_at=at or timezone.now(),
        completed_at=at or timezone.now(),
        **target,
        **fields,
    )
