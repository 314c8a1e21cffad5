import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hosting.settings")

_pages = get_wsgi_application()  # sets Django up

from hosting.api.stack import ApiWSGIHandler, Dispatcher  # noqa: E402

# /v1 through the API's lean middleware stack, every other path through the pages' (the
# reasons are in hosting/api/stack.py).
application = Dispatcher(pages=_pages, api=ApiWSGIHandler())
