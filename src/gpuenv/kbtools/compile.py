"""Write the compiled copy of the knowledge base (kb/compiled.py reads it)."""

from __future__ import annotations

import json
from pathlib import Path

from gpuenv.edges.output import write_file
from gpuenv.kb.compiled import COMPILED_NAME, COMPILED_VERSION, fingerprint
from gpuenv.kb.loader import load_kb
from gpuenv.kb.model import DATA_DIR


def compile_kb(data_dir: Path = DATA_DIR) -> str:
    """The compiled document's text; the sources must load without a problem."""
    kb = load_kb(data_dir, strict=True)
    document = {
        "compiled_version": COMPILED_VERSION,
        "fingerprint": fingerprint(data_dir),
        "files": {
            stem: {
                "subject": f.subject,
                "meta": dict(f.meta),
                "sources": {k: dict(v) for k, v in f.sources.items()},
                "tables": {k: [dict(r) for r in rows] for k, rows in f.tables.items()},
            }
            for stem, f in sorted(kb.files.items())
        },
    }
    # key order kept as written: rows keep their fields in the order the TOML file gives them
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_compiled(data_dir: Path = DATA_DIR) -> Path:
    return write_file(data_dir / COMPILED_NAME, compile_kb(data_dir))
