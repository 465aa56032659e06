"""`gpuenv kb show` tables for a terminal: as many columns as fit the width (the rest named, and
shown row by row with -v), the whole table when the output is not a terminal."""

from __future__ import annotations

from typing import Any

from gpuenv.kb.show import ShowTable, cell_text
from gpuenv.render.layout import Doc, blank, heading, line, verbatim
from gpuenv.render.terminal import Terminal, to_text

_GAP = 2


def render_table(table: ShowTable, terminal: Terminal | None = None, verbose: bool = False) -> str:
    return to_text(
        table_doc(table, terminal.width if terminal else None, verbose), terminal or Terminal()
    )


def table_doc(table: ShowTable, width: int | None, verbose: bool = False) -> Doc:
    doc: Doc = [heading(table.title), blank()]
    cells = [[cell_text(value) for value in row] for row in table.rows]
    if not cells:
        doc.append(line("(no rows)"))
    elif verbose:
        doc += _records(table.columns, cells)
    else:
        doc += _columns(table.columns, cells, width)
    if table.citations:
        doc += [blank(), line("Sources:")] + [line(c, indent=2) for c in table.citations]
    return doc


def _columns(columns: tuple[str, ...], cells: list[list[str]], width: int | None) -> Doc:
    widths = [max(len(c), *(len(row[n]) for row in cells)) for n, c in enumerate(columns)]
    shown = len(columns)
    if width is not None:
        used, shown = 0, 0
        for size in widths:
            if shown and used + _GAP + size > width:
                break
            used += (_GAP if shown else 0) + size
            shown += 1
    rule = tuple("-" * min(w, width or w) for w in widths[:shown])  # a long first cell
    doc = [_row(columns[:shown], widths), _row(rule, widths)]
    doc += [_row(tuple(row[:shown]), widths) for row in cells]
    if shown < len(columns):
        hidden = ", ".join(columns[shown:])
        doc += [blank(), line(f"{len(columns) - shown} more column(s) ({hidden}): -v shows every "
                              "row in full, --json has them all")]  # fmt: skip
    return doc


def _row(values: tuple[str, ...], widths: list[int]) -> Any:
    text = (" " * _GAP).join(v.ljust(w) for v, w in zip(values, widths)).rstrip()
    return verbatim(text)


def _records(columns: tuple[str, ...], cells: list[list[str]]) -> Doc:
    pad = max(len(c) for c in columns) + 2
    doc: Doc = []
    for row in cells:
        doc += [line(f"{name}:".ljust(pad), value, hang=pad) for name, value in zip(columns, row)]
        doc.append(blank())
    return doc
