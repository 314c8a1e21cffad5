from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self) -> None:
        # Importing services at ready() is what Django allows; at module level it is too early.
        from anymail.signals import inbound

        from support.services.mail import anymail_inbound_received

        inbound.connect(anymail_inbound_received, dispatch_uid="support.mail_receive")
