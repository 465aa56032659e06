"""A small TOML writer (no dependency: tomllib only reads), for the knowledge-base files and
gpuenv's lock files. Pure: it builds text; writing goes through gpuenv.edges.output."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_ESCAPES["\r"] = "\\r"


def toml_value(value: Any) -> str:
    """A TOML literal for a str, bool, int, float or list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        chars = (
            _ESCAPES.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
            for c in value
        )
        return '"' + "".join(chars) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_value(key)


def toml_pair(key: str, value: Any) -> str:
    line = f"{toml_key(key)} = {toml_value(value)}"
    if len(line) <= 100 or not isinstance(value, (list, tuple)):
        return line
    items = "".join(f"    {toml_value(item)},\n" for item in value)
    return f"{toml_key(key)} = [\n{items}]"


def toml_document(
    header: str,
    meta: Sequence[tuple[str, Any]],
    sources: Mapping[str, Mapping[str, Any]],
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
) -> str:
    """A KB file: comment header, top-level scalars, [sources.<id>] tables, arrays of tables (a
    row's mapping values become its sub-tables, `[table.key]`, after its other values)."""
    parts = [f"# {line}".rstrip() for line in header.splitlines()]
    parts += [toml_pair(key, value) for key, value in meta]
    for source_id, source in sources.items():
        parts += ["", f"[sources.{toml_key(source_id)}]"]
        parts += [toml_pair(k, v) for k, v in source.items()]
    for table, rows in tables.items():
        for row in rows:
            parts += ["", f"[[{toml_key(table)}]]"]
            parts += [
                toml_pair(k, v)
                for k, v in row.items()
                if v is not None and not isinstance(v, Mapping)
            ]
            for key, sub in ((k, v) for k, v in row.items() if isinstance(v, Mapping)):
                parts += [f"[{toml_key(table)}.{toml_key(key)}]"]
                parts += [toml_pair(str(k), v) for k, v in sub.items()]
    return "\n".join(parts) + "\n"
