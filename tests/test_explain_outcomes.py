"""explain's alternatives from the known reports: a message several causes share names them
beside its cause, each as sure as its share of the training reports that message decided; the
tally behind them counts each case once; a guess and a one-cause message name none."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from tools import train_lexicon

from gpuenv.cli import main
from gpuenv.explain import explain_text
from gpuenv.explain.model import Candidate
from gpuenv.explain.outcomes import MIN_REPORTS, MIN_SHARE, with_outcomes
from gpuenv.kb import default_kb
from gpuenv.kb.model import KbFile, KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]
KB = default_kb()
SCHEMA = json.loads((ROOT / "docs" / "explain.schema.json").read_text(encoding="utf-8"))
NONE_FOUND = (
    "ERROR: Could not find a version that satisfies the requirement torch==2.0.1 "
    "(from versions: none)\nERROR: No matching distribution found for torch==2.0.1\n"
)


def _row(evidence: str) -> dict[str, Any]:
    return next(dict(r) for r in KB.rows("lexicon", "outcome") if r["evidence"] == evidence)


def _kb(rows: list[dict[str, Any]]) -> KnowledgeBase:
    """A knowledge base holding only an outcome table."""
    lexicon = KbFile("lexicon", Path("lexicon.toml"), {}, {}, {"outcome": tuple(rows)})
    return KnowledgeBase(files={"lexicon": lexicon})


def _outcome(evidence: str, causes: dict[str, int]) -> dict[str, Any]:
    return {"evidence": evidence, "cases": sum(causes.values()), "causes": causes}


def test_a_message_several_causes_share_names_them_with_their_share() -> None:
    explanation = explain_text(NONE_FOUND, KB)
    row = _row(explanation.decided_by)
    expected = {
        cause: (reports, round(min(reports / row["cases"], explanation.confidence - 0.01), 3))
        for cause, reports in row["causes"].items()
        if cause != explanation.cause
        and reports >= MIN_REPORTS
        and reports / row["cases"] >= MIN_SHARE
    }
    named = {
        a.cause: (a.known_reports, a.confidence) for a in explanation.alternatives if a.of_known
    }
    assert "wrong_platform_wheel" in expected and named == expected
    assert all(a.of_known == row["cases"] for a in explanation.alternatives if a.of_known)
    confidences = [a.confidence for a in explanation.alternatives]
    assert confidences == sorted(confidences, reverse=True)


def test_a_message_of_one_cause_names_no_other() -> None:
    explanation = explain_text(
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please "
        "update your driver to a newer version, or use an earlier cuda container: unknown",
        KB,
    )
    assert explanation.cause == "container_driver_mismatch"
    assert set(_row(explanation.decided_by)["causes"]) == {"container_driver_mismatch"}
    assert explanation.alternatives == ()


def test_a_rule_decides_under_its_own_name() -> None:
    explanation = explain_text(
        "MacBook Pro M1, macOS 14\nAssertionError: Torch not compiled with CUDA enabled", KB
    )
    assert explanation.cause == "mps_or_rocm_specific"
    assert explanation.decided_by == "torch-cpu-build-on-macos"


def test_a_guess_from_the_words_names_no_known_reports() -> None:
    explanation = explain_text(
        "I get nothing from cudnn in pytorch: loading fails, libcudnn is not found on the system",
        KB,
    )
    assert explanation.basis == "words" and explanation.decided_by == ""
    assert all(not a.of_known for a in explanation.alternatives)


# -- merging with the ranked causes ------------------------------------------------------------


def test_an_alternative_is_never_as_sure_as_the_cause() -> None:
    kb = _kb([_outcome("p", {"a": 2, "b": 8})])
    merged = with_outcomes([Candidate("a", 0.4, ("p",))], "p", kb)
    assert [(c.cause, c.confidence, c.known_reports, c.of_known) for c in merged] == [
        ("a", 0.4, 0, 0),
        ("b", 0.39, 8, 10),
    ]


def test_a_ranked_cause_keeps_its_evidence_and_the_surer_of_its_two_confidences() -> None:
    kb = _kb([_outcome("p", {"a": 10, "b": 5, "c": 5})])
    ranked = [
        Candidate("a", 0.9, ("p",)),
        Candidate("b", 0.5, ("q",)),
        Candidate("c", 0.1, ("r",), ("finding-rule",)),
    ]
    merged = with_outcomes(ranked, "p", kb)
    assert [(c.cause, c.confidence, c.patterns, c.findings, c.known_reports) for c in merged] == [
        ("a", 0.9, ("p",), (), 0),
        ("b", 0.5, ("q",), (), 0),  # its own evidence was surer than a quarter of the reports
        ("c", 0.25, ("r",), ("finding-rule",), 5),  # a quarter of the reports is surer
    ]


def test_ties_keep_the_ranking_order_and_added_causes_follow_by_name() -> None:
    kb = _kb([_outcome("p", {"a": 4, "z": 2, "m": 2})])
    ranked = [Candidate("a", 0.9, ("p",)), Candidate("y", 0.2, ("q",)), Candidate("b", 0.2, ())]
    merged = with_outcomes(ranked, "p", kb)
    assert [c.cause for c in merged] == ["a", "m", "z", "y", "b"]


@pytest.mark.parametrize(
    ("causes", "named"),
    [
        ({"a": 3, "b": 1}, []),  # one report is an anecdote, whatever its share
        ({"a": 17, "b": 3}, ["b"]),  # exactly MIN_SHARE of the reports
        ({"a": 90, "b": 10}, []),  # a tenth is below MIN_SHARE
        ({"a": 6, "b": 2, "c": 2}, ["b", "c"]),  # a fifth each; ties by name
        ({"b": 5}, ["b"]),  # the message decided only other causes on the training reports
    ],
)
def test_which_causes_are_named(causes: dict[str, int], named: list[str]) -> None:
    kb = _kb([_outcome("p", causes)])
    merged = with_outcomes([Candidate("a", 0.95, ("p",))], "p", kb)
    assert [c.cause for c in merged[1:]] == named


def test_nothing_is_added_without_deciding_evidence_or_a_table() -> None:
    ranked = [Candidate("a", 0.9, ("p",))]
    assert with_outcomes(ranked, "", _kb([_outcome("", {"b": 9})])) == ranked
    assert with_outcomes(ranked, "p", KnowledgeBase(files={})) == ranked
    assert with_outcomes([], "p", _kb([_outcome("p", {"b": 9})])) == []


def test_every_tally_names_a_pattern_or_rule_of_the_knowledge_base() -> None:
    """A renamed pattern would orphan its row, and a new one taking an old id its tally."""
    ids = {str(r["id"]) for r in KB.rows("patterns", "pattern")}
    ids |= {str(r["id"]) for r in KB.rows("patterns", "rule")}
    rows = KB.rows("lexicon", "outcome")
    assert rows and {str(r["evidence"]) for r in rows} <= ids
    assert all(r["cases"] == sum(dict(r["causes"]).values()) >= MIN_REPORTS for r in rows)


# -- the tally ---------------------------------------------------------------------------------


def test_the_tally_counts_each_case_once_per_deciding_message() -> None:
    text = "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    cases = [
        {"error_text": text, "context": "Ubuntu 22.04, pip torch", "cause": "cudnn_mismatch"},
        {"error_text": text, "context": "", "cause": "missing_cuda_lib"},
        {"error_text": "CUDA out of memory. Tried to allocate 2 MiB", "cause": "out_of_memory"},
    ]
    rows = train_lexicon.outcomes(cases, KB)
    decided = explain_text(text, KB).decided_by
    assert [(r["evidence"], r["cases"], r["causes"]) for r in rows] == [
        (decided, 2, {"cudnn_mismatch": 1, "missing_cuda_lib": 1})
    ]  # the out-of-memory message decided one case: fewer than MIN_REPORTS, left out


# -- how it is shown ---------------------------------------------------------------------------


def test_the_command_says_how_many_reports_it_rests_on(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    explanation = explain_text(NONE_FOUND, KB)
    shown = next(a for a in explanation.alternatives if a.of_known)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(NONE_FOUND.encode())))
    assert main(["explain", "--no-probe"]) == 0
    out = capsys.readouterr().out
    said = f"{shown.known_reports} of {shown.of_known} known reports decided by the same message"
    assert said in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(NONE_FOUND.encode())))
    assert main(["explain", "--no-probe", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)
    assert document["decided_by"] == explanation.decided_by
    assert {"cause": shown.cause, "known_reports": shown.known_reports} in [
        {"cause": a["cause"], "known_reports": a["known_reports"]} for a in document["alternatives"]
    ]


def test_the_summary_names_the_line_that_decided() -> None:
    # the lighter sign comes first; the summary and decided_by both name the heavier one
    text = (
        ">>> import torch; torch.cuda.is_available()\nFalse\n>>> torch.zeros(1).cuda()\n"
        "AssertionError: Torch not compiled with CUDA enabled\n"
    )
    explanation = explain_text(text, KB)
    assert next(e.line for e in explanation.evidence if e.cause == "cpu_only_build") == 1
    assert explanation.decided_by == "torch-not-compiled-with-cuda"
    assert explanation.summary == "cpu_only_build: This torch is a CPU-only build (line 4)"
