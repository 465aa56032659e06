"""Privacy: remove GPU UUIDs, serial numbers, host names and user names from a snapshot.

Redaction rewrites every string of the snapshot's JSON form, so raw command outputs kept as
evidence are cleaned too, then reads it back. Values that are not personal (versions, GPU names,
paths below the home directory) are kept, so a redacted snapshot diagnoses the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from gpuenv.facts import Snapshot, to_dict
from gpuenv.snapshot_io import snapshot_from_dict

_UUID = re.compile(
    r"\b(GPU|MIG|GI|CI)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_MIG_OLD = re.compile(r"\bMIG-GPU-[0-9a-fA-F-]{36}/\d+/\d+\b")
_SERIAL = re.compile(r"(?im)^(\s*(?:Serial Number|Board Part Number)\s*:\s*)(\S.*)$")
_HOME = re.compile(r"(/home/|/Users/|[A-Za-z]:\\Users\\)([^/\\\s\"']+)")
UUID_MARK = "<redacted-uuid>"


def redact_text(text: str, names: Iterable[str] = ()) -> str:
    """Remove identifiers from one string; `names` are host and user names to hide as well."""
    text = _MIG_OLD.sub(f"MIG-{UUID_MARK}", text)
    text = _UUID.sub(lambda m: f"{m.group(1)}-{UUID_MARK}", text)
    text = _SERIAL.sub(lambda m: m.group(1) + "<redacted>", text)
    text = _HOME.sub(lambda m: m.group(1) + "<user>", text)
    for name in sorted({n for n in names if len(n) >= 3}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "<redacted>", text)
    return text


def _walk(value: Any, names: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact_text(value, names)
    if isinstance(value, dict):
        return {k: _walk(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, names) for v in value]
    return value


def redact_snapshot(snapshot: Snapshot, names: Iterable[str] = ()) -> Snapshot:
    """The same snapshot with identifiers removed and `redacted=True`."""
    cleaned = _walk(to_dict(snapshot), tuple(names))
    result = snapshot_from_dict(cleaned, "redacted")
    return replace(result, origin=snapshot.origin, redacted=True)
