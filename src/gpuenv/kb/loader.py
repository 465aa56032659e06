"""Load and validate every knowledge-base data file at once, reporting all problems together."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpuenv.errors import GpuenvError
from gpuenv.kb.compiled import load_compiled
from gpuenv.kb.model import DATA_DIR, KbFile, KnowledgeBase, Row
from gpuenv.kb.schema import KB_SCHEMA_VERSION, TableSpec, check_row, check_source_id

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

__all__ = [
    "DATA_DIR",
    "KbFile",
    "KnowledgeBase",
    "Row",
    "default_kb",
    "load_kb",
    "parse_kb_file",
    "table_specs",
]


def table_specs(subject: str) -> Mapping[str, TableSpec] | None:
    try:
        module = importlib.import_module(f"gpuenv.kb.schemas.{subject}")
    except ModuleNotFoundError:
        return None
    specs: Mapping[str, TableSpec] = module.TABLES
    return specs


def parse_kb_file(path: Path) -> tuple[KbFile | None, list[str]]:
    """Parse and validate one file; problems are prefixed with the file and row."""
    name = path.name
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return None, [f"{name}: cannot read: {exc}"]
    problems: list[str] = []
    subject = doc.get("subject")
    if not isinstance(subject, str) or f"{subject}.toml" != name:
        problems.append(f"{name}: subject {subject!r} does not match the file name")
        return None, problems
    if doc.get("schema_version") != KB_SCHEMA_VERSION:
        problems.append(f"{name}: schema_version must be {KB_SCHEMA_VERSION}")
    sources = doc.get("sources", {})
    if not isinstance(sources, dict) or not sources:
        problems.append(f"{name}: no [sources] table")
        sources = {}
    for source_id, src in sources.items():
        problem = check_source_id(source_id)
        if problem:
            problems.append(f"{name}: {problem}")
        if not isinstance(src, dict) or not src.get("title") or not src.get("retrieved"):
            problems.append(f"{name}: source {source_id!r} needs title and retrieved")
    specs = table_specs(subject)
    if specs is None:
        problems.append(f"{name}: no schema module gpuenv.kb.schemas.{subject}")
        specs = {}
    tables, meta = _split_document(doc)
    problems.extend(_check_tables(name, tables, specs, frozenset(sources), "generated_by" in meta))
    kb_file = KbFile(subject, path, meta, sources, {k: tuple(v) for k, v in tables.items()})
    return kb_file, problems


def _split_document(doc: Mapping[str, Any]) -> tuple[dict[str, list[Row]], dict[str, Any]]:
    tables: dict[str, list[Row]] = {}
    meta: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "sources":
            continue
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            tables[key] = value
        else:
            meta[key] = value
    return tables, meta


def _check_tables(
    name: str,
    tables: Mapping[str, list[Row]],
    specs: Mapping[str, TableSpec],
    source_ids: frozenset[str],
    generated: bool,
) -> list[str]:
    problems: list[str] = []
    for table, rows in tables.items():
        spec = specs.get(table)
        if spec is None:
            problems.append(f"{name}: table {table!r} has no schema")
            continue
        seen: dict[tuple[Any, ...], int] = {}
        for number, row in enumerate(rows, start=1):
            where = f"{name}: {table}[{number}]"
            problems.extend(f"{where}: {p}" for p in check_row(spec, row, source_ids, generated))
            key = tuple(_hashable(row.get(k)) for k in spec.key)
            if key in seen:
                problems.append(f"{where}: duplicate key {spec.key}={key} (first at {seen[key]})")
            else:
                seen[key] = number
    return problems


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def load_kb(data_dir: Path | None = None, strict: bool = True) -> KnowledgeBase:
    """Load every `*.toml` under the data folder. With strict, any problem raises one error."""
    folder = data_dir or DATA_DIR
    files: dict[str, KbFile] = {}
    problems: list[str] = []
    for path in sorted(folder.glob("*.toml")):
        kb_file, file_problems = parse_kb_file(path)
        problems.extend(file_problems)
        if kb_file is not None:
            files[path.stem] = kb_file
    if problems and strict:
        raise GpuenvError(
            "kb-invalid",
            f"the knowledge base has {len(problems)} problem(s)",
            cause="\n".join(problems[:50]),
            hints=("run `gpuenv kb audit` to see them all",),
        )
    return KnowledgeBase(files=files, problems=tuple(problems))


@lru_cache(maxsize=1)
def default_kb() -> KnowledgeBase:
    """The packaged knowledge base, loaded once per process: from its compiled copy when that
    matches the TOML sources exactly, else from the sources themselves."""
    return load_compiled() or load_kb()
