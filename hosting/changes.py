"""Typed changes: what one edit of an object sets, as a frozen dataclass.

A service that edits an object takes one argument of a ``Changes`` subclass instead of
``**changes: Any``. Each field is typed as its value is, and defaults to ``UNSET``: a field left
``UNSET`` is not changed, so ``None`` stays a value an edit can set. The serializer, the form and
the admin each build the dataclass from what they have already checked (types, lengths, choices);
the service keeps the business rules (quotas, plans, states) and reads ``given()``.

    @dataclass(frozen=True, slots=True, kw_only=True)
    class NodeChanges(Changes):
        name: str | Unset = UNSET
        maintenance: bool | Unset = UNSET

    node_update(node=node, changes=NodeChanges(name="fra-2"), actor=actor)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, Self, final


@final
class Unset:
    """The type of ``UNSET``: a field this edit leaves as it is."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Final = Unset()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Changes:
    """Base of every typed change set; subclasses add fields defaulting to ``UNSET``."""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Self:
        """The change set of a mapping already checked by its reader (a serializer's
        ``validated_data``, a form's ``cleaned_data``); a key the class lacks is a programming
        error (``TypeError``), never silently dropped."""
        return cls(**data)

    def given(self) -> dict[str, Any]:
        """The fields this edit sets, by name, in declaration order."""
        return {
            field.name: value
            for field in dataclasses.fields(self)
            if (value := getattr(self, field.name)) is not UNSET
        }

    def __contains__(self, name: str) -> bool:
        return getattr(self, name, UNSET) is not UNSET

    def __bool__(self) -> bool:
        return bool(self.given())
