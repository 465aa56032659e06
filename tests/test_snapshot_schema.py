"""The committed JSON Schema matches the dataclasses, and snapshots validate against it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema

from gpuenv.facts import to_dict
from tests.test_snapshot_io import full_snapshot

ROOT = Path(__file__).resolve().parents[1]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen", ROOT / "tools" / "gen_snapshot_schema.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schema_is_generated_from_the_dataclasses() -> None:
    committed = (ROOT / "docs" / "snapshot.schema.json").read_text(encoding="utf-8")
    assert committed == _generator().render(), "run: python tools/gen_snapshot_schema.py"


def test_a_full_snapshot_validates() -> None:
    schema = json.loads((ROOT / "docs" / "snapshot.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(to_dict(full_snapshot()), schema)


def test_the_schema_rejects_a_wrong_type() -> None:
    schema = json.loads((ROOT / "docs" / "snapshot.schema.json").read_text(encoding="utf-8"))
    data = to_dict(full_snapshot())
    data["gpus"][0]["memory_mib"] = "24 GiB"
    validator = jsonschema.Draft202012Validator(schema)
    assert any(
        "memory_mib" in str(e.path) or "24 GiB" in e.message for e in validator.iter_errors(data)
    )
