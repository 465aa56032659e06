"""`gpuenv kb audit --index`: does the knowledge base know every release the package index has?

For each tracked package, every final release on the index (in the range `kb refresh` watches) is
compared with the KB: a release without a wheels.toml row, or (torch, tensorflow, jax) without a
curated release line, is missing. A missing release newer than the KB's newest that has been on
the index for more than `STALE_DAYS` days (upload time from the index's PEP 700 JSON page) makes
the audit fail; younger ones, and older releases the KB skipped, are only reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from gpuenv.index.http import unreachable
from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools.refresh import PACKAGES, group_releases
from gpuenv.versions import sortable

STALE_DAYS = 30
TRACKED = tuple(spec.name for spec in PACKAGES)


@dataclass(frozen=True)
class Missing:
    package: str
    version: str
    lacks: tuple[str, ...]  # "wheels row", "curated release line"
    uploaded: str | None  # ISO 8601 from the index, None when it does not say
    age_days: int | None
    stale: bool  # newer than the KB's newest and on the index for more than STALE_DAYS

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "version": self.version,
            "lacks": list(self.lacks),
            "uploaded": self.uploaded,
            "age_days": self.age_days,
            "stale": self.stale,
        }


@dataclass(frozen=True)
class IndexAudit:
    checked_at: str
    packages: Mapping[str, Mapping[str, Any]]  # name -> index_newest, kb_newest, releases
    missing: tuple[Missing, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not any(m.stale for m in self.missing)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked_at": self.checked_at,
            "stale_after_days": STALE_DAYS,
            "packages": {k: dict(v) for k, v in self.packages.items()},
            "missing": [m.to_dict() for m in self.missing],
        }


def render_index_audit(audit: IndexAudit) -> str:
    stale = [m for m in audit.missing if m.stale]
    lines = [
        f"kb audit --index: {'ok' if audit.ok else 'FAILED'}, {len(audit.missing)} release(s) "
        f"on the index missing from the KB, {len(stale)} of them stale "
        f"(newer than the KB's newest and on the index for more than {STALE_DAYS} days)"
    ]
    for name, facts in audit.packages.items():
        lines.append(
            f"  {name}: index newest {facts['index_newest'] or '-'}, "
            f"KB newest {facts['kb_newest'] or '-'} ({facts['releases']} releases checked)"
        )
    for m in audit.missing:
        age = f"{m.age_days} days on the index" if m.age_days is not None else "upload time unknown"
        mark = "error" if m.stale else "note"
        lines.append(f"{mark}: {m.package} {m.version} lacks a {' and a '.join(m.lacks)} ({age})")
    return "\n".join(lines) + "\n"


def audit_index(
    kb: KnowledgeBase,
    index_url: str | None = None,
    *,
    fetch: ic.Fetcher | None = None,
    now: datetime | None = None,
    packages: Iterable[str] = TRACKED,
) -> IndexAudit:
    """Compare the KB with the index; a page that cannot be read is a GpuenvError."""
    moment = now or datetime.now(timezone.utc)
    fetcher = fetch or ic.urllib_fetch
    try:
        base = (index_url or ic.pip_index_url()).rstrip("/")
        pages = {name: ic.project_files(base, name, fetcher) or [] for name in packages}
    except ic.IndexUnavailable as exc:
        raise unreachable(
            "kb-audit-index-failed", "could not read the package index", exc
        ) from None
    summary: dict[str, dict[str, Any]] = {}
    missing: list[Missing] = []
    for name, files in pages.items():
        facts, lacking = _compare(kb, name, files, moment)
        summary[name] = facts
        missing += lacking
    return IndexAudit(moment.strftime("%Y-%m-%dT%H:%M:%SZ"), summary, tuple(missing))


def _compare(
    kb: KnowledgeBase, name: str, files: Sequence[ic.IndexFile], now: datetime
) -> tuple[dict[str, Any], list[Missing]]:
    spec = next(s for s in PACKAGES if s.name == name)
    releases, _ = group_releases(spec, files)
    live = [r for r in releases if not all(w.file.yanked for w in r.wheels)]
    rows = {
        sortable(r["version"]) for r in kb.rows("wheels", "release") if r.get("package") == name
    }
    curated = _CURATED.get(name)
    kb_newest = max(rows, default=None)
    found: list[Missing] = []
    for release in live:
        lacks = [] if release.version in rows else ["wheels row"]
        if curated is not None and not curated(kb, release.version):
            lacks.append("curated release line")
        if not lacks:
            continue
        uploaded = _uploaded(w.file for w in release.wheels)
        age = (now - uploaded).days if uploaded else None
        new_row = "wheels row" in lacks and (kb_newest is None or release.version > kb_newest)
        new_line = "curated release line" in lacks and _newer_than_lines(kb, name, release.version)
        stale = (new_row or new_line) and age is not None and age > STALE_DAYS
        when = uploaded.strftime("%Y-%m-%dT%H:%M:%SZ") if uploaded else None
        found.append(Missing(name, str(release.version), tuple(lacks), when, age, stale))
    facts = {
        "index_newest": str(live[-1].version) if live else None,
        "kb_newest": str(kb_newest) if kb_newest else None,
        "releases": len(live),
        "watched": spec.versions or "all",
    }
    return facts, found


def _uploaded(files: Iterable[ic.IndexFile]) -> datetime | None:
    times = [f.upload_time for f in files if f.upload_time]
    if not times:
        return None
    try:
        return datetime.fromisoformat(min(times).replace("Z", "+00:00"))
    except ValueError:
        return None


# -- curated release lines ----------------------------------------------------------------------


def _line(row: Row, field: str) -> tuple[int, ...]:
    return sortable(row.get(field)).release


def _torch_line(kb: KnowledgeBase, version: Version) -> bool:
    return any(_line(r, "torch") == version.release[:2] for r in kb.rows("torch", "release"))


def _tensorflow_line(kb: KnowledgeBase, version: Version) -> bool:
    rows = kb.rows("tensorflow", "release")
    return any(_line(r, "tensorflow") == version.release[:2] for r in rows)


def _jax_line(kb: KnowledgeBase, version: Version) -> bool:
    for row in kb.rows("jax", "release"):
        high = f",<={row['jax_max']}" if row.get("jax_max") else ""
        if version in SpecifierSet(f">={row['jax_min']}{high}"):
            return True
    return False


_CURATED: Mapping[str, Callable[[KnowledgeBase, Version], bool]] = {
    "torch": _torch_line,
    "tensorflow": _tensorflow_line,
    "jax": _jax_line,
}


def _newer_than_lines(kb: KnowledgeBase, name: str, version: Version) -> bool:
    """Newer than every curated line of the package (an older gap is a skipped release)."""
    if name == "jax":
        ends = [sortable(r.get("jax_max") or r.get("jax_min")) for r in kb.rows("jax", "release")]
        return all(version > end for end in ends)
    lines = [_line(r, name) for r in kb.rows(name, "release")]
    return all(version.release[:2] > line for line in lines)
