"""The shape of knowledge-base files: a tiny declarative schema, checked by the loader.

Every data file is TOML with `schema_version`, `subject`, a `[sources.<id>]` table (title, url,
retrieved) and one or more arrays of rows. Every row carries provenance: `source` (an id from
`sources`), `locator` (table/section/field in that source), `verified` (YYYY-MM-DD) and `status`
("official" | "observed" | "inferred"). Each subject's tables are declared in `schemas/<subject>.py`
as `TABLES: dict[str, TableSpec]`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KB_SCHEMA_VERSION = 1
STATUSES = ("official", "observed", "inferred")
PROVENANCE_FIELDS = ("source", "locator", "verified", "status")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_VERSION = re.compile(r"^\d+(\.\d+)*$")
_CC = re.compile(r"^\d+\.\d+[af]?$")
_SOURCE_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")

# Field kinds: "str", "int", "float", "bool", "version" (dotted digits), "cc" ("8.6", "9.0a"),
# "date", "list[str]", "list[version]", "list[cc]", "list[int]", "table" (inline mapping)
FIELD_KINDS = frozenset(
    {
        "str",
        "int",
        "float",
        "bool",
        "version",
        "cc",
        "date",
        "list[str]",
        "list[version]",
        "list[cc]",
        "list[int]",
        "table",
    }
)


@dataclass(frozen=True)
class FieldSpec:
    kind: str
    required: bool = True
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    fields: Mapping[str, FieldSpec]
    key: tuple[str, ...]  # fields that identify a row; no two rows may share them
    description: str = ""


def f(kind: str, required: bool = True, choices: tuple[str, ...] = ()) -> FieldSpec:
    assert kind in FIELD_KINDS, kind
    return FieldSpec(kind, required, choices)


def check_value(kind: str, value: Any) -> str | None:
    """None when `value` fits `kind`, else what is wrong."""
    if kind.startswith("list["):
        if not isinstance(value, list):
            return "expected a list"
        inner = kind[5:-1]
        for item in value:
            problem = check_value(inner, item)
            if problem:
                return f"item {item!r}: {problem}"
        return None
    checks: dict[str, tuple[type | tuple[type, ...], re.Pattern[str] | None]] = {
        "str": (str, None),
        "int": (int, None),
        "float": ((int, float), None),
        "bool": (bool, None),
        "version": (str, _VERSION),
        "cc": (str, _CC),
        "date": (str, _DATE),
        "table": (dict, None),
    }
    expected, pattern = checks[kind]
    if isinstance(value, bool) and kind in ("int", "float"):
        return f"expected {kind}, got bool"
    if not isinstance(value, expected):
        return f"expected {kind}, got {type(value).__name__}"
    if pattern is not None and not pattern.match(str(value)):
        return f"{value!r} is not a valid {kind}"
    return None


def check_row(
    spec: TableSpec, row: Mapping[str, Any], source_ids: frozenset[str], generated: bool
) -> list[str]:
    problems: list[str] = []
    for name in PROVENANCE_FIELDS:
        if name not in row:
            problems.append(f"missing provenance field {name!r}")
    if "source" in row and row["source"] not in source_ids:
        problems.append(f"source {row['source']!r} is not declared in [sources]")
    if "verified" in row and check_value("date", row["verified"]):
        problems.append(f"verified {row['verified']!r} is not YYYY-MM-DD")
    if "status" in row and row["status"] not in STATUSES:
        problems.append(f"status {row['status']!r} is not one of {', '.join(STATUSES)}")
    if "note" in row and not isinstance(row["note"], str):
        problems.append("note must be a string")
    for name, field_spec in spec.fields.items():
        if name not in row:
            if field_spec.required:
                problems.append(f"missing field {name!r}")
            continue
        problem = check_value(field_spec.kind, row[name])
        if problem:
            problems.append(f"{name}: {problem}")
        elif field_spec.choices and row[name] not in field_spec.choices:
            problems.append(f"{name}: {row[name]!r} not in {field_spec.choices}")
    known = set(spec.fields) | set(PROVENANCE_FIELDS) | {"note"}
    problems.extend(f"unknown field {name!r}" for name in row if name not in known)
    return problems


def check_source_id(source_id: str) -> str | None:
    return None if _SOURCE_ID.match(source_id) else f"bad source id {source_id!r}"
