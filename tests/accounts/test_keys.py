import zlib

import pytest
from django.test import override_settings

from accounts import keys
from hosting.ids import BASE62


def test_a_token_has_the_contract_shape():
    token, key_id = keys.make_token()
    assert token.startswith("hms_")
    assert len(token) == 4 + 12 + 32 + 6
    assert token[4:16] == key_id
    assert set(token[4:]) <= set(BASE62)


def test_the_checksum_is_base62_crc32_of_everything_before_it():
    token, _ = keys.make_token()
    body, checksum = token[:-6], token[-6:]
    number = 0
    for char in checksum:
        number = number * 62 + BASE62.index(char)
    assert number == zlib.crc32(body.encode())


def test_it_parses_its_own_tokens():
    token, key_id = keys.make_token()
    assert keys.parse_token(token) == keys.ParsedToken(token=token, key_id=key_id)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # checksum typo
        lambda t: t[:10] + ("x" if t[10] != "x" else "y") + t[11:],  # body typo
        lambda t: "hmx_" + t[4:],  # wrong prefix
        lambda t: t[:-1],  # too short
        lambda t: t + "0",  # too long
        lambda t: t[:20] + "-" + t[21:],  # not base62
        lambda t: "",
    ],
)
def test_it_rejects_mistyped_or_invented_tokens_without_a_lookup(mangle):
    token, _ = keys.make_token()
    assert keys.parse_token(mangle(token)) is None


def test_the_digest_is_an_hmac_under_the_named_pepper(settings):
    settings.API_KEY_PEPPERS = {"new": "n" * 32, "old": "o" * 32}
    token, _ = keys.make_token()
    assert keys.current_pepper_id() == "new"
    digest_old = keys.digest_token(token, "old")
    assert digest_old != keys.digest_token(token, "new")
    assert keys.token_matches(token, digest=digest_old, pepper_id="old")
    assert not keys.token_matches(token, digest=digest_old, pepper_id="new")


def test_a_digest_made_with_a_removed_pepper_no_longer_matches():
    token, _ = keys.make_token()
    with override_settings(API_KEY_PEPPERS={"gone": "g" * 32}):
        digest = keys.digest_token(token, "gone")
    with override_settings(API_KEY_PEPPERS={"other": "x" * 32}):
        assert keys.digest_token(token, "gone") is None
        assert not keys.token_matches(token, digest=digest, pepper_id="gone")


def test_a_token_without_a_stored_digest_never_matches():
    token, _ = keys.make_token()
    assert not keys.token_matches(token, digest=None, pepper_id=None)
