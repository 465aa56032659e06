"""Where the literal words of the patterns and of the report landmarks occur in a text, found in
one pass over it in chunks of 16 KiB: each chunk's set of words is made once (a byte table
turns every character that is not part of a word into a space), and a needle is looked for only
in the chunks that hold all of its words (the words inside it exactly, the ones at its ends as
part of a longer word). A needle with a word inside it is picked by that word (the chunk's
words meet a table of them), so a chunk costs its words and its few candidates, not one test
per needle. A needle is searched in the chunk's UTF-8 bytes when they are its characters (an
ASCII chunk), else in the chunk's characters: a slice is stored as narrow as its own characters
allow, whatever the whole text holds. A 10 MB log costs one tokenising
pass and the searches for needles whose words it has, not one full-text search per needle;
memory stays about one chunk above the text itself. A log whose lines mostly repeat (the same
warning every step, its timestamp or step number aside) is searched one distinct line at a time,
each line's hits copied to every place it occurs, so it costs its distinct lines: lines are
compared with their digits masked, so a needle without digits is searched in one line of each
kind (it matches at the same columns in all of them), and a needle with digits only in the lines
of the kinds whose masked line holds it with its digits masked too."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import AnyStr

from gpuenv.explain.text import line_starts

CHUNK = 1 << 14  # characters of text a chunk holds (up to the end of its last line)
MAX_HITS = 500  # occurrences of one needle kept from the start of the text
TAIL_HITS = 100  # and, when it has more, its last occurrences (a log's error is at its end)
REPEAT_MIN_LINES = 1000  # a text of fewer lines is searched whole, however much it repeats
SAMPLE = 1 << 20  # characters whose lines are compared first
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")
# bytes of a word stay (non-ASCII bytes too, so UTF-8 text keeps its words); others become spaces
_TABLE = bytes(c if c in _WORD or c >= 0x80 else 0x20 for c in range(256))
_MASK = bytes.maketrans(b"0123456789", b"0" * 10)  # a line's kind: its bytes, digits as 0
_DIGIT = re.compile("[0-9]")
_ZEROS = str.maketrans("0123456789", "0" * 10)
CHECK_LINES = 20_000  # lines a needle with digits is checked in before the whole text is searched


@dataclass(frozen=True)
class Needle:
    """A lower-case literal and the words that must be in a chunk for it to be there."""

    text: str
    words: tuple[bytes, ...]  # words inside the needle: the chunk must hold each as a word
    parts: tuple[bytes, ...]  # words at its ends: the chunk must hold each within a word
    anywhere: bool = False  # no word at all, or across lines: searched in the whole text

    @cached_property
    def encoded(self) -> bytes:
        return self.text.encode("utf-8", "surrogatepass")


def compile_needle(text: str) -> Needle:
    encoded = text.encode("utf-8", "surrogatepass")
    runs = encoded.translate(_TABLE).split(b" ")
    if "\n" in text or not any(runs):
        return Needle(text, (), (), anywhere=True)
    # runs[0] and runs[-1] touch the needle's ends (empty when it starts or ends with a
    # separator); a word there may be the end of a longer word in the text
    inner = tuple(dict.fromkeys(r for r in runs[1:-1] if r))
    edges = tuple(dict.fromkeys(r for r in (runs[0], runs[-1]) if r and r not in inner))
    if len(runs) == 1:
        return Needle(text, (), (runs[0],))
    return Needle(text, inner, edges)


@lru_cache(maxsize=8)
def compile_needles(texts: tuple[str, ...]) -> tuple[Needle, ...]:
    return tuple(compile_needle(t) for t in dict.fromkeys(texts))


def locate(lower: str, needles: Iterable[Needle]) -> dict[str, list[int]]:
    """Offsets in `lower` of each needle's occurrences, in text order: the first MAX_HITS, and
    the last TAIL_HITS when there are more. A log whose lines mostly repeat (digits aside) is
    searched one line of each kind at a time, its hits copied to every line of that kind; a
    needle with digits is found there with its digits masked too, and checked in each line of
    that kind."""
    wanted = list({n.text: n for n in needles}.values())
    found: dict[str, list[int]] = {n.text: [] for n in wanted}
    for needle in (n for n in wanted if n.anywhere):
        _find(lower, needle.text, 0, len(lower), found[needle.text])
    inline = [n for n in wanted if not n.anywhere]
    kinds = _repetitive(lower)
    if kinds is None:
        found.update(_first_hits(lower, inline))
    else:
        distinct = _Distinct(lower.split("\n"), kinds)
        found.update(_by_line(distinct, [n for n in inline if not _digits(n)]))
        found.update(_checked(lower, distinct, [n for n in inline if _digits(n)]))
    for text, into in found.items():
        if len(into) >= MAX_HITS:
            into += _last(lower, text, into[-1])
    return found


def _digits(needle: Needle) -> bool:
    return _DIGIT.search(needle.text) is not None


def _repetitive(lower: str) -> list[bytes] | None:
    """Each line's kind (its UTF-8 bytes, digits masked) when at least half of the lines are of
    a kind seen before, else None."""
    if lower.count("\n") < REPEAT_MIN_LINES or not _repeats(_kinds(lower[:SAMPLE])):
        return None  # the lines of its first SAMPLE characters say whether a log repeats
    kinds = _kinds(lower)
    return kinds if _repeats(kinds) else None


def _kinds(lower: str) -> list[bytes]:
    # a newline is one byte in UTF-8 and never inside a character: line n of the bytes is line n
    return lower.encode("utf-8", "surrogatepass").translate(_MASK).split(b"\n")


def _repeats(kinds: Sequence[Hashable]) -> bool:
    return len(dict.fromkeys(kinds)) * 2 <= len(kinds)


class _Distinct:
    """A repeating log's lines grouped by kind (lines equal once their digits are masked): one
    line of each kind, as text and masked, where each starts, and where the text's lines start.
    Lines of one kind hold the same characters at the same columns, digits aside."""

    def __init__(self, lines: list[str], kinds: list[bytes]) -> None:
        groups: dict[bytes, list[int]] = {}  # each kind's lines, kinds in order of first line
        for number, kind in enumerate(kinds):
            groups.setdefault(kind, []).append(number)
        self.members = list(groups.values())
        firsts = [lines[group[0]] for group in self.members]
        self.text = "\n".join(firsts)
        self.masked = "\n".join(k.decode("utf-8", "surrogatepass") for k in groups)
        self.widths = list(map(len, firsts))
        self.begins = line_starts(firsts)
        self.starts = line_starts(lines)

    def placed(self, offsets: list[int]) -> list[tuple[int, int]]:
        """(kind, column) of each offset in the distinct lines' text."""
        kinds = [bisect_right(self.begins, at) - 1 for at in offsets]
        return [(k, at - self.begins[k]) for k, at in zip(kinds, offsets, strict=True)]


def _by_line(distinct: _Distinct, needles: list[Needle]) -> dict[str, list[int]]:
    """The first MAX_HITS offsets of each needle without digits, found in one line of each
    kind: lines of one kind hold it at the same columns. Keeping a needle's first MAX_HITS hits
    in those lines (ordered by first appearance) loses none of its first MAX_HITS in the text: a
    later hit there has MAX_HITS text hits before it."""
    if not needles:
        return {}
    out: dict[str, list[int]] = {}
    starts, members = distinct.starts, distinct.members
    for text, offsets in _first_hits(distinct.text, needles).items():
        # each kind's lines are in text order, but the kinds interleave: sorted whole, in C
        out[text] = sorted(
            [starts[n] + col for k, col in distinct.placed(offsets) for n in members[k][:MAX_HITS]]
        )[:MAX_HITS]
    return out


def _checked(lower: str, distinct: _Distinct, needles: list[Needle]) -> dict[str, list[int]]:
    """The first MAX_HITS offsets of each needle with digits: its digits masked, it is looked
    for in the masked line of each kind, and only the lines of the kinds that hold it are
    searched for the needle itself. A needle that would search more than CHECK_LINES lines (or
    whose masked form is in MAX_HITS kinds) is searched in the whole text instead."""
    if not needles:
        return {}
    masked = {n.text: compile_needle(n.text.translate(_ZEROS)) for n in needles}
    inner = _first_hits(distinct.masked, list({m.text: m for m in masked.values()}.values()))
    out: dict[str, list[int]] = {}
    for needle in needles:
        offsets = inner[masked[needle.text].text]
        kinds = list(dict.fromkeys(k for k, _ in distinct.placed(offsets)))
        into = out[needle.text] = []
        if len(offsets) >= MAX_HITS or sum(len(distinct.members[k]) for k in kinds) > CHECK_LINES:
            _find(lower, needle.text, 0, len(lower), into)
            continue
        for k in kinds:  # a kind's first MAX_HITS hits, the kinds interleaving in the text
            width, hits = distinct.widths[k], list[int]()
            for start in map(distinct.starts.__getitem__, distinct.members[k]):
                _find(lower, needle.text, start, start + width, hits)
                if len(hits) >= MAX_HITS:
                    break
            into += hits
        into.sort()
        del into[MAX_HITS:]
    return out


