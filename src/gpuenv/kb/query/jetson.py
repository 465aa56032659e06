"""Jetson lookups over jetson.toml: L4T release -> JetPack, JetPack -> its stack and wheels.

L4T versions are read as Jetson Linux prints them: "35.3.1", "R35.3.1", "r36.4", or the first
line of /etc/nv_tegra_release ("# R35 (release), REVISION: 3.1, GCID: ..."). Versions compare
part by part with missing parts as zero, so "35.1" and "35.1.0" are one release. An L4T release
the table does not list gives None: no nearest release is guessed.
"""

from __future__ import annotations

import re

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.versions import dotted

SUBJECT = "jetson"
MAX_TEXT = 300

_NV_TEGRA = re.compile(r"R(\d+)\s*\(release\),\s*REVISION:\s*(\d+(?:\.\d+)*)", re.IGNORECASE)
_PLAIN = re.compile(r"^\s*[Rr]?(\d+(?:\.\d+)*)\s*$")


def parse_l4t(text: str) -> tuple[int, ...] | None:
    """'R35.3.1' / '35.3.1' / nv_tegra_release text -> (35, 3, 1); anything else -> None."""
    if not text or len(text) > MAX_TEXT:
        return None
    tegra = _NV_TEGRA.search(text)
    if tegra:
        return _trim((int(tegra.group(1)), *_parts(tegra.group(2))))
    plain = _PLAIN.match(text)
    return _trim(_parts(plain.group(1))) if plain else None


def jetpack_for_l4t(kb: KnowledgeBase, l4t: str) -> Row | None:
    """The JetPack row whose L4T release (or one of its l4t_also revisions) is `l4t`."""
    wanted = parse_l4t(l4t)
    if wanted is None:
        return None
    for row in kb.rows(SUBJECT, "jetpack"):
        listed = [row["l4t"], *row.get("l4t_also", [])]
        if any(_trim(_parts(text)) == wanted for text in listed):
            return row
    return None


def jetpack_row(kb: KnowledgeBase, jetpack: str) -> Row | None:
    """The row of a JetPack release ('6.1', '5.1.2')."""
    wanted = _version(jetpack)
    if wanted is None:
        return None
    for row in kb.rows(SUBJECT, "jetpack"):
        if _version(row["jetpack"]) == wanted:
            return row
    return None


def torch_wheel_rows(kb: KnowledgeBase, jetpack: str) -> tuple[Row, ...]:
    """Where NVIDIA publishes PyTorch wheels usable on this JetPack release."""
    wanted = _version(jetpack)
    if wanted is None:
        return ()
    found = []
    for row in kb.rows(SUBJECT, "torch_wheels"):
        low = _version(row["jetpack_min"])
        high = _version(row.get("jetpack_max") or row["jetpack_min"])
        if low is not None and high is not None and low <= wanted <= high:
            found.append(row)
    return tuple(found)


def _version(text: str) -> tuple[int, ...] | None:
    stripped = text.strip().lower().removeprefix("jetpack").strip() if text else ""
    parts = dotted(stripped)
    return _trim(parts) if parts else None


def _parts(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part)


def _trim(parts: tuple[int, ...]) -> tuple[int, ...]:
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts
