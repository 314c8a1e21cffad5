from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self) -> None:
        # Importing services at ready() is what Django allows; at module level it is too early.
        from anymail.signals import inbound

        from support.services.mail import anymail_inbound_received

        inbound.connect(anymail_inbound_received, dispatch_uid="support.mail_receive")
        from hosting.dashboard.staff_home import StaffPanel, register_staff_panel

        # The staff home's desk panel: the person's queues and breaches.
        register_staff_panel(
            StaffPanel(
                key="desk",
                order=10,
                template="staff/desk_panel.html",
                context=_desk_panel,
                visible=_works_at_desk,
            )
        )


def _works_at_desk(user) -> bool:
    """As for the desk itself: a role that works the desk, in at least one department."""
    from support.selectors import departments_of_staff

    return bool(user.works_desk and departments_of_staff(user).exists())


def _desk_panel(user) -> dict:
    from django.utils import timezone

    from support.selectors import desk_summary

    return {"desk": desk_summary(user, now=timezone.now())}
