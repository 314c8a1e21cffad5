"""The lifecycle of servers and bots, in one table.

Each action names the statuses it may start from, the status it sets at once when accepted, and
the steps the worker then takes: a driver call, the status it leads to, and the status a failure
of that call leaves behind (``None``: unchanged). ``EDGES`` is derived from the table and is the
only set of status changes ``servers.services`` will ever write.

    action     from                          at once       worker: call → on success / on failure
    create     (new)                         provisioning  create → installing / install_failed,
                                                           install → stopped / install_failed
                                                           (start_on_install: install → starting,
                                                            start → running / stopped)
    start      stopped                       starting      start → running / stopped
    stop       running                       stopping      stop → stopped / running
    restart    running                       stopping      stop → starting / running,
                                                           start → running / stopped
    kill       starting, running, stopping   stopped       kill
    reinstall  stopped, install_failed       installing    install → stopped / install_failed
    suspend    any but deleting, suspended   suspended     kill
    unsuspend  suspended                     stopped       -
    delete     any but deleting              deleting      delete → gone / (stays deleting, retried)
    crash      running                       stopped       reported by the node; auto_restart
                                                           then starts it (3 times in 10 minutes)
"""

from collections.abc import Iterable
from dataclasses import dataclass

from servers.models import ServerStatus as S

GONE = "gone"  # not a status: the instance is deleted and leaves the API


@dataclass(frozen=True)
class Step:
    call: str
    on_success: str | None
    on_failure: str | None


@dataclass(frozen=True)
class ActionSpec:
    allowed_from: frozenset[str]
    first_status: str
    steps: tuple[Step, ...]


_ALL = frozenset(S.values)
_INSTALL = Step("install", S.STOPPED, S.INSTALL_FAILED)
_START = Step("start", S.RUNNING, S.STOPPED)
_KILL = Step("kill", None, None)

ACTIONS: dict[str, ActionSpec] = {
    "create": ActionSpec(
        frozenset(), S.PROVISIONING, (Step("create", S.INSTALLING, S.INSTALL_FAILED), _INSTALL)
    ),
    "start": ActionSpec(frozenset({S.STOPPED}), S.STARTING, (_START,)),
    "stop": ActionSpec(frozenset({S.RUNNING}), S.STOPPING, (Step("stop", S.STOPPED, S.RUNNING),)),
    "restart": ActionSpec(
        frozenset({S.RUNNING}), S.STOPPING, (Step("stop", S.STARTING, S.RUNNING), _START)
    ),
    "kill": ActionSpec(frozenset({S.STARTING, S.RUNNING, S.STOPPING}), S.STOPPED, (_KILL,)),
    "reinstall": ActionSpec(frozenset({S.STOPPED, S.INSTALL_FAILED}), S.INSTALLING, (_INSTALL,)),
    "suspend": ActionSpec(_ALL - {S.DELETING, S.SUSPENDED}, S.SUSPENDED, (_KILL,)),
    "unsuspend": ActionSpec(frozenset({S.SUSPENDED}), S.STOPPED, ()),
    "delete": ActionSpec(_ALL - {S.DELETING}, S.DELETING, (Step("delete", GONE, None),)),
}
# What a customer sends to POST .../actions; create and delete have their own endpoints, and
# suspension belongs to staff and billing.
POWER_ACTIONS = ("start", "stop", "restart", "kill", "reinstall")
# Actions that may run beside an action in progress and cut it short.
PREEMPTING_ACTIONS = frozenset({"kill"})

CRASH = (S.RUNNING, S.STOPPED)
CRASH_LOOP_LIMIT = 3  # automatic restarts ...
CRASH_LOOP_WINDOW_SECONDS = 600  # ... within this many seconds


def steps_for(action_type: str, *, start_on_install: bool = False) -> tuple[Step, ...]:
    """The worker's steps; a server created with ``start_on_install`` goes on to run."""
    if action_type == "create" and start_on_install:
        create, _ = ACTIONS["create"].steps
        return (create, Step("install", S.STARTING, S.INSTALL_FAILED), _START)
    return ACTIONS[action_type].steps


def allowed_actions(status: str, among: Iterable[str] = POWER_ACTIONS) -> list[str]:
    """The actions ``among`` (the customer's power actions unless told) that the status allows,
    in that order: for error details, the dashboard's and admin's buttons."""
    return [name for name in among if status in ACTIONS[name].allowed_from]


def _edges() -> frozenset[tuple[str, str]]:
    edges = {CRASH}
    for name, spec in ACTIONS.items():
        edges |= {(source, spec.first_status) for source in spec.allowed_from}
        for start_on_install in (False, True):
            current = spec.first_status
            for step in steps_for(name, start_on_install=start_on_install):
                if step.on_failure is not None:
                    edges.add((current, step.on_failure))
                if step.on_success is not None:
                    edges.add((current, step.on_success))
                    current = step.on_success
    return frozenset((str(a), str(b)) for a, b in edges if a != b)


EDGES = _edges()
