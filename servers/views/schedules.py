"""The Schedules tab of a server or bot: its schedules with their cron line in words, next run
and last outcome; a form to create or edit one with its tasks; pause, resume, run now and
delete; each schedule's runs (servers/services/schedules.py does the work).

Reading needs ``schedules:read`` among the role's scopes, changing ``schedules:write`` (and an
account that is not suspended), as the API's keys need them. Every change is a plain form POST
that comes back with a message.
"""

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View
from django.views.generic import TemplateView

from accounts.actors import Actor
from hosting.errors import ApplicationError, ValidationFailed
from servers.models import Schedule, ScheduleRun, ScheduleTaskAction
from servers.services.schedules import (
    MAX_OFFSET_SECONDS,
    MAX_TASKS,
    POWER_ACTIONS,
    schedule_create,
    schedule_delete,
    schedule_describe,
    schedule_limit,
    schedule_of,
    schedule_run_now,
    schedule_runs_of,
    schedule_update,
    schedules_of,
)
from servers.views import BotPages, InstanceObjectMixin, ServerPages, area_refusal

PER_PAGE = 25
SPARE_ROWS = 3
COMMON_ZONES = ("UTC", "Europe/London", "Europe/Berlin", "America/New_York", "America/Los_Angeles")
# A run's tasks (JSON) by their status and action codes, in words in the reader's language.
TASK_STATUS_LABELS = {
    "pending": gettext_lazy("pending"),
    "running": gettext_lazy("running"),
    "succeeded": gettext_lazy("succeeded"),
    "failed": gettext_lazy("failed"),
    "skipped": gettext_lazy("skipped"),
}
TASK_ACTION_LABELS = {
    ScheduleTaskAction.POWER: gettext_lazy("power"),
    ScheduleTaskAction.COMMAND: gettext_lazy("command"),
    ScheduleTaskAction.BACKUP: gettext_lazy("backup"),
}


class InstanceSchedulesMixin(InstanceObjectMixin):
    """A schedules page: the role must hold ``schedules:read``, and ``schedules:write`` to POST
    (or to see a page that is only a form)."""

    form_page = False

    def may_schedules(self, verb: str) -> bool:
        writable = verb == "read" or not self.account.is_suspended
        return writable and f"schedules.{verb}" in self.permissions

    def refuse(self, request):
        verb = "write" if request.method == "POST" or self.form_page else "read"
        if not self.may_schedules(verb):
            role = request.membership.get_role_display()
            doing = "see" if verb == "read" else "change"
            messages.error(request, area_refusal("schedules", doing, self.kind, role))
            return redirect(self.url("detail") if verb == "read" else self.url("schedules"))
        return super().refuse(request)

    def schedule(self) -> Schedule:
        try:
            return schedule_of(self.instance, self.kwargs["schedule_id"])
        except ApplicationError:
            raise Http404("No such schedule.") from None


class InstanceSchedulesView(InstanceSchedulesMixin, TemplateView):
    """The schedules, newest first, each with its last run."""

    template_name = "servers/instance_schedules.html"

    def get_context_data(self, **kwargs):
        schedules = list(schedules_of(self.instance))
        last_runs: dict[str, ScheduleRun] = {}
        for run in ScheduleRun.objects.filter(schedule__in=schedules).order_by(
            "schedule_id", "-started_at", "-id"
        ):
            last_runs.setdefault(run.schedule_id, run)
        for schedule in schedules:
            schedule.description = schedule_describe(schedule.cron, schedule.time_zone)
            schedule.last_run = last_runs.get(schedule.pk)
        return super().get_context_data(
            schedules=schedules,
            limit=schedule_limit(self.instance),
            can_write_schedules=self.may_schedules("write"),
            **kwargs,
        )


def _tasks_from(form) -> list[dict[str, Any]]:
    """The task rows of the form that name an action, in the order of their "Order" numbers
    (rows with the same number, or none, keep their place on the form)."""
    rows = []
    for index in range(MAX_TASKS + SPARE_ROWS):
        action = form.get(f"task-{index}-action", "")
        if not action:
            continue
        number = len(rows) + 1
        offset = form.get(f"task-{index}-offset", "").strip() or "0"
        if not offset.isdigit():
            raise ValidationFailed.field(
                f"tasks.{len(rows)}.offset_seconds",
                "invalid",
                _("Task %(number)s: the offset is a whole number of seconds.") % {"number": number},
            )
        order = form.get(f"task-{index}-order", "").strip() or str(index + 1)
        if not order.isdigit():
            raise ValidationFailed.field(
                f"tasks.{len(rows)}.order",
                "invalid",
                _("Task %(number)s: the order is a whole number (1 runs first).")
                % {"number": number},
            )
        task = {
            "action": action,
            "payload": form.get(f"task-{index}-payload", ""),
            "offset_seconds": int(offset),
            "continue_on_failure": form.get(f"task-{index}-continue") == "on",
        }
        rows.append((int(order), index, task))
    return [task for _order, _index, task in sorted(rows, key=lambda row: row[:2])]


