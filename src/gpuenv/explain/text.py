"""A text as people paste it, made plain: decoded whatever its encoding, colour codes and
carriage returns gone, e-mail and Markdown quote marks and fences stripped, one entry per line.
Linear in the size of the text; line numbers are those of the text as given (a lone carriage
return, as progress bars write, ends a line too)."""

from __future__ import annotations

import bisect
import codecs
import itertools
import re
from dataclasses import dataclass

# CSI (colours, cursor moves), OSC (titles, links) and two-character escapes
_ANSI = re.compile(
    r"\x1b\[[0-9;:?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# "> " of e-mail and Markdown quotes (nested) at a line's start, and the backticks of inline code
# and fences at a line's start or end (with a fence's language tag when alone on its line); run
# only on the lines that hold a ">" or a backtick.
_QUOTE = re.compile(r"[ \t]{0,3}(?:>[ \t]?)+")
_TICKS_START = re.compile(r"[ \t]*`{1,3}(?:[A-Za-z0-9_+-]{1,20}[ \t]*$)?")
_TICKS_END = re.compile(r"`{1,3}[ \t]*$")


def decode(data: bytes) -> str:
    """Bytes as text: UTF-16 with a byte-order mark (PowerShell's `>`), UTF-16 without one when
    every other byte is NUL, else UTF-8 with or without a mark; undecodable bytes replaced."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", "replace")
    sample = data[:4096]
    if len(sample) >= 8 and sample[1::2].count(0) > len(sample) * 0.4:
        return data.decode("utf-16-le", "replace")
    if len(sample) >= 8 and sample[0::2].count(0) > len(sample) * 0.4:
        return data.decode("utf-16-be", "replace")
    return data.decode("utf-8-sig", "replace")


def plain(text: str) -> str:
    """The text without colour codes, control characters, quote marks and code fences. Each
    clean-up runs only when its character is in the text, and quote marks and backticks are
    looked at only on the lines that hold them, so a plain log costs a few scans."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    quoted, ticked = ">" in text, "`" in text
    if quoted or ticked:
        lines = text.split("\n")
        marked = {n for n, line in enumerate(lines) if ">" in line} if quoted else set()
        if ticked:
            marked.update(n for n, line in enumerate(lines) if "`" in line)
        for n in marked:
            lines[n] = _unmark(lines[n])
        text = "\n".join(lines)
    return text


def _unmark(line: str) -> str:
    quote = _QUOTE.match(line)
    line = line[quote.end() :] if quote else line
    if "`" in line:
        start = _TICKS_START.match(line)
        line = line[start.end() :] if start else line
        line = _TICKS_END.sub("", line)
    return line


@dataclass(frozen=True)
class Text:
    """A plain text, its lines and where each starts (to turn an offset into a line number)."""

    plain: str
    lower: str
    lines: tuple[str, ...]
    starts: tuple[int, ...]

    def line_of(self, offset: int) -> int:
        """The 0-based line holding the character at `offset`."""
        return bisect.bisect_right(self.starts, offset) - 1


def line_starts(lines: list[str]) -> list[int]:
    """Where each line starts in the text they were split from (each line and its newline)."""
    return list(itertools.accumulate(map((1).__add__, map(len, lines[:-1])), initial=0))


def prepare(text: str) -> Text:
    cleaned = plain(text)
    lines = cleaned.split("\n")
    starts = tuple(line_starts(lines))
    lower = _lower(cleaned)
    if len(lower) != len(cleaned):  # a few characters lower-case to two ("İ"): keep offsets
        lower = cleaned.translate(_ASCII_LOWER)
    return Text(cleaned, lower, tuple(lines), starts)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_LOWER_PIECE = 1 << 20


def _lower(text: str) -> str:
    """The text in lower case, a piece at a time: lower-casing a text with characters beyond
    ASCII first allocates room for three times its characters at four bytes each (120 MB for a
    10 MB log), a piece's worth here."""
    if text.isascii() or len(text) <= _LOWER_PIECE:
        return text.lower()
    return "".join(text[at : at + _LOWER_PIECE].lower() for at in range(0, len(text), _LOWER_PIECE))
