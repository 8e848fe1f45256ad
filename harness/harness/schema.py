"""The event shapes, from the JSON Schema generated out of `libs/src/harness/events.ts`.

`events.schema.json` (next to this file) is written by `npm run schema:harness` and checked in; a
unit test fails when it is stale. The failure codes come from it, and `validate` checks an event
against it, so the Python side cannot drift from the zod definitions. `validate` covers exactly the
JSON Schema keywords the generator emits (listed in `_KEYWORDS`); an unknown keyword is an error,
never silently ignored. Standard library only.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, List

SCHEMA_PATH = Path(__file__).with_name("events.schema.json")
SCHEMA: dict = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))

FAILURE_CODES = tuple(SCHEMA["$defs"]["FailureCode"]["enum"])

_KEYWORDS = {
    "$schema", "$comment", "$defs", "$ref", "oneOf", "anyOf", "type", "const", "enum", "properties",
    "required", "additionalProperties", "propertyNames", "items", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "pattern", "minItems",
}


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (
            isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown JSON Schema type {name!r}")


def _errors(value: Any, schema: dict, where: str) -> List[str]:
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"events.schema.json uses keywords this validator does not know: {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"unsupported $ref {ref!r}")
        return _errors(value, SCHEMA["$defs"][ref[len("#/$defs/"):]], where)
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not _errors(value, s, where)]
        if len(matching) == 1:
            return []
        if not matching and isinstance(value, dict):
            # Name the branch of its discriminator (`type`) so the message says what is wrong.
            same = [s for s in schema["oneOf"] if s.get("properties", {}).get("type", {}).get("const") == value.get("type")]
            if len(same) == 1:
                return _errors(value, same[0], where)
        return [f"{where}: matches {len(matching)} of the {len(schema['oneOf'])} shapes, not exactly one"]
    if "anyOf" in schema:
        found = [_errors(value, s, where) for s in schema["anyOf"]]
        if any(not e for e in found):
            return []
        # A nullable value that is not null: say what is wrong with it as the non-null shape.
        return [e for s, errs in zip(schema["anyOf"], found) if s.get("type") != "null" for e in errs]
    out: List[str] = []
    types = schema.get("type")
    if types is not None and not any(_is_type(value, t) for t in (types if isinstance(types, list) else [types])):
        return [f"{where}: expected {schema['type']}, got {value!r}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: expected {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        schema = {k: v for k, v in schema.items() if "imum" not in k}
    if "minimum" in schema and value < schema["minimum"]:
        out.append(f"{where}: {value!r} is below {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        out.append(f"{where}: {value!r} is above {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        out.append(f"{where}: {value!r} is not above {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        out.append(f"{where}: {value!r} is not below {schema['exclusiveMaximum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        out.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if "minItems" in schema and isinstance(value, list) and len(value) < schema["minItems"]:
        out.append(f"{where}: {len(value)} item(s), at least {schema['minItems']} needed")
    if "items" in schema:
        for i, item in enumerate(value):
            out += _errors(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append(f"{where}: missing {key!r}")
        for key, item in value.items():
            if "propertyNames" in schema:
                out += _errors(key, schema["propertyNames"], f"{where} key {key!r}")
            if key in props:
                out += _errors(item, props[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{where}: unexpected key {key!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                out += _errors(item, schema["additionalProperties"], f"{where}.{key}")
    return out


def validate(event: Any) -> List[str]:
    """What is wrong with one event line (an empty list: it is a valid HarnessEvent or child event)."""
    return _errors(event, SCHEMA, "event")
