"""A small program against the Python client generated from our OpenAPI schema.

It is never run: ``scripts/check_openapi.py`` generates the client and type-checks this file
with ``mypy --strict``, so a schema change that breaks what a typed client user writes (a
renamed component, an untyped object, a required field that should be optional) breaks the
build.
"""

import datetime

from hosting_management_service_api_client import AuthenticatedClient
from hosting_management_service_api_client.api.analytics import servers_metrics_retrieve
from hosting_management_service_api_client.api.events import events_list
from hosting_management_service_api_client.api.invoices import invoices_pdf_retrieve
from hosting_management_service_api_client.api.servers import (
    servers_actions_create,
    servers_create,
    servers_list,
)
from hosting_management_service_api_client.models import (
    ActionCreateRequest,
    ErrorEnvelope,
    PowerActionType,
    ServerCreateRequest,
    ServerCreateRequestVariables,
    ServersListStatusItem,
)
from hosting_management_service_api_client.types import Unset


def describe_error(envelope: ErrorEnvelope) -> str:
    error = envelope.error
    text = f"{error.code}: {error.message} ({error.request_id})"
    if not isinstance(error.details, Unset):
        for problem in error.details.fields or []:
            text += f"\n  {problem.name}: {problem.code} {problem.message}"
        if not isinstance(error.details.retry_after, Unset):
            text += f"\n  retry in {error.details.retry_after + 0} s"
    return text


def running_server_names(client: AuthenticatedClient) -> list[str]:
    names: list[str] = []
    page = 1
    while True:
        answer = servers_list.sync(
            client=client,
            status=[ServersListStatusItem.RUNNING, ServersListStatusItem.STARTING],
            page=page,
            per_page=100,
        )
        if answer is None or isinstance(answer, ErrorEnvelope):
            raise RuntimeError(describe_error(answer) if answer else "no answer")
        names += [server.name for server in answer.data.servers]
        if page >= answer.data.pagination.total_pages:
            return names
        page += 1


def create_and_start(client: AuthenticatedClient) -> str:
    variables = ServerCreateRequestVariables()
    variables["EULA"] = True
    variables["MAX_PLAYERS"] = 20
    # Fields with server-side defaults (auto_restart, start_on_install) may be left out.
    body = ServerCreateRequest(
        name="Survival SMP", game="minecraft-java", region="eu-central", variables=variables
    )
    created = servers_create.sync(client=client, body=body, idempotency_key="create-smp-1")
    if created is None or isinstance(created, ErrorEnvelope):
        raise RuntimeError(describe_error(created) if created else "no answer")
    server_id: str = created.data.server.id
    accepted = servers_actions_create.sync(
        server_id, client=client, body=ActionCreateRequest(type_=PowerActionType.START)
    )
    if accepted is None or isinstance(accepted, ErrorEnvelope):
        raise RuntimeError(describe_error(accepted) if accepted else "no answer")
    target = accepted.data.action.target
    return f"{accepted.data.action.id} on {target.type_.value} {target.id}"


def last_status_change(client: AuthenticatedClient, server_id: str) -> str | None:
    answer = events_list.sync(client=client, object_id=server_id, per_page=1)
    if answer is None or isinstance(answer, ErrorEnvelope):
        return None
    for event in answer.data.events:
        actor = event.actor.user or event.actor.api_key or "system"
        changed = ", ".join(event.data.previous_attributes.additional_keys)
        return f"{event.type_} by {actor} (changed {changed or 'nothing'})"
    return None


def cpu_peak(client: AuthenticatedClient, server_id: str) -> tuple[datetime.datetime, float]:
    """Metric points are typed ``[time, value]`` pairs."""
    answer = servers_metrics_retrieve.sync(server_id, client=client, metrics="cpu_percent")
    if answer is None or isinstance(answer, ErrorEnvelope):
        raise RuntimeError(describe_error(answer) if answer else "no answer")
    peak: tuple[datetime.datetime, float] = (answer.data.metrics.start, 0.0)
    for series in answer.data.metrics.series:
        for time, value in series.points:
            if not (isinstance(time, datetime.datetime) and isinstance(value, float | int)):
                continue
            if value > peak[1]:
                peak = (time, float(value))
    return peak


def invoice_pdf(client: AuthenticatedClient, invoice_id: str) -> bytes:
    """A download is the bytes it is, without any configuration of the generator."""
    answer = invoices_pdf_retrieve.sync(invoice_id, client=client)
    if answer is None or isinstance(answer, ErrorEnvelope):
        raise RuntimeError(describe_error(answer) if answer else "no answer")
    return answer.payload.read()


if __name__ == "__main__":
    api = AuthenticatedClient(base_url="http://127.0.0.1:8000", token="hms_...")
    print(running_server_names(api), create_and_start(api))
