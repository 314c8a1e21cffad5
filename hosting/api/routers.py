"""The API's router: no trailing slashes, and ids in paths shaped as ids (CONTRACT §2).

An id is ``<prefix>_<token>`` of up to 64 letters, digits and underscores; a path whose id has
any other character (``/v1/servers/a%00``, ``/v1/servers/a.b``) matches no route and gets the
JSON 404 of the catch-all, before any view or database sees it.
"""

from rest_framework.routers import SimpleRouter

from hosting.ids import ID_PATTERN


def id_segment(name: str) -> str:
    """A named path segment for an id in a nested prefix: ``webhooks/{webhook_id}/...``."""
    return rf"(?P<{name}>{ID_PATTERN})"


class ApiRouter(SimpleRouter):
    def __init__(self):
        super().__init__(trailing_slash=False)

    def get_lookup_regex(self, viewset, lookup_prefix=""):
        lookup_field = getattr(viewset, "lookup_field", "pk")
        name = getattr(viewset, "lookup_url_kwarg", None) or lookup_field
        return f"(?P<{lookup_prefix}{name}>{getattr(viewset, 'lookup_value_regex', ID_PATTERN)})"
