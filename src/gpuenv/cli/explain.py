"""`gpuenv explain`: from an error message or a pasted bug report to the cause and the fix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gpuenv.cli.options import isatty, output_options, seconds
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK, GpuenvError

STDIN = "-"


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "explain",
        parents=[common],
        help="the cause of an error message or a pasted bug report, and the fix",
        description="Read an error message, a log or a pasted bug report (files, or standard "
        "input: `pip install … 2>&1 | gpuenv explain`), find the lines that matter and the "
        "diagnostic outputs pasted in it (collect_env, nvidia-smi, nvcc, conda, pip …), and "
        "say the cause and the fix for those facts. Exit 0: a cause was found; 1: none; "
        "2: gpuenv itself failed.",
    )
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="text files (default, or -: standard input)"
    )
    parser.add_argument(
        "--no-probe",
        action="store_true",
        help="read nothing of this machine (by default its facts fill what the text lacks)",
    )
    parser.add_argument("--python", metavar="PATH", help="this machine's target interpreter")
    parser.add_argument(
        "--timeout", type=seconds, default=10.0, metavar="S", help="seconds per probe command"
    )
    output_options(parser, redact=False)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.explain import explain_text
    from gpuenv.kb import default_kb
    from gpuenv.render.explain import explain_document, render_text

    if args.no_probe and args.python:
        raise GpuenvError(
            "contradictory-flags",
            "--no-probe reads nothing of this machine, and --python names an interpreter of it "
            "to read: give one of them",
        )
    names = args.files or [STDIN]
    if STDIN in names and isatty(sys.stdin) and not args.ui.quiet:
        output.say(
            "gpuenv explain: paste the error message or log, then press Ctrl-D on a line of "
            "its own (Ctrl-Z then Enter on Windows); or give files: gpuenv explain FILE"
        )
    text, starts = read_texts(names)
    local = None if args.no_probe else _local(args)
    explanation = explain_text(text, default_kb(), local)
    code = EXIT_OK if explanation.found else EXIT_FINDINGS
    if args.json:
        output.emit_json(explain_document(explanation, code))
    else:
        output.emit(render_text(explanation, args.ui.terminal, _where(starts)))
    return code


def read_texts(names: list[str]) -> tuple[str, list[tuple[int, str]]]:
    """The texts joined, and the line each one starts on (for `file:line` in the report)."""
    from gpuenv.edges.files import read_stream, read_user_file
    from gpuenv.explain.text import decode

    parts: list[str] = []
    starts: list[tuple[int, str]] = []
    line = 1
    for name in names:
        if name == STDIN:
            if sys.stdin is None:
                raise GpuenvError("cannot-read", "no standard input to read")
            data = read_stream(sys.stdin.buffer, "report", "standard input")
        else:
            data = read_user_file(Path(name), "report")
        text = decode(data).rstrip("\n")
        starts.append((line, "stdin" if name == STDIN else name))
        parts.append(text)
        line += text.count("\n") + text.count("\r") - text.count("\r\n") + 1
    return "\n".join(parts), starts


def _where(starts: list[tuple[int, str]]) -> Any:
    def where(number: int) -> str:
        if len(starts) < 2:
            return f"line {number}"
        first, name = next((s for s in reversed(starts) if s[0] <= number), starts[0])
        return f"{name}:{number - first + 1}"

    return where


def _local(args: argparse.Namespace) -> Any:
    """This machine's snapshot; a probe that fails leaves the text to speak alone."""
    from gpuenv.api import take_snapshot

    try:
        return take_snapshot(python=args.python, timeout=args.timeout)
    except GpuenvError as error:
        output.say(f"gpuenv: this machine could not be read ({error.message}); the text alone")
        return None
