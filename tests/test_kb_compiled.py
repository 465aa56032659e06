"""The compiled copy of the knowledge base is exact, and never used once it is stale."""

from __future__ import annotations

import shutil
from pathlib import Path

from gpuenv.kb.compiled import COMPILED_NAME, load_compiled
from gpuenv.kb.loader import DATA_DIR, default_kb, load_kb
from gpuenv.kbtools.compile import compile_kb


def test_the_committed_copy_is_compiled_from_the_sources() -> None:
    committed = (DATA_DIR / COMPILED_NAME).read_text(encoding="utf-8")
    assert committed == compile_kb(), "run: python tools/compile_kb.py"


def test_the_copy_holds_exactly_what_the_sources_hold() -> None:
    compiled = load_compiled()
    assert compiled is not None
    sources = load_kb()
    assert set(compiled.files) == set(sources.files)
    for stem, kb_file in sources.files.items():
        assert {k: list(v) for k, v in compiled.files[stem].tables.items()} == {
            k: list(v) for k, v in kb_file.tables.items()
        }
        assert dict(compiled.files[stem].sources) == dict(kb_file.sources)
    assert default_kb().rows("gpus", "gpu") == compiled.rows("gpus", "gpu")


def test_an_edited_source_makes_the_copy_unused(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    assert load_compiled(folder) is not None
    archs = folder / "archs.toml"
    archs.write_text(archs.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert load_compiled(folder) is None


def test_a_broken_copy_is_ignored(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    (folder / COMPILED_NAME).write_text("{not json", encoding="utf-8")
    assert load_compiled(folder) is None
