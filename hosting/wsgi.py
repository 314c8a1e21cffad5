import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hosting.settings")

_pages = get_wsgi_application()  # sets Django up

from django.urls import URLResolver, get_resolver  # noqa: E402

from hosting.api.stack import ApiWSGIHandler, Dispatcher  # noqa: E402


def _import_routes(resolver: URLResolver) -> None:
    for pattern in resolver.url_patterns:  # an included module is imported when first asked
        if isinstance(pattern, URLResolver):
            _import_routes(pattern)


# Every URL and view module is imported now, not by the first request: gunicorn loads this
# module once and forks its workers from it (preload_app), so no worker's first request waits
# for those imports (its first /v1/servers: 454 ms before, 12 ms after, on the bench machine)
# and the workers share their memory.
_import_routes(get_resolver())

# /v1 through the API's lean middleware stack, every other path through the pages' (the
# reasons are in hosting/api/stack.py).
application = Dispatcher(pages=_pages, api=ApiWSGIHandler())
