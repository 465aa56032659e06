"""`gpuenv kb show|audit|refresh`: the knowledge base."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuenv.cli.options import usage
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK
from gpuenv.kb.model import DATA_DIR


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
    audit.add_argument(
        "--index",
        action="store_true",
        help="also compare with the package index: fail on a release missing for over 30 days",
    )
    audit.set_defaults(handler=run_audit)
    refresh = kb_commands.add_parser(
        "refresh",
        parents=[common],
        help="rebuild generated tables from the package index",
        description="Rebuild wheels.toml from the package index pip uses (project pages, core "
        "metadata, never whole wheels); with --archs, read the GPU code of one wheel into "
        "binaries.toml.",
    )
    refresh.add_argument("--package", action="append", default=[], help="only these packages")
    refresh.add_argument("--out", type=Path, help="write here instead of the packaged file")
    refresh.add_argument(
        "--archs",
        metavar="PACKAGE==VERSION",
        help="read the SASS/PTX architectures of ONE wheel (fetches its CUDA libraries: "
        "hundreds of MB; asks first) into binaries.toml",
    )
    refresh.add_argument(
        "--platform",
        default="linux-x86_64",
        choices=("linux-x86_64", "linux-aarch64", "windows-x86_64"),
        help="the wheel's platform for --archs (default linux-x86_64)",
    )
    refresh.add_argument("--yes", action="store_true", help="--archs: fetch without asking")
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
    show.add_argument("--cuda", type=_version("CUDA"), help="only rows for this CUDA version")
    show.add_argument("--python", type=_version("Python"), help="only rows for this Python version")
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

    kb = load_kb(strict=False)
    report = audit(kb)
    document, text, ok = report.to_dict(), render_audit(report), report.ok
    if args.index:
        from gpuenv.kbtools.index_audit import audit_index, render_index_audit

        if not args.ui.quiet:
            output.say("kb audit: reading the package index ...")
        against = audit_index(kb)
        document["index"] = against.to_dict()
        document["ok"] = ok = ok and against.ok
        text += render_index_audit(against)
    if args.json:
        output.emit_json(document)
    else:
        output.emit(_as_prose(text, args.ui.terminal))
    return EXIT_OK if ok else EXIT_FINDINGS


def _as_prose(text: str, terminal: Any) -> str:
    """The audit's lines laid out to the terminal's width, each keeping its indent."""
    from gpuenv.render.layout import blank, line
    from gpuenv.render.terminal import to_text

    doc = [
        line(row.lstrip(), indent=len(row) - len(row.lstrip())) if row.strip() else blank()
        for row in text.splitlines()
    ]
    return to_text(doc, terminal)


def run_refresh(args: argparse.Namespace) -> int:
    if args.archs:
        return _refresh_archs(args)
    from gpuenv.kbtools.refresh import refresh

    started = time.monotonic()
    report = refresh(
        packages=tuple(args.package) or None, out=args.out, progress=_progress(args, started)
    )
    output.emit(report.summary(verbose=args.ui.verbose) + "\n")
    return EXIT_OK if not report.problems else EXIT_FINDINGS


def _progress(args: argparse.Namespace, started: float) -> Callable[[str], None] | None:
    if args.ui.quiet:
        return None
    return lambda text: output.say(f"kb refresh [{time.monotonic() - started:4.0f}s] {text}")


def _refresh_archs(args: argparse.Namespace) -> int:
    from gpuenv.kbtools.archs import plan_archs, read_archs, write_rows

    started = time.monotonic()
    plan = plan_archs(args.archs, args.platform)
    output.say(f"kb refresh --archs: {plan.describe()}")
    if not args.yes and not _confirm(args, "fetch it now?"):
        output.say("nothing fetched (give --yes to fetch without asking)")
        return EXIT_FINDINGS
    row = read_archs(plan, progress=_progress(args, started))
    path = write_rows([row], args.out)
    if path.parent.resolve() == DATA_DIR.resolve():
        from gpuenv.kbtools.compile import write_compiled

        write_compiled()
    ptx = ", ".join(row["ptx"]) or "none"
    output.emit(
        f"{row['package']} {row['version']} {row['platform']} (CUDA {row['cuda']}): "
        f"SASS {', '.join(row['sass'])}; PTX {ptx}\nwrote {path}\n"
    )
    return EXIT_OK


def _confirm(args: argparse.Namespace, question: str) -> bool:
    """Ask on a terminal; anywhere else the answer is no."""
    if not args.ui.interactive:
        output.say("not on a terminal: nothing is fetched without --yes")
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _version(what: str) -> Any:
    """A filter value like 12.1 or 3.11: anything else is a usage error, not "(no rows)"."""
    import re

    def parse(text: str) -> str:
        if not re.fullmatch(r"[0-9]+(\.[0-9]+){0,3}", text.strip()):
            raise argparse.ArgumentTypeError(f"{text!r} is not a {what} version like 12.1")
        return text.strip()

    return parse
