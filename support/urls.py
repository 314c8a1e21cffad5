"""Dashboard pages of Support: the customers' tickets (``support/…``) and the staff desk
(``desk/…``)."""

from django.urls import path

from support.views import customer, desk

urlpatterns = [
    path("support", customer.TicketListView.as_view(), name="support_tickets"),
    path("support/new", customer.TicketCreateView.as_view(), name="support_ticket_new"),
    path("support/<id:ticket_id>", customer.TicketDetailView.as_view(), name="support_ticket"),
    path(
        "support/<id:ticket_id>/close",
        customer.TicketCloseView.as_view(),
        name="support_ticket_close",
    ),
    path(
        "support/<id:ticket_id>/reopen",
        customer.TicketReopenView.as_view(),
        name="support_ticket_reopen",
    ),
    path(
        "support/<id:ticket_id>/rate",
        customer.TicketRateView.as_view(),
        name="support_ticket_rate",
    ),
    path(
        "support/attachments/<id:attachment_id>",
        customer.AttachmentView.as_view(),
        name="support_attachment",
    ),
    path("desk", desk.DeskQueueView.as_view(), name="desk"),
    path("desk/tickets/<id:ticket_id>", desk.DeskTicketView.as_view(), name="desk_ticket"),
    path(
        "desk/tickets/<id:ticket_id>/assign",
        desk.DeskAssignView.as_view(),
        name="desk_ticket_assign",
    ),
    path(
        "desk/tickets/<id:ticket_id>/status",
        desk.DeskStatusView.as_view(),
        name="desk_ticket_status",
    ),
    path(
        "desk/tickets/<id:ticket_id>/update",
        desk.DeskUpdateView.as_view(),
        name="desk_ticket_update",
    ),
    path(
        "desk/attachments/<id:attachment_id>",
        desk.DeskAttachmentView.as_view(),
        name="desk_attachment",
    ),
]
