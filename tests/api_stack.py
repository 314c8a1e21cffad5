"""The test clients send ``/v1`` through the API's lean middleware stack, as production does.

``hosting.wsgi`` dispatches ``/v1`` to a handler whose chain is ``settings.API_MIDDLEWARE``
(hosting/api/stack.py). Django's and DRF's test clients build one handler of the full chain;
tests/conftest.py installs this in their place for the whole run, so every API test answers
through the same stack as a real server, and every page test through the pages' one.
"""

from django.test import client as django_client
from rest_framework import test as drf_test

from hosting.api.stack import ApiMiddlewareMixin, is_api_path


def _dispatching(handler_class):
    api_class = type(f"Api{handler_class.__name__}", (ApiMiddlewareMixin, handler_class), {})

    class Dispatching:
        """A handler of the full chain for pages and one of the API's chain for /v1."""

        def __init__(self, *args, **kwargs):
            self.__dict__["pages"] = handler_class(*args, **kwargs)
            self.__dict__["api"] = api_class(*args, **kwargs)

        def __call__(self, environ):
            handler = self.api if is_api_path(environ.get("PATH_INFO", "")) else self.pages
            return handler(environ)

        def __getattr__(self, name):
            return getattr(self.pages, name)

        def __setattr__(self, name, value):
            # DRF's force_authenticate sets its user and token on the handler: on both.
            setattr(self.pages, name, value)
            setattr(self.api, name, value)

    Dispatching.__name__ = f"Dispatching{handler_class.__name__}"
    return Dispatching


def install() -> None:
    django_client.ClientHandler = _dispatching(django_client.ClientHandler)
    drf_test.ForceAuthClientHandler = _dispatching(drf_test.ForceAuthClientHandler)
