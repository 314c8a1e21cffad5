"""The agent's state file, ``<data_root>/state.json``: what a restarted agent needs to adopt the
processes it left running (pid and start time), each server's spec without its secrets, the
console public key, and the events not yet delivered. Written atomically, readable by root only.
"""

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STATE_VERSION = 1


def empty_state() -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "console_public_key": None,
        "servers": {},
        "events": [],
        "uids": {},  # server id → its own uid, kept while its folder exists
        # server id → {"backup_id", "operation"} of a backup or restore running (agent/backups.py)
        "backups": {},
    }


class StateFile:
    def __init__(self, path: Path):
        self.path = path

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return empty_state()
        except (OSError, ValueError) as error:
            # A broken state file must not keep the node down; its servers are then unknown
            # until the control plane sends their specs again in the answer to hello.
            broken = self.path.with_suffix(f".broken-{os.urandom(3).hex()}")
            log.error("state file %s unreadable (%s); moved to %s", self.path, error, broken)
            os.replace(self.path, broken)
            return empty_state()
        state = empty_state()
        state.update({key: data[key] for key in state if key in data})
        return state

    def save(self, state: dict[str, Any]) -> None:
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        data = json.dumps(state, indent=1, sort_keys=True).encode()
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
