"""What a terminal report is made of, before it meets a terminal: lines of styled spans.

Renderers (doctor, plan, explain, check …) build a `Doc`; `render.terminal.to_text` lays it out
for a width (wrapping prose with a hanging indent, never splitting a command or a URL) with or
without colour. Keeping the two apart lets every report be tested at 60, 80 and 120 columns and
lets text piped to a file stay one line per line.

Every span's text is shown as printable text: control characters and bidirectional overrides from
untrusted strings (package names, GPU names from someone's snapshot) are escaped here, once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Union

# Styles a span may carry; the terminal maps them to colours.
STYLES = ("error", "warning", "ok", "info", "muted", "bold", "heading", "command")
# C0 and C1 controls (line breaks included), DEL, lone surrogates, bidirectional overrides and
# isolates, zero-width and line-separator characters
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def printable(value: object) -> str:
    """`value` as one line of terminal text: controls shown as escapes (\\x1b, \\n), not sent."""
    return _UNPRINTABLE.sub(lambda m: ascii(m.group(0))[1:-1], str(value))


@dataclass(frozen=True)
class Span:
    text: str
    style: str | None = None


@dataclass(frozen=True)
class Line:
    """One logical line. Prose wraps: continuation lines start at `indent + hang`. A verbatim
    line (a command, a URL, a table row) is never wrapped; it may run past the width."""

    spans: tuple[Span, ...] = ()
    indent: int = 0
    hang: int = 2
    verbatim: bool = False

    @property
    def text(self) -> str:
        return "".join(span.text for span in self.spans)


Part = Union[str, Span, tuple[str, Union[str, None]]]
Doc = list[Line]


def _span(part: Part) -> Span:
    if isinstance(part, Span):
        return Span(printable(part.text), part.style)
    if isinstance(part, tuple):
        return Span(printable(part[0]), part[1])
    return Span(printable(part))


def line(*parts: Part, indent: int = 0, hang: int | None = None) -> Line:
    """Prose: wraps at the width; continuation lines hang under the first part's end when the
    first part is a label ("why: "), else two spaces in."""
    spans = tuple(_span(p) for p in parts if p != "")
    if hang is None:
        hang = len(spans[0].text) if len(spans) > 1 and len(spans[0].text) <= 12 else 2
    return Line(spans, indent, hang)


def verbatim(*parts: Part, indent: int = 0) -> Line:
    """A command, a URL or a table row: kept whole on one line."""
    return Line(tuple(_span(p) for p in parts if p != ""), indent, 0, verbatim=True)


def command(text: str, indent: int = 0, prompt: str = "$ ") -> Line:
    return verbatim((prompt, "muted"), (text, "command"), indent=indent)


def blank() -> Line:
    return Line()


def heading(text: str) -> Line:
    return Line((Span(printable(text), "heading"),), 0, 2)


def section(title: str, body: Iterable[Line]) -> Doc:
    """A heading, its lines and a blank line; nothing when the body is empty."""
    lines = list(body)
    return [heading(title), *lines, blank()] if lines else []
