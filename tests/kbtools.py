"""A test copy of the knowledge base with rows added: the packaged tables plus the rows a test
declares (wheel-read GPU code, wheel pins), each with the provenance every row carries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuenv.kb import KbFile, KnowledgeBase, default_kb

TEST_SOURCE = "test-rows"
PROVENANCE = {
    "source": TEST_SOURCE,
    "locator": "declared by the test",
    "verified": "2026-11-23",
    "status": "observed",
}


def kb_with(rows: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]]) -> KnowledgeBase:
    """The packaged KB with `rows` added per (subject, table); a row whose key fields match a
    packaged row replaces it (`package`/`version` for wheels, the table's key otherwise)."""
    base = default_kb()
    files = dict(base.files)
    for (subject, table), extra in rows.items():
        kb_file = files[subject]
        added = tuple({**PROVENANCE, **row} for row in extra)
        kept = tuple(r for r in kb_file.tables.get(table, ()) if not _replaced(r, added))
        sources = {**kb_file.sources, TEST_SOURCE: {"title": "test", "retrieved": "2026-11-23"}}
        files[subject] = replace(
            kb_file, tables={**kb_file.tables, table: kept + added}, sources=sources
        )
    return KnowledgeBase(files=files)


def _replaced(row: Mapping[str, Any], added: Sequence[Mapping[str, Any]]) -> bool:
    key = ("package", "version") if "package" in row and "version" in row else ()
    return bool(key) and any(all(row.get(k) == a.get(k) for k in key) for a in added)


def build_row(
    package: str,
    version: str,
    cuda: str,
    sass: Sequence[str],
    ptx: Sequence[str],
    variant: str = "index",
    platform: str = "linux-x86_64",
) -> dict[str, Any]:
    """A binaries.toml row as `gpuenv kb refresh --archs` writes it."""
    return {
        "package": package,
        "version": version,
        "variant": variant,
        "platform": platform,
        "cuda": cuda,
        "sass": list(sass),
        "ptx": list(ptx),
        "wheel": f"{package.replace('-', '_')}-{version}-cp312-cp312-manylinux_2_27_x86_64.whl",
    }


__all__ = ["KbFile", "build_row", "kb_with"]
