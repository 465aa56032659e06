"""A compiled copy of the knowledge base: the validated TOML files as one JSON document.

Parsing and validating the TOML sources takes about 100 ms; reading this copy takes a few. The
copy records a SHA-256 of every source file, so it is used only while it matches them exactly;
an edited source makes the loader fall back to the TOML files (and a test fails until
`python tools/compile_kb.py` is run again). Writing the copy is a maintainer's job:
`gpuenv.kbtools.compile`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from gpuenv.kb.model import DATA_DIR, KbFile, KnowledgeBase

COMPILED_NAME = "_compiled.json"
COMPILED_VERSION = 1


def fingerprint(data_dir: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(data_dir.glob("*.toml"))
    }


def load_compiled(data_dir: Path = DATA_DIR) -> KnowledgeBase | None:
    """The knowledge base from its compiled copy; None when the copy is absent or stale."""
    path = data_dir / COMPILED_NAME
    try:
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if document.get("compiled_version") != COMPILED_VERSION:
        return None
    if document.get("fingerprint") != fingerprint(data_dir):
        return None
    files = {
        stem: KbFile(
            subject=raw["subject"],
            path=data_dir / f"{stem}.toml",
            meta=raw["meta"],
            sources=raw["sources"],
            tables={k: tuple(rows) for k, rows in raw["tables"].items()},
        )
        for stem, raw in document["files"].items()
    }
    return KnowledgeBase(files=files)
