"""The server spec's JSON Schema (agent/spec.schema.json), read as the agent reads a spec: with
the formats it checks (a ready pattern is a Python regex, an allocation's ip an address)."""

import functools
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "agent" / "spec.schema.json"


@functools.cache
def spec_validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(spec: Any) -> list[str]:
    """Each way ``spec`` breaks the schema, as ``path: message``; empty when it is valid."""
    return [
        f"{'.'.join(map(str, error.absolute_path)) or '(spec)'}: {error.message}"
        for error in spec_validator().iter_errors(spec)
    ]
