"""Lay a `Doc` out as terminal text: wrapped to a width with hanging indents, in colour or not.

Without a width and without colour (output piped to a file or a program) each line is written as
it is and `rich` is never imported. Otherwise `rich` does the width-aware wrapping (East Asian
wide characters included) and the colour codes: prose wraps at spaces only, so a long URL or path
stays whole on a line of its own, and verbatim lines (commands) are never wrapped.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuenv.render.layout import Doc, Line, Span

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

# rich style per layout style
_RICH_STYLES = {
    "error": "bold red",
    "warning": "yellow",
    "ok": "green",
    "info": "cyan",
    "muted": "bright_black",
    "bold": "bold",
    "heading": "bold",
    "command": "bold",
}
_NO_WRAP = 1_000_000


@dataclass(frozen=True)
class Terminal:
    """How text output should look: wrap width (None: do not wrap) and colour."""

    width: int | None = None
    colour: bool = False


def to_text(doc: Doc, terminal: Terminal = Terminal()) -> str:
    if terminal.width is None and not terminal.colour:
        return "".join(" " * ln.indent + ln.text + "\n" for ln in doc)
    console = _console(terminal)
    for ln in doc:
        _print_line(console, ln, terminal.width or _NO_WRAP)
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def _console(terminal: Terminal) -> Console:
    from rich.console import Console

    return Console(
        file=io.StringIO(),
        width=terminal.width or _NO_WRAP,
        color_system="standard" if terminal.colour else None,
        force_terminal=terminal.colour,
        no_color=not terminal.colour,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
        soft_wrap=False,
    )


def _rich_text(spans: Sequence[Span], indent: int) -> Text:
    from rich.text import Text

    text = Text(" " * indent, no_wrap=True, overflow="ignore", end="\n")
    for span in spans:
        text.append(span.text, _RICH_STYLES.get(span.style or ""))
    return text


def _print_line(console: Console, ln: Line, width: int) -> None:
    if ln.verbatim or not ln.text:
        console.print(_rich_text(ln.spans, ln.indent), crop=False, soft_wrap=True)
        return
    # a hanging indent that would leave the continuation lines a sliver (the doctor's stack at
    # 40 columns: one word a line) hangs less, so they keep MIN_ROOM cells
    hang = min(ln.hang, max(width - ln.indent - MIN_ROOM, 2))
    first, room = max(width - ln.indent, 10), max(width - ln.indent - hang, 10)
    for number, part in enumerate(wrap_spans(ln.spans, first, room)):
        pad = ln.indent + (hang if number else 0)
        console.print(_rich_text(part, pad), crop=False, soft_wrap=True)


_WORDS = re.compile(r"( +)")
MIN_ROOM = 24  # cells a wrapped line's continuation keeps, however deep its hang


def wrap_spans(spans: Sequence[Span], first: int, room: int) -> list[list[Span]]:
    """Greedy wrapping at spaces only, measured in terminal cells: the first line holds `first`
    cells, the others `room`; a longer word (a URL, a path) gets a line of its own and is never
    split."""
    from rich.cells import cell_len

    words: list[tuple[str, list[Span]]] = [("", [])]  # (spaces before, the word's pieces)
    for span in spans:
        for piece in _WORDS.split(span.text):
            if piece.startswith(" "):
                words.append((piece, []))
            elif piece:
                words[-1][1].append(Span(piece, span.style))
    lines: list[list[Span]] = [[]]
    used = 0
    for gap, word in words:
        size = sum(cell_len(s.text) for s in word)
        if used and used + len(gap) + size > (first if len(lines) == 1 else room):
            lines.append([])
            used = 0
        elif gap and (used or len(lines) == 1):
            lines[-1].append(Span(gap))
            used += len(gap)
        lines[-1].extend(word)
        used += size
    return lines
