"""The knowledge base in memory: its files and their rows, with lookups. No loading here (see
loader.py for the TOML sources, compiled.py for the compiled copy)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

DATA_DIR = Path(__file__).with_name("data")
Row = Mapping[str, Any]
T = TypeVar("T")


@dataclass(frozen=True)
class KbFile:
    subject: str
    path: Path
    meta: Mapping[str, Any]  # top-level scalars: schema_version, description, generated_by ...
    sources: Mapping[str, Mapping[str, Any]]
    tables: Mapping[str, tuple[Row, ...]]

    @property
    def generated(self) -> bool:
        return "generated_by" in self.meta


@dataclass(frozen=True)
class KnowledgeBase:
    files: Mapping[str, KbFile]
    problems: tuple[str, ...] = ()
    _index: dict[tuple[str, str], tuple[Row, ...]] = field(default_factory=dict, repr=False)
    _derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rows(self, subject: str, table: str) -> tuple[Row, ...]:
        """Rows of one table; an absent subject or table gives () (unknown, not an error)."""
        key = (subject, table)
        if key not in self._index:
            kb_file = self.files.get(subject)
            self._index[key] = kb_file.tables.get(table, ()) if kb_file else ()
        return self._index[key]

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A value derived from this knowledge base (an index, a sorted list), computed once."""
        if key not in self._derived:
            self._derived[key] = compute()
        value: T = self._derived[key]
        return value

    def source(self, subject: str, source_id: str) -> Mapping[str, Any]:
        kb_file = self.files.get(subject)
        return kb_file.sources.get(source_id, {}) if kb_file else {}

    def cite(self, subject: str, row: Row) -> str:
        """A short citation for a row: "title, locator (verified date)"."""
        src = self.source(subject, str(row.get("source", "")))
        title = src.get("title", row.get("source", "?"))
        return f"{title}, {row.get('locator', '?')} (verified {row.get('verified', '?')})"
