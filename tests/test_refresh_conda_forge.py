"""tools/refresh_conda_forge.py reads conda-forge repodata into [[forge_build]] rows and lists what
the knowledge base lacks. Its input here is a saved repodata document (tests/fixtures/conda_forge)
in the channel's layout; the network is never reached."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gpuenv.kb import default_kb

ROOT = Path(__file__).resolve().parents[1]
REPODATA = ROOT / "tests" / "fixtures" / "conda_forge" / "linux-64.current_repodata.json"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "refresh_conda_forge", ROOT / "tools" / "refresh_conda_forge.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_builds_fold_their_pythons_and_read_the_cuda_of_each_build(tool: ModuleType) -> None:
    rows = tool.rows_from_repodata(tool.read_repodata(str(REPODATA)), today="2026-11-23")
    by_key = {(r["package"], r["version"], r.get("cuda")): r for r in rows}
    tf = by_key[("tensorflow", "2.19.1", "12.8")]
    # the microarch-level-3 build (+25 per level) and the +200 CUDA offset fold into build 3
    assert (tf["build"], tf["python_min"], tf["python_max"]) == (3, "3.10", "3.12")
    assert tf["build_string"] == "cuda128*" and tf["platform"] == "linux-64"
    assert by_key[("tensorflow", "2.19.1", None)]["build_string"] == "cpu*"
    jaxlib = by_key[("jaxlib", "0.9.2", "12.9")]
    assert jaxlib["companion"] == "jax" and jaxlib["python_max"] == "3.14"
    # cupy's build string names no CUDA: the CUDA libraries it requires do
    assert {r["cuda"] for r in rows if r["package"] == "cupy"} == {"12.9", "13.2"}
    assert all("build_string" not in r for r in rows if r["package"] == "cupy")
    # pre-releases and packages not asked for are left out
    assert not any(r["version"].endswith("rc0") or r["package"] == "pytorch" for r in rows)


def test_the_knowledge_base_rows_match_what_the_channel_publishes(tool: ModuleType) -> None:
    rows = tool.rows_from_repodata(tool.read_repodata(str(REPODATA)))
    new = tool.missing(rows, default_kb().rows("conda", "forge_build"))
    # 2.19.1, 0.9.2 and 14.1.1 are in the KB; jaxlib 0.10.1 is not yet
    assert [tool.describe(r) for r in new] == ["new: jaxlib 0.10.1 linux-64 CUDA 12.9"]
    known = {
        (r["package"], r["version"], r["platform"], r.get("cuda")): r
        for r in default_kb().rows("conda", "forge_build")
    }
    for row in rows:
        kb_row = known.get((row["package"], row["version"], row["platform"], row.get("cuda")))
        if kb_row is not None:
            assert kb_row.get("build_string") == row.get("build_string")
            assert (kb_row["python_min"], kb_row["python_max"]) == (
                row["python_min"],
                row["python_max"],
            )


def test_the_printed_rows_are_toml_the_schema_accepts(tool: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "rows.toml"
    status = tool.main(["--repodata", str(REPODATA), "--out", str(out)])
    assert status == 1  # something to review
    doc = tomllib.loads(out.read_text())
    [row] = doc["forge_build"]
    assert row["package"] == "jaxlib" and row["version"] == "0.10.1" and row["cuda"] == "12.9"
    assert row["source"] == "conda-forge-repodata" and row["status"] == "official"


def test_a_file_that_is_not_repodata_fails_with_status_2(tool: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert tool.main(["--repodata", str(bad)]) == 2
