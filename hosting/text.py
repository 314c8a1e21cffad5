"""Which strings the service accepts: what both of its databases can store.

PostgreSQL refuses a NUL character in text and in ``jsonb``, and UTF-8 (every database, every
JSON encoder) cannot hold an unpaired surrogate (``"\\ud800"`` in JSON). SQLite stores both, and
then every read of the row fails. Every string that comes in (request bodies, query parameters,
path ids) is checked here once, and refused with a message that names the problem without
repeating the offending characters.
"""

import re

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def text_problem(value: str) -> tuple[str, str] | None:
    """``(code, sentence)`` when a database could not store ``value``; None when it can."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "null_characters", "must not contain NUL characters (\\u0000)."
    return "invalid_unicode", "must be valid Unicode text (it holds an unpaired surrogate)."


def storable(value: str) -> str:
    """``value`` with every unstorable character replaced by U+FFFD (repairing old rows)."""
    return _UNSTORABLE.sub(REPLACEMENT, value)


def storable_data(value):
    """A JSON value with ``storable`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(key): storable_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [storable_data(item) for item in value]
    return value


def full_stop(value: str) -> str:
    """``value`` ending a sentence: a full stop added unless it already ends with one.

    Names end sentences ("The game servers of Demo Hosting Co."), and a name may end in ".".
    """
    value = str(value)
    return value if value.endswith((".", "!", "?", "…")) else f"{value}."
