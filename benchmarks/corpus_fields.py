"""The forms of a corpus row's fields, shared by the corpus tests (tests/test_corpus.py) and the
kit blind sets are collected with (tools/corpus_kit.py)."""

from __future__ import annotations

import re

ID_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
GITHUB_SOURCE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*#[1-9][0-9]*")
URL_SOURCE_RE = re.compile(r"https?://[^\s/]+\.[^\s/]+(?:/\S*)?")
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
# a GitHub thread named anywhere in a text: a knowledge-base locator, or a note citing it
THREAD_IN_TEXT_RE = re.compile(
    r"(?<![\w.-])([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*#[1-9][0-9]*)(?!\d)"
)
