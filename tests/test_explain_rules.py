"""explain's ranking rules (what a message means by the facts around it), the one-pass needle
search, and the text clean-up: each rule turns its real example into its cause and only when its
conditions hold; the needle search finds exactly what a plain search finds; quotes and fences go."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuenv.explain import explain_text
from gpuenv.explain.needles import compile_needle, locate
from gpuenv.explain.text import plain, prepare
from gpuenv.kb import default_kb, load_kb
from gpuenv.kb.audit import check_patterns
from gpuenv.kb.loader import DATA_DIR
from gpuenv.kb.patterns import Condition, compiled, parse_condition

KB = default_kb()
RULES = {rule.id: rule for group in compiled(KB).rules.values() for rule in group}


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_rule_turns_its_example_into_its_cause(rule_id: str) -> None:
    rule = RULES[rule_id]
    explanation = explain_text(rule.example, KB)
    assert explanation.cause == rule.cause, explanation.evidence
    assert any(e.rule == rule_id for e in explanation.evidence)


def test_a_rule_needs_its_facts() -> None:
    """The same message without the container is the driver, not the container's CUDA."""
    message = (
        "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version"
    )
    assert explain_text(message, KB).cause == "driver_too_old"
    in_docker = "$ docker run --gpus all my-image python train.py\n" + message
    assert explain_text(in_docker, KB).cause == "container_driver_mismatch"
    on_mac = "AssertionError: Torch not compiled with CUDA enabled"
    assert explain_text(on_mac, KB).cause == "cpu_only_build"
    assert explain_text("MacBook Pro M2\n" + on_mac, KB).cause == "mps_or_rocm_specific"


@pytest.mark.parametrize(
    ("text", "facts", "holds"),
    [
        ("container", {"container": {"docker"}}, True),
        ("container", {}, False),
        ("os=darwin|windows", {"os": {"windows"}}, True),
        ("os=darwin", {"os": {"linux"}}, False),
        ("!wsl", {"wsl": {"true"}}, False),
        ("!os=darwin", {"os": {"linux"}}, True),
    ],
)
def test_conditions(text: str, facts: dict[str, set[str]], holds: bool) -> None:
    problems: list[str] = []
    condition = parse_condition(text, problems)
    assert isinstance(condition, Condition) and not problems
    assert condition.holds(facts) is holds


def _kb_with(tmp_path: Path, extra: str) -> Any:
    folder = tmp_path / "data"
    shutil.copytree(DATA_DIR, folder)
    target = folder / "patterns.toml"
    target.write_text(target.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return load_kb(folder, strict=False)


@pytest.mark.parametrize(
    ("patterns", "when", "example", "message"),
    [
        ("'no-such-pattern'", "'container'", "x", "does not exist"),
        (
            "'libcuda-missing'",
            "'colour=red'",
            "libcuda.so: cannot open shared object file",
            "no fact",
        ),
        ("'libcuda-missing'", "'wsl'", "nothing here", "holds no message"),
    ],
)
def test_audit_finds_bad_rules(
    tmp_path: Path, patterns: str, when: str, example: str, message: str
) -> None:
    extra = f"""
[[rule]]
id = 'bad-rule'
title = 'x'
patterns = [{patterns}]
when = [{when}]
cause = 'missing_cuda_lib'
weight = 0.9
example = '{example}'
source = "github-threads"
locator = 'x/y#1'
verified = "2026-11-23"
status = "inferred"
"""
    problems = check_patterns(_kb_with(tmp_path, extra))
    assert isinstance(problems, list) and any(message in p.message for p in problems), problems


# -- the needle search ---------------------------------------------------------------------------

WORDS = st.sampled_from(["cuda", "out", "of", "memory", "nccl", "x", "_", ".", " ", "\n", "-"])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(WORDS, max_size=300).map("".join),
    st.lists(st.lists(WORDS, min_size=1, max_size=5).map("".join), min_size=1, max_size=6),
)
def test_locate_finds_what_a_plain_search_finds(text: str, needles: list[str]) -> None:
    """Rule: for any text and needles, the chunked, word-gated search returns the offsets a
    plain left-to-right search returns (up to the cap)."""
    from gpuenv.explain import needles as module

    lower = text.lower()
    original = module.CHUNK
    module.CHUNK = 16  # many chunks, lines cut between them
    try:
        found = locate(lower, [compile_needle(n) for n in needles])
    finally:
        module.CHUNK = original
    for needle in needles:
        expected, at = [], lower.find(needle)
        while at >= 0:
            expected.append(at)
            at = lower.find(needle, at + len(needle))
        if "\n" not in needle:  # a needle across lines is searched whole; chunks end at lines
            assert found[needle] == expected[: module.MAX_HITS], needle


def test_needle_words() -> None:
    needle = compile_needle("cuda out of memory")
    assert (needle.words, needle.parts) == ((b"out", b"of"), (b"cuda", b"memory"))
    assert compile_needle("cpuonly").parts == (b"cpuonly",)
    assert compile_needle("--").anywhere


# -- the text clean-up ---------------------------------------------------------------------------


def test_quotes_fences_and_inline_code_go() -> None:
    text = "> > quoted line\n```python\nimport torch\n```\nrun `nvidia-smi`\n`cmd` here\n"
    assert plain(text) == "quoted line\n\nimport torch\n\nrun `nvidia-smi\ncmd` here\n"
    assert plain("```\nfirst") == "\nfirst"
    assert plain("no marks at all") == "no marks at all"


def test_line_starts_and_offsets() -> None:
    prepared = prepare("a\r\nbb\rccc\n\nd")
    assert prepared.lines == ("a", "bb", "ccc", "", "d")
    assert prepared.starts == (0, 2, 5, 9, 10)
    assert [prepared.line_of(i) for i in (0, 2, 6, 9, 10)] == [0, 1, 2, 3, 4]


_OLD_QUOTE = re.compile(r"\n[ \t]{0,3}(?:>[ \t]?)+")
_OLD_TICKS_START = re.compile(r"\n[ \t]*`{1,3}(?:[A-Za-z0-9_+-]{1,20}[ \t]*(?=\n|$))?")
_OLD_TICKS_END = re.compile(r"`{1,3}[ \t]*(?=\n|$)")


def _whole_text_unmark(text: str) -> str:
    """The clean-up of quote marks and backticks as whole-text substitutions (what plain() did
    before it looked only at the lines that hold them)."""
    text = _OLD_QUOTE.sub("\n", "\n" + text)
    return _OLD_TICKS_END.sub("", _OLD_TICKS_START.sub("\n", text))[1:]


@given(st.lists(st.sampled_from(["> ", ">", " ", "\t", "`", "```", "py", "x", "a>b", "\n"])))
def test_line_wise_unmarking_is_the_whole_text_substitution(parts: list[str]) -> None:
    text = "".join(parts)
    assert plain(text) == _whole_text_unmark(text)
