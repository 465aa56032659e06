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
# CUDA_VISIBLE_DEVICES accepts any unique prefix of a UUID ("GPU-5b2b9d3e")
_UUID_PREFIX = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{6,}(?:-[0-9a-fA-F]{1,12}){0,4}\b")
_SERIAL = re.compile(r"(?im)^(\s*(?:Serial Number|Board Part Number)\s*:\s*)(\S.*)$")
_HOME = re.compile(r"(/home/|/Users/|[A-Za-z]:\\(?i:users)\\)([^/\\\s\"']+)")
UUID_MARK = "<redacted-uuid>"
# Words gpuenv itself writes as facts (os, container engine, env kind, installer, library origin,
# path parts). A host called "linux" or "cuda" is not identified by them, and hiding them would
# change the facts: a redacted snapshot must diagnose like the original.
_VOCABULARY = frozenset(
    (
        *("linux", "windows", "darwin", "x86_64", "aarch64", "arm64", "amd64"),
        *("docker", "podman", "kubernetes", "containerd", "lxc", "wsl"),
        *("conda", "venv", "system", "pip", "uv", "pixi", "poetry", "ldconfig"),
        *("cuda", "nvidia", "nvcc", "python", "python3", "localhost"),
        *("home", "usr", "local", "opt", "lib", "bin"),
    )
)


def name_patterns(names: Iterable[str]) -> tuple[re.Pattern[str], ...]:
    """One pattern per name to hide, longest first. A name of 3+ characters is hidden wherever it
    stands alone (not inside a version or a longer word); a 2-character one (a host called "vm")
    only where it is a path component, after '@' or before ':', where it cannot be a word."""
    unique = {n for n in names if len(n) >= 2 and n.lower() not in _VOCABULARY}
    patterns = []
    for name in sorted(unique, key=len, reverse=True):
        word = re.escape(name)
        if len(name) >= 3:
            patterns.append(re.compile(rf"(?<![\w.-]){word}(?![\w-])"))
        else:
            patterns.append(re.compile(rf"(?:(?<=[/\\@])|^){word}(?=[/\\:]|$)"))
    return tuple(patterns)


def redact_text(text: str, names: Iterable[str] = ()) -> str:
    """Remove identifiers from one string; `names` are host and user names to hide as well."""
    return _redact(text, name_patterns(names))


def _redact(text: str, patterns: tuple[re.Pattern[str], ...]) -> str:
    text = _MIG_OLD.sub(f"MIG-{UUID_MARK}", text)
    text = _UUID.sub(lambda m: f"{m.group(1)}-{UUID_MARK}", text)
    text = _UUID_PREFIX.sub(lambda m: f"{m.group(1)}-{UUID_MARK}", text)
    text = _SERIAL.sub(lambda m: m.group(1) + "<redacted>", text)
    text = _HOME.sub(lambda m: m.group(1) + "<user>", text)
    for pattern in patterns:
        text = pattern.sub("<redacted>", text)
    return text


def _walk(value: Any, patterns: tuple[re.Pattern[str], ...]) -> Any:
    if isinstance(value, str):
        return _redact(value, patterns)
    if isinstance(value, dict):
        return {k: _walk(v, patterns) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, patterns) for v in value]
    return value


def redact_snapshot(snapshot: Snapshot, names: Iterable[str] = ()) -> Snapshot:
    """The same snapshot with identifiers removed and `redacted=True`."""
    cleaned = _walk(to_dict(snapshot), name_patterns(names))
    result = snapshot_from_dict(cleaned, "redacted")
    return replace(result, origin=snapshot.origin, redacted=True)
