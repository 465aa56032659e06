"""tools/corpus_kit.py: the kit a blind set is collected with, the checker of a collector's part
and the merge into corpus/, run on the real corpus and knowledge base."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpuenv.diagnose.findings import CAUSES

ROOT = Path(__file__).resolve().parents[1]
RETRIEVED = "2026-11-25"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_kit", ROOT / "tools" / "corpus_kit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _case(n: int, **changes: str) -> dict[str, Any]:
    row = {
        "id": f"example-{n}-driver-too-old",
        "source": f"example-org/example-repo-{n}#{n + 1}",
        "error_text": "RuntimeError: The NVIDIA driver on your system is too old",
        "context": "",
        "cause": "driver_too_old",
        "fix": "Update the driver.",
        "confidence": "high",
        "retrieved": RETRIEVED,
    }
    return {**row, **changes}


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_the_parts_share_out_every_cause_once(tool: ModuleType) -> None:
    shared = [cause for causes in tool.PARTS.values() for cause in causes]
    assert sorted(shared) == sorted(CAUSES)


def test_a_kit_knows_the_corpus_and_the_threads_the_knowledge_base_cites(
    tool: ModuleType, tmp_path: Path
) -> None:
    kit = tmp_path / "fresh99"
    assert tool.make_kit(kit, RETRIEVED, "Threads of 2019.", []) == 0
    known = set((kit / "known_sources.txt").read_text(encoding="utf-8").split("\n"))
    corpus_source = json.loads(
        (ROOT / "corpus" / "error-cases.fresh32.jsonl").read_text(encoding="utf-8").split("\n")[0]
    )["source"]
    patterns = (ROOT / "src/gpuenv/kb/data/patterns.toml").read_text(encoding="utf-8")
    cited = re.findall(r"^locator = '([^']+#\d+)'$", patterns, re.MULTILINE)
    assert corpus_source in known and cited and set(cited) <= known
    notes = "\n".join(re.findall(r"^note = (.+)$", patterns, re.MULTILINE))
    named = set(re.findall(r"\b[\w.-]+/[\w.-]+#\d+", notes)) - set(cited)
    assert "AlexeyAB/darknet#6202" in named and named <= known  # a thread a note names only
    trackers = (kit / "trackers.txt").read_text(encoding="utf-8").splitlines()
    assert trackers[0].split()[0] == "pytorch/pytorch"  # the most used tracker first
    for part, causes in tool.PARTS.items():
        brief = (kit / f"BRIEF{part}.md").read_text(encoding="utf-8")
        assert not re.search(r"\{[A-Z]+\}", brief), part  # every placeholder filled
        assert ", ".join(causes) in brief and "Threads of 2019." in brief
        assert f"{kit.resolve()}/part{part}.jsonl" in brief and RETRIEVED in brief


def test_a_part_is_checked_against_the_known_threads_and_the_other_parts(
    tool: ModuleType, tmp_path: Path
) -> None:
    kit, sibling = tmp_path / "fresh98", tmp_path / "fresh99"
    tool.make_kit(sibling, RETRIEVED, "", [])
    tool.make_kit(kit, RETRIEVED, "", [sibling])
    _write(sibling / "partA.jsonl", [_case(7)])
    known = (kit / "known_sources.txt").read_text(encoding="utf-8").split("\n")[0]
    good = _write(kit / "partB.jsonl", [_case(1), _case(2)])
    assert tool.check_part(good, index_hosts={"index.example.org"}) == []
    bad = _write(
        kit / "partC.jsonl",
        [
            _case(3, source=known),
            _case(4, cause="driver_problem"),
            _case(5, error_text="pip install from https://index.example.org/simple failed"),
            _case(6, source=_case(7)["source"]),  # the sibling's
            _case(8, retrieved="2026-01-01", id="Not_Kebab"),
            *(_case(20 + n, source=f"one/tracker#{n + 1}") for n in range(4)),
        ],
    )
    problems = "\n".join(tool.check_part(bad, index_hosts={"index.example.org"}))
    for expected in (
        "source already known",
        "'driver_problem' is not in the vocabulary",
        "index.example.org: write <index>",
        "source in another part",
        f"retrieved is not {RETRIEVED}",
        "id is not kebab-case",
        "tracker one/tracker: 4 cases",
    ):
        assert expected in problems
    assert "(example-1-" not in problems and "(example-2-" not in problems


def test_the_merge_sorts_by_id_and_refuses_a_repeated_source(
    tool: ModuleType, tmp_path: Path
) -> None:
    kit = tmp_path / "fresh97"
    kit.mkdir()
    _write(kit / "partA.jsonl", [_case(2), _case(1)])
    _write(kit / "partB.jsonl", [_case(3)])
    out = tmp_path / "error-cases.fresh97.jsonl"
    assert tool.merge(kit, out) == 0
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert ids == sorted(ids) and len(ids) == 3
    _write(kit / "partC.jsonl", [_case(1, id="another-id")])
    assert tool.merge(kit, tmp_path / "refused.jsonl") == 1
    assert not (tmp_path / "refused.jsonl").exists()