def _first_hits(lower: str, needles: list[Needle]) -> dict[str, list[int]]:
    """The first MAX_HITS offsets of each needle (none across lines), chunk by chunk."""
    found: dict[str, list[int]] = {n.text: [] for n in needles}
    # a needle with inner words is keyed by its longest one: a chunk's words pick its candidates;
    # the others (words only at their ends) are tried in every chunk
    keyed: dict[bytes, list[tuple[Needle, frozenset[bytes]]]] = {}
    for needle in (n for n in needles if n.words):
        key = max(needle.words, key=len)
        keyed.setdefault(key, []).append((needle, frozenset(needle.words) - {key}))
    loose = [(n, frozenset[bytes]()) for n in needles if not n.words]
    start = 0
    while start < len(lower) and (keyed or loose):
        chunk = _Chunk(lower, start, _chunk_end(lower, start))
        words = set(chunk.raw.translate(_TABLE).split())
        joined = b" ".join(words)
        candidates = [pair for key in words.intersection(keyed) for pair in keyed[key]]
        within: dict[bytes, bool] = {}  # edge word -> inside some word of the chunk
        for needle, rest in candidates + loose:
            into = found[needle.text]
            if len(into) < MAX_HITS and words.issuperset(rest):
                for part in needle.parts:
                    held = within.get(part)
                    if held is None:
                        held = within[part] = part in words or part in joined
                    if not held:
                        break
                else:
                    chunk.find(needle, into)
        start = chunk.end
    for into in found.values():
        into.sort()
    return found


class _Chunk:
    """A chunk of the text, and its UTF-8 bytes for its words. A needle is searched in the bytes
    when every character is one byte, else in the chunk's own characters (a slice of the text
    is stored as narrow as its own characters allow), so a hit is a character offset."""

    def __init__(self, lower: str, start: int, end: int) -> None:
        self.start, self.end = start, end
        self.text = lower[start:end]
        self.raw = self.text.encode("utf-8", "surrogatepass")
        self.narrow = len(self.raw) == end - start

    def find(self, needle: Needle, into: list[int]) -> None:
        if self.narrow:
            _collect(self.raw, needle.encoded, self.start, into)
        else:
            _collect(self.text, needle.text, self.start, into)


def _collect(haystack: AnyStr, sought: AnyStr, shift: int, into: list[int]) -> None:
    """The occurrences of `sought` in `haystack`, none overlapping the one before, each plus
    `shift`, until `into` holds MAX_HITS."""
    at = haystack.find(sought)
    while at >= 0 and len(into) < MAX_HITS:
        into.append(shift + at)
        at = haystack.find(sought, at + len(sought))


def _last(lower: str, needle: str, after: int) -> list[int]:
    """The last TAIL_HITS occurrences of a needle that lie after `after`, in text order."""
    out: list[int] = []
    at = lower.rfind(needle, after + 1)
    while at > after and len(out) < TAIL_HITS:
        out.append(at)
        at = lower.rfind(needle, after + 1, at + len(needle) - 1)
    return out[::-1]


def _chunk_end(lower: str, start: int) -> int:
    if start + CHUNK >= len(lower):
        return len(lower)
    newline = lower.find("\n", start + CHUNK)
    return len(lower) if newline < 0 else newline + 1


def _find(lower: str, needle: str, start: int, end: int, into: list[int]) -> None:
    at = lower.find(needle, start, end)
    while at >= 0 and len(into) < MAX_HITS:
        into.append(at)
        at = lower.find(needle, at + len(needle), end)
