"""`gpuenv kb show|audit|refresh`: the knowledge base."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuenv.cli.options import usage
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    kb = commands.add_parser(
        "kb",
        parents=[common],
        help="the knowledge base: show, audit, refresh",
        description="The compatibility tables gpuenv reasons with, each row with its source.",
    )
    kb_commands = kb.add_subparsers(dest="kb_command", metavar="KB_COMMAND")
    _show(kb_commands, common)
    audit = kb_commands.add_parser(
        "audit", parents=[common], help="check the knowledge base for consistency"
    )
    audit.add_argument("--json", action="store_true", help="machine-readable output")
    audit.set_defaults(handler=run_audit)
    refresh = kb_commands.add_parser(
        "refresh", parents=[common], help="rebuild generated tables from the package index"
    )
    refresh.add_argument("--package", action="append", default=[], help="only these packages")
    refresh.add_argument("--out", type=Path, help="write here instead of the packaged file")
    refresh.set_defaults(handler=run_refresh)
    kb.set_defaults(handler=lambda _args: usage(kb))


_TOPICS_HELP = (
    "topics: torch, driver (what a driver version runs), gpu, cuda, jetson, tensorflow, jax, "
    "cupy, wheels, or any subject or subject.table (archs, cuda_libs.cudnn); "
    "`gpuenv kb show list` prints every subject and table"
)


def _show(kb_commands: Any, common: argparse.ArgumentParser) -> None:
    show = kb_commands.add_parser(
        "show",
        parents=[common],
        help="print a table, e.g. `kb show torch --cuda 12.1`",
        description="Print one knowledge-base table, filtered. " + _TOPICS_HELP,
        epilog='examples: gpuenv kb show driver 535.183.01; gpuenv kb show gpu "RTX 3090"; '
        "gpuenv kb show torch --cuda 12.1 --python 3.11",
    )
    show.add_argument("topic", help="what to show (see the topics above)")
    show.add_argument("text", nargs="?", help='what to look up, e.g. "RTX 3090" or 535.183.01')
    show.add_argument("--cuda", help="only rows for this CUDA version")
    show.add_argument("--python", help="only rows for this Python version")
    show.add_argument("--package", help="only rows of this package")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=run_show)


def run_show(args: argparse.Namespace) -> int:
    from gpuenv.kb import default_kb
    from gpuenv.kb.show import show, table_to_json, topics
    from gpuenv.render.kb_table import render_table

    kb = default_kb()
    if args.topic.strip().lower() in ("list", "topics"):
        output.emit("\n".join(topics(kb)) + "\n")
        return EXIT_OK
    filters = {
        k: v
        for k, v in (("cuda", args.cuda), ("python", args.python), ("package", args.package))
        if v
    }
    table = show(kb, args.topic, filters, args.text)
    if args.json:
        output.emit_json(table_to_json(table))
    else:
        output.emit(render_table(table, args.ui.terminal, verbose=args.ui.verbose))
    return EXIT_OK


def run_audit(args: argparse.Namespace) -> int:
    from gpuenv.kb import load_kb
    from gpuenv.kb.audit import audit, render_audit

    report = audit(load_kb(strict=False))
    if args.json:
        output.emit_json(report.to_dict())
    else:
        output.emit(render_audit(report))
    return EXIT_OK if report.ok else EXIT_FINDINGS


def run_refresh(args: argparse.Namespace) -> int:
    from gpuenv.kb.refresh import refresh

    report = refresh(packages=tuple(args.package) or None, out=args.out)
    output.emit(report.summary() + "\n")
    return EXIT_OK if not report.problems else EXIT_FINDINGS
