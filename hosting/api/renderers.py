"""Wrap every successful API answer in ``{"success": true, "data": ...}`` (CONTRACT §3)."""

from rest_framework.renderers import JSONRenderer


class EnvelopeJSONRenderer(JSONRenderer):
    # Error bodies are built whole by hosting.api.exceptions; only successes are wrapped here.
    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None and response.status_code < 400:
            data = {"success": True, "data": data}
        return super().render(data, accepted_media_type, renderer_context)
