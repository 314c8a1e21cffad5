"""``/v1/servers/{id}/schedules…`` and ``/v1/bots/{id}/schedules…``: schedules through the API.

A mixin of the instances' viewsets, as the backups' is: the instance is found as their other
actions find it (the caller's account), the scopes are ``schedules:read`` / ``schedules:write``
beside the instance's own read scope, and the work is ``servers.services.schedules``'.
"""

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.response import Response

from accounts.actors import Actor
from hosting.api.pagination import PageNumberPagination
from hosting.api.schema import envelope, error_doc
from hosting.api.serializers import DeletedSerializer, RepresentedBy, StrictInputSerializer
from hosting.api.views import paginated, validated
from servers.models import Schedule, ScheduleRunStatus, ScheduleRunTrigger, ScheduleTaskAction
from servers.services.schedules import (
    MAX_COMMAND_BYTES,
    MAX_OFFSET_SECONDS,
    MAX_TASKS,
    schedule_create,
    schedule_delete,
    schedule_of,
    schedule_representation,
    schedule_run_now,
    schedule_run_representation,
    schedule_runs_of,
    schedule_update,
    schedules_of,
)

SCHEDULE_ID = r"(?P<schedule_id>sch_[A-Za-z0-9]{1,60})"
TASK_STATUSES = ["pending", "running", "succeeded", "failed", "skipped"]


# --- Serializers --------------------------------------------------------------------------


class ScheduleTargetSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["server", "bot"])
    id = serializers.CharField()


class ScheduleTaskSerializer(StrictInputSerializer):
    action = serializers.ChoiceField(
        choices=ScheduleTaskAction.choices,
        help_text="`power`: a power action; `command`: a console command; `backup`: back up now.",
    )
    payload = serializers.CharField(
        max_length=MAX_COMMAND_BYTES,
        required=False,
        allow_blank=True,
        help_text="`power`: start, stop, restart or kill; `command`: the one line written to "
        "the console; `backup`: the backup's name (blank: the time).",
    )
    offset_seconds = serializers.IntegerField(
        min_value=0,
        max_value=MAX_OFFSET_SECONDS,
        default=0,
        help_text="Seconds after the run began that the task starts (never before the task "
        "before it ended).",
    )
    continue_on_failure = serializers.BooleanField(
        default=False, help_text="Go on with the next task when this one fails."
    )


class ScheduleTaskShownSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=ScheduleTaskAction.choices)
    payload = serializers.CharField()
    offset_seconds = serializers.IntegerField()
    continue_on_failure = serializers.BooleanField()


class ScheduleSerializer(RepresentedBy, serializers.Serializer):
    """A schedule of a server or bot."""

    represent = staticmethod(schedule_representation)

    id = serializers.CharField()
    name = serializers.CharField()
    target = ScheduleTargetSerializer()
    cron = serializers.CharField(help_text="Five fields: minute hour day month weekday.")
    timezone = serializers.CharField(help_text="The IANA time zone the cron line is read in.")
    description = serializers.CharField(help_text="The cron line in words, with its time zone.")
    active = serializers.BooleanField(help_text="False: paused.")
    only_when_running = serializers.BooleanField()
    next_run_at = serializers.CharField(allow_null=True, help_text="Null while paused.")
    last_run_at = serializers.CharField(allow_null=True)
    tasks = ScheduleTaskShownSerializer(many=True)
    created_at = serializers.CharField()
    updated_at = serializers.CharField()


class ScheduleRunTaskSerializer(ScheduleTaskShownSerializer):
    status = serializers.ChoiceField(choices=TASK_STATUSES)
    error = serializers.CharField(allow_null=True)
    action_id = serializers.CharField(allow_null=True, help_text="The power action it asked.")
    backup_id = serializers.CharField(allow_null=True, help_text="The backup it started.")
    started_at = serializers.CharField(allow_null=True)
    completed_at = serializers.CharField(allow_null=True)


class ScheduleRunSerializer(RepresentedBy, serializers.Serializer):
    """One run of a schedule, with each task's outcome."""

    represent = staticmethod(schedule_run_representation)

    id = serializers.CharField()
    schedule_id = serializers.CharField()
    tick = serializers.CharField(allow_null=True, help_text="The tick it ran for; null: run now.")
    trigger = serializers.ChoiceField(choices=ScheduleRunTrigger.choices)
    status = serializers.ChoiceField(choices=ScheduleRunStatus.choices)
    reason = serializers.CharField(allow_null=True, help_text="Why it failed or was skipped.")
    tasks = ScheduleRunTaskSerializer(many=True)
    started_at = serializers.CharField()
    completed_at = serializers.CharField(allow_null=True)


class ScheduleCreateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100)
    cron = serializers.CharField(max_length=100, help_text="minute hour day month weekday.")
    timezone = serializers.CharField(max_length=64, default="UTC")
    active = serializers.BooleanField(default=True)
    only_when_running = serializers.BooleanField(
        default=False, help_text="A tick while it is not running is recorded as skipped."
    )
    tasks = ScheduleTaskSerializer(
        many=True, help_text=f"1 to {MAX_TASKS} tasks, in the order they run."
    )


class ScheduleUpdateSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=100, required=False)
    cron = serializers.CharField(max_length=100, required=False)
    timezone = serializers.CharField(max_length=64, required=False)
    active = serializers.BooleanField(required=False, help_text="false pauses, true resumes.")
    only_when_running = serializers.BooleanField(required=False)
    tasks = ScheduleTaskSerializer(
        many=True,
        required=False,
        help_text=f"1 to {MAX_TASKS} tasks, in the order they run; replaces them all.",
    )


SCHEDULE_EXAMPLE = {
    "id": "sch_4Tn8Wq2Lx7Rb1Mc9Vd3Hk6Zp",
    "name": "Nightly restart",
    "target": {"type": "server", "id": "srv_3Hx7Lm2Qw9Zr5Tk1Nc8Vb4Gs"},
    "cron": "0 4 * * *",
    "timezone": "Europe/Berlin",
    "description": "every day at 04:00 (Europe/Berlin)",
    "active": True,
    "only_when_running": True,
    "next_run_at": "2026-11-29T03:00:00Z",
    "last_run_at": "2026-11-28T03:00:04Z",
    "tasks": [
        {
            "action": "command",
            "payload": "say Restarting in 5 minutes",
            "offset_seconds": 0,
            "continue_on_failure": True,
        },
        {"action": "backup", "payload": "", "offset_seconds": 240, "continue_on_failure": False},
        {
            "action": "power",
            "payload": "restart",
            "offset_seconds": 300,
            "continue_on_failure": False,
        },
    ],
    "created_at": "2026-11-21T15:04:05Z",
    "updated_at": "2026-11-21T15:04:05Z",
}
CREATE_EXAMPLE = {
    key: SCHEDULE_EXAMPLE[key] for key in ("name", "cron", "timezone", "only_when_running", "tasks")
}
RUN_EXAMPLE = {
    "id": "schr_8Kd2Vn5Qx1Lm7Rt3Wb9Hc4Zs",
    "schedule_id": SCHEDULE_EXAMPLE["id"],
    "tick": "2026-11-28T03:00:00Z",
    "trigger": "tick",
    "status": "failed",
    "reason": "Task 2 (backup) failed: This server keeps 3 backups, as many as its plan allows, "
    "and none can be rotated (locked, or kept by retention); delete or unlock one.",
    "tasks": [
        task
        | {
            "status": status,
            "error": None,
            "action_id": None,
            "backup_id": None,
            "started_at": started,
            "completed_at": started,
        }
        for task, status, started in zip(
            SCHEDULE_EXAMPLE["tasks"],
            ["succeeded", "failed", "skipped"],
            ["2026-11-28T03:00:04Z", "2026-11-28T03:04:00Z", None],
            strict=True,
        )
    ],
    "started_at": "2026-11-28T03:00:04Z",
    "completed_at": "2026-11-28T03:04:01Z",
}
LIMIT = error_doc(
    409,
    "schedule_limit_reached",
    "`schedule_limit_reached` (details.limit): as many schedules as the plan allows.",
    "This server has 5 schedules, as many as its plan allows; delete one first.",
    {"limit": 5},
)
NOT_FOUND = error_doc(404, "not_found", "`not_found`: no such schedule here.", "No such schedule.")
RULES = (
    " The cron line has five fields (minute hour day month weekday, cron's usual syntax: `*`, "
    "`*/15`, `1-5`, `MON`, `L`…), read in `timezone` (IANA); a bad one is 400 "
    "`validation_failed` naming `cron` and what is wrong. 1 to 20 tasks, run in order, each "
    "`offset_seconds` (0 to 900) after the run began; a failed task ends the run unless "
    "`continue_on_failure`."
)


def _schedule_envelope(name: str):
    return envelope("schedule", ScheduleSerializer(), name=name)


def _body(body: dict) -> dict:
    """The API's ``timezone`` is the service's ``time_zone``; the tasks plain dicts."""
    changes = dict(body)
    if "timezone" in changes:
        changes["time_zone"] = changes.pop("timezone")
    if "tasks" in changes:
        changes["tasks"] = [dict(item) for item in changes["tasks"]]
    return changes


