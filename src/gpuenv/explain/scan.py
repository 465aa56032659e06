"""Find the patterns of the knowledge base in a text: the literal words of every pattern are
located in one pass (gpuenv.explain.needles), and a pattern's regex runs only on the lines that
hold one of its words, at most MAX_LINE characters around the word. A 10 MB log is scanned in
well under a second; a line of a megabyte costs no more than its neighbourhood."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from heapq import merge

from gpuenv.explain.needles import MAX_HITS, TAIL_HITS
from gpuenv.explain.text import Text
from gpuenv.kb.patterns import MAX_LINE, WINDOW_LINES, Pattern

MAX_MATCHES = 20  # lines one pattern is reported on
MAX_PER_LINE = 4  # values a fact-reading pattern takes from one line
EVIDENCE_MARGIN = 80  # characters of a long line shown either side of a match
# facts a line may name several of (two toolkits installed); others keep the line's first value
MANY_PER_LINE = frozenset({"cuda_named"})


@dataclass(frozen=True)
class Hit:
    """A pattern that matched a line: where, what it read."""

    pattern: Pattern
    line: int  # 0-based
    text: str  # the line (cut), as evidence
    groups: tuple[tuple[str, str], ...]
    cause: str | None = None  # what it votes for: the pattern's cause, or a rule's
    weight: float = 0.0
    rule: str | None = None  # the rule that gave the cause, if one did
    rule_title: str | None = None

    @property
    def title(self) -> str:
        """What the line means: the rule's title when a rule re-ranked it, else the pattern's."""
        return self.rule_title or self.pattern.title


def scan(text: Text, patterns: Iterable[Pattern], located: Mapping[str, list[int]]) -> list[Hit]:
    """The hits of the patterns; `located` holds the offsets of their needles (needles.locate)."""
    hits: list[Hit] = []
    placed = _Placed(text, located)
    for pattern in patterns:
        seen: set[int] = set()
        matches = 0
        for line, offset in placed.candidates(pattern.needles):
            if line in seen:
                continue
            seen.add(line)
            found = _search(text, pattern, line, offset)
            if found is not None:
                hits.append(found)
                hits += _more_facts(text, pattern, found, offset)
                matches += 1
                if matches >= MAX_MATCHES:
                    break
    return sorted(hits, key=lambda h: h.line)


def _more_facts(text: Text, pattern: Pattern, first: Hit, offset: int) -> list[Hit]:
    """A pattern that only reads facts a line may name several of (MANY_PER_LINE) reads every
    value there ("built for CUDA 11.3; CUDA 11.4 installed"), not only the first."""
    if pattern.cause is not None or pattern.window or not pattern.regex.groupindex:
        return []
    if not set(pattern.regex.groupindex) <= MANY_PER_LINE:
        return []
    subject = _cut(text, first.line, offset)
    more = []
    for match in list(pattern.regex.finditer(subject))[1:MAX_PER_LINE]:
        groups = _groups(match)
        if groups and groups != first.groups:
            more.append(Hit(pattern, first.line, first.text, groups, None, pattern.weight))
    return more


class _Placed:
    """The (line, offset) of each occurrence of a needle, worked out once per needle: many
    patterns share a word ("nvidia", "driver")."""

    def __init__(self, text: Text, located: Mapping[str, list[int]]) -> None:
        self.text, self.located = text, located
        self.by_needle: dict[str, list[tuple[int, int]]] = {}

    def of(self, needle: str) -> list[tuple[int, int]]:
        placed = self.by_needle.get(needle)
        if placed is None:
            offsets = self.located.get(needle, ())
            lines = map(self.text.line_of, offsets)
            placed = self.by_needle[needle] = list(zip(lines, offsets, strict=True))
        return placed

    def candidates(self, needles: tuple[str, ...]) -> list[tuple[int, int]]:
        """(line, offset) of each occurrence of one of the needles, in text order: the first
        MAX_HITS and the last TAIL_HITS, as for one needle (needles.locate), so that a pattern
        with many common words costs no more searches than one with a single word."""
        if len(needles) == 1:
            return self.of(needles[0])
        merged = list(merge(*map(self.of, needles)))
        if len(merged) <= MAX_HITS + TAIL_HITS:
            return merged
        return merged[:MAX_HITS] + merged[-TAIL_HITS:]


def _search(text: Text, pattern: Pattern, line: int, offset: int) -> Hit | None:
    for first in _window_starts(pattern, line):
        subject = _subject(text, pattern, first, line, offset)
        match = pattern.regex.search(subject)
        if match is not None:
            groups = _groups(match)
            evidence = _around(subject, match.start(), match.end())
            at = first + subject[: match.start()].count("\n")
            return Hit(pattern, at, evidence, groups, pattern.cause, pattern.weight)
    return None


def _around(subject: str, start: int, end: int) -> str:
    """The match and up to EVIDENCE_MARGIN characters either side, cut at a space so that no
    word is cut in two (where the margin holds none, the match's own edge)."""
    left = max(0, start - EVIDENCE_MARGIN)
    if left > 0:
        space = subject.find(" ", left, start)
        left = start if space < 0 else space + 1
    right = min(len(subject), end + EVIDENCE_MARGIN)
    if right < len(subject):
        space = subject.rfind(" ", end, right)
        right = end if space < 0 else space
    return subject[left:right].strip()


def _groups(match: re.Match[str]) -> tuple[tuple[str, str], ...]:
    """The facts a match read: its named groups that matched, stripped."""
    return tuple((k, v.strip()) for k, v in match.groupdict().items() if v)


def _window_starts(pattern: Pattern, line: int) -> range:
    """A window pattern's text may begin up to two lines before the line of its literal."""
    return (
        range(max(0, line - WINDOW_LINES + 1), line + 1)
        if pattern.window
        else range(line, line + 1)
    )


def _subject(text: Text, pattern: Pattern, first: int, line: int, offset: int) -> str:
    if not pattern.window:
        return _cut(text, line, offset)
    last = min(len(text.lines), first + WINDOW_LINES)
    return "\n".join(_cut(text, n, offset) for n in range(first, last))


def _cut(text: Text, line: int, offset: int) -> str:
    """A line, or MAX_LINE characters of it around `offset` when it is longer."""
    content = text.lines[line]
    if len(content) <= MAX_LINE:
        return content
    start = text.starts[line]
    around = min(max(offset - start - MAX_LINE // 2, 0), len(content) - MAX_LINE)
    return content[around : around + MAX_LINE]
