"""Staff and schedules in the Django admin: listed and shown read-only (with the cron line in
words and the tasks), paused, resumed, run now and deleted through the services; runs read-only."""

import pytest
from django.contrib.messages import get_messages

from accounts.actors import SYSTEM
from events.models import Event
from servers.models import Schedule, ScheduleRun
from servers.services.schedules import schedule_create
from tests.accounts.test_admin import admin_url
from tests.factories import ServerFactory

pytestmark = pytest.mark.django_db


def test_schedules_are_read_only_and_change_through_the_services(staff_client, account):
    schedule = schedule_create(
        instance=ServerFactory(account=account),
        actor=SYSTEM,
        name="Nightly",
        cron="0 4 * * *",
        time_zone="Europe/Berlin",
        tasks=[{"action": "command", "payload": "say hi"}],
    )
    assert schedule.id in staff_client.get(admin_url(Schedule, "changelist")).content.decode()
    page = staff_client.get(admin_url(Schedule, "change", schedule.pk)).content.decode()
    assert "every day at 04:00 (Europe/Berlin)" in page and "say hi" in page
    assert staff_client.get(admin_url(Schedule, "add")).status_code == 403

    def act(action):
        answer = staff_client.post(
            admin_url(Schedule, "changelist"),
            {"action": action, "_selected_action": [schedule.id]},
            follow=True,
        )
        return " ".join(str(message) for message in get_messages(answer.wsgi_request))

    assert "Paused 1 schedule" in act("pause_selected")
    schedule.refresh_from_db()
    assert (schedule.active, schedule.next_run_at) == (False, None)
    assert "Resumed 1 schedule" in act("resume_selected")
    assert "Started 1 schedule" in act("run_selected")
    run = ScheduleRun.objects.get()
    assert run.trigger == "manual"
    assert staff_client.get(admin_url(ScheduleRun, "change", run.pk)).status_code == 200
    assert staff_client.get(admin_url(ScheduleRun, "add")).status_code == 403
    assert "Deleted 1 schedule" in act("delete_selected_schedules")
    assert not Schedule.objects.exists()
    assert Event.objects.filter(type="schedule.deleted").count() == 1
