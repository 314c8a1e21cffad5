import contextlib
import http.server
import threading
import urllib.error
import urllib.request
from pathlib import Path

import stripe

from accounts.actors import Actor
from stripe_gateway.services.charges import ChargeOutcome, charge_confirm
from stripe_gateway.services.methods import payment_method_save, setup_intent_create

# Answers Stripe gives where localstripe behaves otherwise, as Stripe sends them.
RECORDED = Path(__file__).parent / "recorded"
VISA = "4242424242424242"
DECLINED_AFTER_ATTACH = "4000000000000341"  # attaches, then every charge is declined
NEEDS_AUTHENTICATION = "4000002760003184"  # 3-D Secure on every payment


def save_card(client: stripe.StripeClient, account, user, number: str = VISA):
    """What the payment methods page does with Stripe.js: a SetupIntent from our server,
    confirmed in the browser with the card, then saved on our side."""
    intent = setup_intent_create(account=account)
    card = client.v1.payment_methods.create(
        params={
            "type": "card",
            "card": {"number": number, "exp_month": 12, "exp_year": 2034, "cvc": "123"},
        }
    )
    confirmed = client.v1.setup_intents.confirm(intent["id"], params={"payment_method": card.id})
    if confirmed.status == "requires_action":
        # the bank's challenge, passed in the browser; Stripe.js then confirms again
        client.v1.setup_intents.confirm(intent["id"])
    return payment_method_save(account=account, setup_intent=intent["id"], actor=Actor(user=user))


class StripeProxy(http.server.ThreadingHTTPServer):
    """A proxy to localstripe that passes every request on and every answer back, except:
    ``drop_confirm_answers``: the answers to confirmations are lost (Stripe charged, the caller
    never hears it: a timeout); ``recorded``: by ``(method, path)``, an answer Stripe gives
    where localstripe behaves otherwise (Stripe's own payload), given instead."""

    def __init__(
        self,
        upstream: str,
        *,
        drop_confirm_answers: bool = False,
        recorded: dict[tuple[str, str], tuple[int, bytes]] | None = None,
    ):
        self.upstream = upstream
        self.drop_confirm_answers = drop_confirm_answers
        self.recorded = recorded or {}
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if (self.command, self.path) in self.server.recorded:
            self._answer(*self.server.recorded[self.command, self.path], "application/json")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host",)}
        request = urllib.request.Request(
            self.server.upstream + self.path, data=body, headers=headers, method=self.command
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, payload, kind = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as error:
            status, payload, kind = error.code, error.read(), error.headers
        if self.path.endswith("/confirm") and self.server.drop_confirm_answers:
            self.close_connection = True
            return  # the charge happened; the answer is lost
        self._answer(status, payload, kind.get("Content-Type", "application/json"))

    def _answer(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _forward

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def stripe_through_proxy(settings, **behaviour):
    """The service talks to localstripe through a ``StripeProxy`` with ``behaviour``."""
    proxy = StripeProxy(settings.STRIPE_API_BASE, **behaviour)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    direct = settings.STRIPE_API_BASE
    try:
        settings.STRIPE_API_BASE = f"http://127.0.0.1:{proxy.server_address[1]}"
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        settings.STRIPE_API_BASE = direct


def confirm_answer_lost(settings, payment) -> ChargeOutcome:
    """``charge_confirm`` with the confirmation's answer lost: Stripe charges, we never hear it."""
    with stripe_through_proxy(settings, drop_confirm_answers=True):
        return charge_confirm(payment.id)
