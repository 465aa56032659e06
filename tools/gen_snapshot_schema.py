"""Generate docs/snapshot.schema.json (JSON Schema, draft 2020-12) from gpuenv.facts.

Run after changing a snapshot dataclass: `python tools/gen_snapshot_schema.py`. A test checks
that the committed schema equals what this script generates.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuenv import facts  # noqa: E402

SCHEMA_PATH = ROOT / "docs" / "snapshot.schema.json"


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        options = [_type_schema(a, defs) for a in args if a is not type(None)]
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        return {"anyOf": [schema, {"type": "null"}]} if type(None) in args else schema
    if origin is tuple:
        return {"type": "array", "items": _type_schema(args[0], defs)}
    if origin in (dict, typing.Mapping, collections.abc.Mapping):
        return {"type": "object", "additionalProperties": _type_schema(args[1], defs)}
    if origin is facts.Observation:
        return _observation(args[0], defs)
    if dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}
            defs[name] = _dataclass(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    simple = {str: "string", int: "integer", bool: "boolean", float: "number"}
    if tp in simple:
        return {"type": simple[tp]}
    if tp is Any:
        return {}
    raise TypeError(f"no schema for {tp!r}")


def _observation(value_type: Any, defs: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["value", "source"],
        "properties": {
            "value": {"anyOf": [_type_schema(value_type, defs), {"type": "null"}]},
            "source": {"type": "string"},
            "raw": {"type": ["string", "null"]},
            "problem": {"type": ["string", "null"]},
        },
        "additionalProperties": False,
    }


def _dataclass(cls: Any, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props = {f.name: _type_schema(hints[f.name], defs) for f in dataclasses.fields(cls)}
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    doc = (cls.__doc__ or "").strip().splitlines()
    out: dict[str, Any] = {"type": "object"}
    if doc and not doc[0].startswith(cls.__name__ + "("):
        out["description"] = doc[0]
    out.update({"required": required, "properties": props, "additionalProperties": False})
    return out


def generate() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    root = _dataclass(facts.Snapshot, defs)
    root["properties"]["schema_version"] = {"const": facts.SNAPSHOT_SCHEMA_VERSION}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "gpuenv-snapshot-v1",
        "title": "gpuenv snapshot",
        "description": "Facts about one machine and one Python environment, with their sources.",
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def render() -> str:
    return json.dumps(generate(), indent=2) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
