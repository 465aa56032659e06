"""Releases of a package as the generated wheels table lists them (data/wheels.toml): newest first,
yanked releases and pre-releases left out. A thin reader; the table is the knowledge base's."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from gpuenv.kb import KnowledgeBase, Row
from gpuenv.versions import sortable

SUBJECT = "wheels"


def releases(kb: KnowledgeBase, package: str) -> tuple[Row, ...]:
    """Rows of `package`, newest version first."""
    return kb.memo(f"wheels.releases:{package}", lambda: _releases(kb, package))


def _releases(kb: KnowledgeBase, package: str) -> tuple[Row, ...]:
    rows = [
        row
        for row in kb.rows(SUBJECT, "release")
        if row["package"] == package and not row.get("yanked") and _final(str(row["version"]))
    ]
    return tuple(sorted(rows, key=lambda row: sortable(str(row["version"])), reverse=True))


def release(kb: KnowledgeBase, package: str, version: str) -> Row | None:
    wanted = sortable(version)
    return next((r for r in releases(kb, package) if sortable(str(r["version"])) == wanted), None)


def newest_first(version: str) -> tuple[int, ...]:
    """A sort key that puts newer releases first."""
    return tuple(-part for part in sortable(version).release)


def _final(text: str) -> bool:
    try:
        return not Version(text).is_prerelease
    except InvalidVersion:
        return False


def tags(row: Row | None) -> tuple[str, ...] | None:
    return tuple(str(t) for t in row["python_tags"]) if row and row.get("python_tags") else None


def platforms(row: Row | None) -> tuple[str, ...] | None:
    return tuple(str(p) for p in row["platforms"]) if row and row.get("platforms") else None


def pins(row: Row | None) -> tuple[str, ...]:
    return tuple(str(p) for p in row.get("pins", ())) if row else ()
