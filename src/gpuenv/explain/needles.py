"""Where the literal words of the patterns and of the report landmarks occur in a text, found in
one pass over it in chunks of 16 KiB: each chunk's set of words is made once (a byte table
turns every character that is not part of a word into a space), and a needle is looked for only
in the chunks that hold all of its words (the words inside it exactly, the ones at its ends as
part of a longer word). A needle with a word inside it is picked by that word (the chunk's
words meet a table of them), so a chunk costs its words and its few candidates, not one test
per needle. A needle is searched in the chunk's UTF-8 bytes, not in the text (which holds 2 or 4
bytes a character once one character beyond Latin-1 is in it). A 10 MB log costs one tokenising
pass and the searches for needles whose words it has, not one full-text search per needle;
memory stays about one chunk above the text itself. A log whose lines mostly repeat (the same
warning every step) is searched one distinct line at a time, each line's hits copied to every
place it occurs, so it costs its distinct lines."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from heapq import merge
from itertools import islice

from gpuenv.explain.text import line_starts

CHUNK = 1 << 14  # characters of text a chunk holds (up to the end of its last line)
MAX_HITS = 500  # occurrences of one needle kept from the start of the text
TAIL_HITS = 100  # and, when it has more, its last occurrences (a log's error is at its end)
REPEAT_MIN_LINES = 1000  # a text of fewer lines is searched whole, however much it repeats
SAMPLE = 1 << 20  # characters whose lines are compared first
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")
# bytes of a word stay (non-ASCII bytes too, so UTF-8 text keeps its words); others become spaces
_TABLE = bytes(c if c in _WORD or c >= 0x80 else 0x20 for c in range(256))
_WIDE = re.compile(r"[^\x00-\x7f]")


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
    the last TAIL_HITS when there are more. A log whose lines mostly repeat is searched one
    distinct line at a time (each line once, its hits copied to every place the line is)."""
    wanted = list({n.text: n for n in needles}.values())
    found: dict[str, list[int]] = {n.text: [] for n in wanted}
    for needle in (n for n in wanted if n.anywhere):
        _find(lower, needle.text, 0, len(lower), found[needle.text])
    inline = [n for n in wanted if not n.anywhere]
    lines = _repetitive(lower)
    found.update(_first_hits(lower, inline) if lines is None else _by_line(lines, inline))
    for text, into in found.items():
        if len(into) >= MAX_HITS:
            into += _last(lower, text, into[-1])
    return found


def _repetitive(lower: str) -> list[str] | None:
    """The text's lines when at least half of them repeat an earlier one, else None."""
    if lower.count("\n") < REPEAT_MIN_LINES or not _repeats(lower[:SAMPLE].split("\n")):
        return None  # the lines of its first SAMPLE characters say whether a log repeats
    lines = lower.split("\n")
    return lines if _repeats(lines) else None


def _repeats(lines: list[str]) -> bool:
    return len(dict.fromkeys(lines)) * 2 <= len(lines)


def _by_line(lines: list[str], needles: list[Needle]) -> dict[str, list[int]]:
    """The first MAX_HITS offsets of each needle, found in the distinct lines only. Keeping a
    needle's first MAX_HITS hits in the distinct lines (ordered by first appearance) loses none
    of its first MAX_HITS in the text: a later hit there has MAX_HITS text hits before it."""
    distinct = list(dict.fromkeys(lines))
    inner = _first_hits("\n".join(distinct), needles)
    begins, starts = line_starts(distinct), line_starts(lines)
    # each hit as (distinct line, column); then where each of those lines is in the text
    placed = {
        text: [(k, at - begins[k]) for at in offsets for k in (bisect_right(begins, at) - 1,)]
        for text, offsets in inner.items()
    }
    index = {distinct[k]: k for pairs in placed.values() for k, _ in pairs}
    where: dict[int, list[int]] = {k: [] for k in index.values()}
    for number, line in enumerate(lines):
        k = index.get(line)
        if k is not None and len(where[k]) < MAX_HITS:
            where[k].append(number)
    out: dict[str, list[int]] = {}
    for text, pairs in placed.items():
        streams = [map(col.__add__, map(starts.__getitem__, where[k])) for k, col in pairs]
        out[text] = list(islice(merge(*streams), MAX_HITS))
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
                    chunk.find(needle.encoded, into)
        start = chunk.end
    for into in found.values():
        into.sort()
    return found


class _Chunk:
    """A chunk of the text as UTF-8 bytes: a needle is searched in the bytes (a text with one
    character beyond Latin-1 is stored with 2 or 4 bytes a character, and searching it costs
    that much more), and a byte offset found is turned back into a character offset."""

    def __init__(self, lower: str, start: int, end: int) -> None:
        self.start, self.end = start, end
        self.text = lower[start:end]
        self.raw = self.text.encode("utf-8", "surrogatepass")

    @cached_property
    def _wide(self) -> tuple[list[int], list[int]]:
        """Byte offsets where each multi-byte character ends, and the extra bytes up to there."""
        ends: list[int] = []
        extra: list[int] = []
        shift = 0
        for match in _WIDE.finditer(self.text):
            width = len(match.group().encode("utf-8", "surrogatepass"))
            ends.append(match.start() + shift + width)
            shift += width - 1
            extra.append(shift)
        return ends, extra

    def offset(self, at: int) -> int:
        """The text offset of byte `at` of the chunk (the start of a character)."""
        if len(self.raw) == self.end - self.start:
            return self.start + at
        ends, extra = self._wide
        before = bisect_right(ends, at)
        return self.start + at - (extra[before - 1] if before else 0)

    def find(self, needle: bytes, into: list[int]) -> None:
        at = self.raw.find(needle)
        while at >= 0 and len(into) < MAX_HITS:
            into.append(self.offset(at))
            at = self.raw.find(needle, at + len(needle))


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
