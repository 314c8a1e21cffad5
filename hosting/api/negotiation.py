"""Content negotiation for an API that only speaks JSON."""

from rest_framework.negotiation import DefaultContentNegotiation


class JsonOnlyNegotiation(DefaultContentNegotiation):
    """The API speaks JSON whatever ``Accept`` says, rather than answering 406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type