class InstanceSchedulesMixin:
    """Schedules of a server or bot (``get_object`` of the viewset)."""

    SCHEDULE_READ = ("schedules", "schedule_detail", "schedule_runs")
    SCHEDULE_WRITE = ("schedule_create", "schedule_update", "schedule_destroy", "schedule_run")

    @classmethod
    def schedule_scopes(cls, read_scope: str) -> dict[str, list[str]]:
        """Each schedule action's scopes: the instance's read scope and schedules:read or
        :write."""
        return {name: [read_scope, "schedules:read"] for name in cls.SCHEDULE_READ} | {
            name: [read_scope, "schedules:write"] for name in cls.SCHEDULE_WRITE
        }

    def _schedule(self, schedule_id: str) -> Schedule:
        return schedule_of(self.get_object(), schedule_id)

    @extend_schema(
        summary="List schedules",
        description="The schedules of this server or bot, newest first, each with its next "
        "run and its cron line in words. Needs schedules:read.",
        responses=ScheduleSerializer(many=True),
        examples=[OpenApiExample("Nightly restart", value=SCHEDULE_EXAMPLE, response_only=True)],
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="schedules",
        pagination_class=PageNumberPagination.for_key("schedules"),
    )
    def schedules(self, request, pk=None):
        return paginated(self, schedules_of(self.get_object()), "schedules", ScheduleSerializer)

    @extend_schema(
        summary="Create a schedule",
        description="A schedule with its tasks; `schedule.created`. Its runs are started by the "
        "workers within the minute of each tick, exactly once; a tick missed while no worker "
        "ran runs once late within 15 minutes (and the schedule's own period), otherwise it "
        "is recorded as skipped." + RULES + " Needs schedules:write.",
        request=ScheduleCreateSerializer,
        responses={201: _schedule_envelope("ScheduleCreatedEnvelope"), 409: LIMIT},
        examples=[OpenApiExample("Nightly restart", value=CREATE_EXAMPLE, request_only=True)],
    )
    @schedules.mapping.post
    def schedule_create(self, request, pk=None):
        body = _body(validated(ScheduleCreateSerializer, request))
        instance = self.get_object()
        schedule = schedule_create(instance=instance, actor=Actor.from_request(request), **body)
        return Response(
            {"schedule": ScheduleSerializer(schedule).data},
            status=201,
            headers={
                "Location": request.build_absolute_uri(
                    f"/v1/{instance.kind}s/{instance.pk}/schedules/{schedule.id}"
                )
            },
        )

    @extend_schema(
        summary="Get a schedule",
        description="One schedule, its next run and its tasks. Needs schedules:read.",
        responses={200: _schedule_envelope("ScheduleEnvelope"), 404: NOT_FOUND},
        examples=[
            OpenApiExample("A schedule", value={"schedule": SCHEDULE_EXAMPLE}, response_only=True)
        ],
    )
    @action(detail=True, methods=["get"], url_path=f"schedules/{SCHEDULE_ID}")
    def schedule_detail(self, request, pk=None, schedule_id=None):
        return Response({"schedule": ScheduleSerializer(self._schedule(schedule_id)).data})

    @extend_schema(
        summary="Change, pause or resume a schedule",
        description="Fields left out keep their value; `tasks` replaces them all; `active` "
        "false pauses it (no next run), true resumes it from now. `schedule.updated`."
        + RULES
        + " Needs schedules:write.",
        request=ScheduleUpdateSerializer,
        responses={200: _schedule_envelope("ScheduleUpdatedEnvelope"), 404: NOT_FOUND},
        examples=[OpenApiExample("Pause", value={"active": False}, request_only=True)],
    )
    @schedule_detail.mapping.patch
    def schedule_update(self, request, pk=None, schedule_id=None):
        body = _body(validated(ScheduleUpdateSerializer, request))
        schedule = schedule_update(
            schedule=self._schedule(schedule_id), actor=Actor.from_request(request), **body
        )
        return Response({"schedule": ScheduleSerializer(schedule).data})

    @extend_schema(
        summary="Delete a schedule",
        description="Deletes it with its runs' history; a run under way stops before its next "
        "task. `schedule.deleted`. Needs schedules:write.",
        request=None,
        responses={200: DeletedSerializer, 404: NOT_FOUND},
    )
    @schedule_detail.mapping.delete
    def schedule_destroy(self, request, pk=None, schedule_id=None):
        schedule_delete(schedule=self._schedule(schedule_id), actor=Actor.from_request(request))
        return Response({"id": schedule_id, "deleted": True})

    @extend_schema(
        summary="Run a schedule now",
        description="Starts its tasks now (with their offsets), paused or not and whether the "
        "server runs or not; 202 with the run, which is recorded as the ticks' are (`tick` "
        "null, `trigger` manual). The ticks are unchanged. Needs schedules:write.",
        request=None,
        responses={
            202: envelope("run", ScheduleRunSerializer(), name="ScheduleRunStartedEnvelope"),
            404: NOT_FOUND,
        },
    )
    @action(detail=True, methods=["post"], url_path=f"schedules/{SCHEDULE_ID}/run")
    def schedule_run(self, request, pk=None, schedule_id=None):
        run = schedule_run_now(
            schedule=self._schedule(schedule_id), actor=Actor.from_request(request)
        )
        return Response({"run": ScheduleRunSerializer(run).data}, status=202)

    @extend_schema(
        summary="List a schedule's runs",
        description="Its runs, newest first: each tick's (run, late or skipped, and why) and "
        "each run now, with every task's outcome. Needs schedules:read.",
        responses=ScheduleRunSerializer(many=True),
        examples=[OpenApiExample("A failed run", value=RUN_EXAMPLE, response_only=True)],
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=f"schedules/{SCHEDULE_ID}/runs",
        pagination_class=PageNumberPagination.for_key("runs"),
    )
    def schedule_runs(self, request, pk=None, schedule_id=None):
        runs = schedule_runs_of(self._schedule(schedule_id))
        return paginated(self, runs, "runs", ScheduleRunSerializer)
