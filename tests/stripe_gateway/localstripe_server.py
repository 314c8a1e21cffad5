"""localstripe, as the test suite starts it: ``python -m tests.stripe_gateway.localstripe_server
--port N --from-scratch``.

localstripe 1.15 confirms a PaymentIntent without parameters, where Stripe's API takes
``off_session`` (a charge made without the customer: renewals) and ``return_url`` (where 3-D
Secure sends the customer back). The service sends them as Stripe requires, so this starts
localstripe with its confirmation taking (and ignoring) those two, and nothing else changed.
With ``off_session`` Stripe answers a card that needs authentication with an
``authentication_required`` card error; localstripe answers ``requires_action``: the service
handles both (``stripe_gateway.services.charges``).
"""

import sys

from localstripe import resources

_confirm = resources.PaymentIntent._api_confirm


def _api_confirm(id, off_session=None, return_url=None, **kwargs):
    return _confirm(id, **kwargs)


# The server module adds its routes from this list when it is imported: replaced first.
resources.extra_apis[:] = [
    (method, path, _api_confirm if handler == _confirm else handler)
    for method, path, handler in resources.extra_apis
]

from localstripe.server import start  # noqa: E402

if __name__ == "__main__":
    sys.exit(start())
