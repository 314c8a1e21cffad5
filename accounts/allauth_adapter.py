"""How django-allauth fits the dashboard: people sign up through our own form (which makes
their account), so allauth's sign-up is closed; its "signed in" / "signed out" messages are not
shown (our pages say what happened themselves); client addresses are the ones our sign-in
limits read."""

from allauth.account.adapter import DefaultAccountAdapter

from hosting.http import client_ip

UNSPECIFIED_ADDRESS = "0.0.0.0"  # noqa: S104 - an address shown, nothing listens on it
QUIET = frozenset({"account/messages/logged_in.txt", "account/messages/logged_out.txt"})


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False  # /signup, which also makes the person's first account

    def add_message(self, request, level, message_template=None, *args, **kwargs) -> None:
        if message_template in QUIET:
            return
        super().add_message(request, level, message_template, *args, **kwargs)

    def get_client_ip(self, request) -> str:
        """The address the sign-in limits and the event log use (trusted proxies honoured); a
        request without one (a sign-in made in code, as tests' force_login) is listed with the
        unspecified address, which a session's address column (an IP address) can hold."""
        return client_ip(request) or UNSPECIFIED_ADDRESS
