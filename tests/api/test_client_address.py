"""The client address (``hosting.http.client_ip``) follows DRF's rule for trusted proxies
exactly, for every number of proxies and every shape of ``X-Forwarded-For``."""

import pytest
from django.test import RequestFactory
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from hosting.http import client_ip

FORWARDED = [
    None,
    "",
    "203.0.113.7",
    "203.0.113.7, 198.51.100.2",
    " 203.0.113.7 ,198.51.100.2 , 192.0.2.1 ",
    "2001:db8::1, 198.51.100.2",
    ",,",
]


@pytest.mark.parametrize("proxies", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("forwarded", FORWARDED)
def test_the_client_address_is_drfs_for_every_proxy_count(proxies, forwarded, monkeypatch):
    monkeypatch.setattr(api_settings, "NUM_PROXIES", proxies)
    headers = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    request = RequestFactory().get("/v1/servers", REMOTE_ADDR="192.0.2.50", **headers)
    assert client_ip(request) == BaseThrottle().get_ident(request)
    if proxies == 0 or forwarded is None:
        assert client_ip(request) == "192.0.2.50"