class InstanceScheduleFormView(InstanceSchedulesMixin, TemplateView):
    """``GET``: the form (new, or the schedule's); ``POST``: save it, back to the list."""

    template_name = "servers/instance_schedule_form.html"
    form_page = True

    def existing(self) -> Schedule | None:
        return self.schedule() if "schedule_id" in self.kwargs else None

    def get_context_data(self, **kwargs):
        schedule = self.existing()
        values = kwargs.pop("values", None)
        if values is None:
            values = {
                "name": schedule.name if schedule else "",
                "cron": schedule.cron if schedule else "0 4 * * *",
                "timezone": schedule.time_zone if schedule else "UTC",
                "active": schedule.active if schedule else True,
                "only_when_running": schedule.only_when_running if schedule else False,
                "tasks": [
                    {
                        "action": task.action,
                        "payload": task.payload,
                        "offset_seconds": task.offset_seconds,
                        "continue_on_failure": task.continue_on_failure,
                    }
                    for task in (schedule.tasks.all() if schedule else [])
                ],
            }
        rows = list(values["tasks"])
        rows += [{}] * max(0, min(MAX_TASKS, len(rows) + SPARE_ROWS) - len(rows))
        return super().get_context_data(
            schedule=schedule,
            values=values,
            rows=rows,
            actions=ScheduleTaskAction.choices,
            power_payloads=POWER_ACTIONS,
            zones=COMMON_ZONES,
            max_offset=MAX_OFFSET_SECONDS,
            **kwargs,
        )

    def post(self, request, *args, **kwargs):
        schedule = self.existing()
        form = request.POST
        values: dict[str, Any] = {
            "name": form.get("name", ""),
            "cron": form.get("cron", ""),
            "timezone": form.get("timezone", "").strip(),
            "active": form.get("active") == "on",
            "only_when_running": form.get("only_when_running") == "on",
            "tasks": [],
        }
        actor = Actor.from_request(request)
        try:
            values["tasks"] = _tasks_from(form)
            fields = {key: value for key, value in values.items() if key != "timezone"}
            fields["time_zone"] = values["timezone"]
            if schedule is None:
                schedule = schedule_create(instance=self.instance, actor=actor, **fields)
            else:
                schedule = schedule_update(schedule=schedule, actor=actor, **fields)
        except ApplicationError as error:
            messages.error(request, error.message)
            return self.render_to_response(self.get_context_data(values=values))
        messages.success(request, _("“%(name)s” is saved.") % {"name": schedule.name})
        return redirect(self.url("schedules"))


class InstanceSchedulesDoView(InstanceSchedulesMixin, View):
    """``POST op=pause|resume|run|delete schedule_id=…``: one change, back to the list."""

    http_method_names = ["post"]

    def post(self, request, *args, **kwargs):
        self.instance  # noqa: B018 - another account's, or none: 404 before reading the form
        op = request.POST.get("op", "")
        actor = Actor.from_request(request)
        try:
            schedule = schedule_of(self.instance, request.POST.get("schedule_id", ""))
            if op in ("pause", "resume"):
                schedule_update(schedule=schedule, actor=actor, active=op == "resume")
                done = (
                    _("“%(name)s” is paused.") if op == "pause" else _("“%(name)s” is resumed.")
                ) % {"name": schedule.name}
            elif op == "run":
                schedule_run_now(schedule=schedule, actor=actor)
                done = _("“%(name)s” is running now: its runs show how it goes.") % {
                    "name": schedule.name
                }
            elif op == "delete":
                schedule_delete(schedule=schedule, actor=actor)
                done = _("“%(name)s” is deleted.") % {"name": schedule.name}
            else:
                raise Http404("No such operation.")
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, done)
        return redirect(self.url("schedules"))


class InstanceScheduleRunsView(InstanceSchedulesMixin, TemplateView):
    """A schedule's runs, newest first, a page at a time, with each task's outcome."""

    template_name = "servers/instance_schedule_runs.html"

    def get_context_data(self, **kwargs):
        schedule = self.schedule()
        page = Paginator(schedule_runs_of(schedule), PER_PAGE).get_page(
            self.request.GET.get("page")
        )
        return super().get_context_data(
            schedule=schedule,
            description=schedule_describe(schedule.cron, schedule.time_zone),
            runs=[_with_task_labels(run) for run in page.object_list],
            page=page,
            running=any(run.status == "running" for run in page.object_list),
            **kwargs,
        )


class ServerSchedulesView(ServerPages, InstanceSchedulesView):
    pass


class ServerScheduleFormView(ServerPages, InstanceScheduleFormView):
    pass


class ServerSchedulesDoView(ServerPages, InstanceSchedulesDoView):
    pass


class ServerScheduleRunsView(ServerPages, InstanceScheduleRunsView):
    pass


class BotSchedulesView(BotPages, InstanceSchedulesView):
    pass


class BotScheduleFormView(BotPages, InstanceScheduleFormView):
    pass


class BotSchedulesDoView(BotPages, InstanceSchedulesDoView):
    pass


class BotScheduleRunsView(BotPages, InstanceScheduleRunsView):
    pass


def _with_task_labels(run: ScheduleRun) -> ScheduleRun:
    """``run`` with each task's status and action in words (not saved)."""
    run.tasks = [
        task
        | {
            "status_label": TASK_STATUS_LABELS.get(task.get("status"), task.get("status")),
            "action_label": TASK_ACTION_LABELS.get(task.get("action"), task.get("action")),
        }
        for task in run.tasks
    ]
    return run
