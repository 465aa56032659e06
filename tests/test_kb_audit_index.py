"""`kb audit --index`: releases on the index that the KB lacks, stale after 30 days. Pages come
from a real HTTP server on 127.0.0.1 (tests/wheel_server.py); (network) the real index."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from gpuenv.cli import main
from gpuenv.errors import GpuenvError
from gpuenv.kb import KbFile, KnowledgeBase, default_kb
from gpuenv.kbtools import index_audit
from gpuenv.kbtools import index_client as ic
from tests.wheel_server import WheelServer, serving

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=timezone.utc)


def ago(days: int) -> str:
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def kb_of(tables: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> KnowledgeBase:
    files = {
        subject: KbFile(
            subject, Path(f"{subject}.toml"), {}, {}, {k: tuple(v) for k, v in t.items()}
        )
        for subject, t in tables.items()
    }
    return KnowledgeBase(files=files)


def wheel_rows(package: str, *versions: str) -> list[dict[str, str]]:
    return [{"package": package, "version": v} for v in versions]


@pytest.fixture(scope="module")
def index() -> Iterator[WheelServer]:
    with serving() as server:
        for version, days in (("2.14.0", 90), ("2.14.1", 60), ("2.15.0", 40), ("2.16.0", 10)):
            name = f"torch-{version}-cp312-cp312-manylinux_2_28_x86_64.whl"
            server.files[name] = b"not read"
            server.upload_times[name] = ago(days)
        yield server


def audit(index: WheelServer, kb: KnowledgeBase) -> index_audit.IndexAudit:
    return index_audit.audit_index(kb, f"{index.base}/simple", now=NOW, packages=("torch",))


def test_a_release_missing_for_over_30_days_fails_a_younger_one_is_reported(
    index: WheelServer,
) -> None:
    kb = kb_of(
        {
            "wheels": {"release": wheel_rows("torch", "2.14.0", "2.14.1")},
            "torch": {"release": [{"torch": "2.14"}]},
        }
    )
    result = audit(index, kb)
    missing = {m.version: m for m in result.missing}
    assert set(missing) == {"2.15.0", "2.16.0"}
    assert missing["2.15.0"].stale and missing["2.15.0"].age_days == 40
    assert missing["2.15.0"].lacks == ("wheels row", "curated release line")
    assert not missing["2.16.0"].stale and missing["2.16.0"].age_days == 10
    assert not result.ok
    facts = result.packages["torch"]
    assert (facts["index_newest"], facts["kb_newest"]) == ("2.16.0", "2.14.1")
    text = index_audit.render_index_audit(result)
    assert "FAILED" in text and "error: torch 2.15.0 lacks a wheels row" in text
    assert "note: torch 2.16.0" in text


def test_a_skipped_old_release_or_a_young_one_does_not_fail(index: WheelServer) -> None:
    kb = kb_of(
        {
            "wheels": {"release": wheel_rows("torch", "2.14.0", "2.15.0")},
            "torch": {"release": [{"torch": "2.14"}, {"torch": "2.15"}]},
        }
    )
    result = audit(index, kb)
    assert [(m.version, m.stale) for m in result.missing] == [("2.14.1", False), ("2.16.0", False)]
    assert result.ok
    assert result.to_dict()["missing"][0]["lacks"] == ["wheels row"]


def test_a_missing_curated_line_alone_fails_once_it_is_old(index: WheelServer) -> None:
    kb = kb_of(
        {
            "wheels": {"release": wheel_rows("torch", "2.14.0", "2.14.1", "2.15.0", "2.16.0")},
            "torch": {"release": [{"torch": "2.14"}]},
        }
    )
    missing = {m.version: m for m in audit(index, kb).missing}
    assert missing["2.15.0"].lacks == ("curated release line",) and missing["2.15.0"].stale
    assert not missing["2.16.0"].stale


def test_an_index_that_cannot_be_read_is_a_gpuenv_error(index: WheelServer) -> None:
    def broken(url: str, accept: str) -> ic.Response:
        return ic.Response(url, 503, "", b"")

    with pytest.raises(GpuenvError) as caught:
        index_audit.audit_index(kb_of({}), f"{index.base}/simple", fetch=broken, now=NOW)
    assert caught.value.code == "kb-audit-index-failed"


def test_the_cli_adds_the_index_to_the_audit(
    index: WheelServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ic, "pip_index_url", lambda *a, **k: f"{index.base}/simple")
    code = main(["kb", "audit", "--index", "--json"])
    document = json.loads(capsys.readouterr().out)
    # the packaged KB has torch 2.14.x and 2.15.0; 2.16.0 (10 days old) is only reported (the
    # other tracked packages have no files on this server)
    assert code == 0 and document["ok"] is True
    assert [m["version"] for m in document["index"]["missing"]] == ["2.16.0"]


@pytest.mark.network
def test_the_knowledge_base_keeps_up_with_the_real_index() -> None:
    """CI fails here when a release newer than the KB's has been on the index for 30 days:
    run `gpuenv kb refresh` and add its curated lines."""
    try:
        result = index_audit.audit_index(default_kb())
    except GpuenvError as exc:
        pytest.skip(f"the package index cannot be reached: {exc.message}: {exc.cause}")
    stale = [f"{m.package} {m.version} ({', '.join(m.lacks)})" for m in result.missing if m.stale]
    assert not stale, f"the KB is stale: {stale}"
    assert set(result.packages) == set(index_audit.TRACKED)
