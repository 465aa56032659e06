"""`gpuenv guard -- pip install X`: preview an install, refuse it when a GPU package would move."""

from __future__ import annotations

import argparse
from typing import Any

from gpuenv.cli.guard_options import env_options, lock_argument
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK, GpuenvError


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "guard",
        parents=[common],
        help="preview an install; refuse it when a GPU-critical package would change",
        description="Ask the installer what it would do (pip --dry-run --report, uv and conda "
        "dry runs), compare with the env and its lock, and refuse when a GPU-critical package "
        "would change (version, variant, CUDA major, cuDNN major, removal), printing a safe "
        "command instead. Otherwise (or with --allow) run the install and check the env "
        "again. Exit 0: installed and checked; 1: refused, the installer failed, or the check "
        "found GPU-critical changes nobody allowed; 2: gpuenv failed.",
        usage="gpuenv guard [--python PATH] [--lock FILE] [--allow] [--json] -- INSTALL COMMAND",
    )
    env_options(parser)
    lock_argument(parser, required=False)
    parser.add_argument(
        "--allow", action="store_true", help="go on even when a GPU-critical package would change"
    )
    parser.add_argument(
        "install",
        nargs=argparse.REMAINDER,
        metavar="-- INSTALL COMMAND",
        help="pip install …, uv pip install …, conda|mamba install …",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.guard.actions import guard
    from gpuenv.guard.commands import parse_command
    from gpuenv.guard.envs import read_lock
    from gpuenv.render.guard import guard_dict, guard_doc
    from gpuenv.render.terminal import to_text

    words = list(args.install)
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        raise GpuenvError(
            "bad-argument",
            "give the install command after --",
            hints=("gpuenv guard -- pip install ftfy",),
        )
    command = parse_command(words)
    baseline = read_lock(args.lock) if args.lock else None
    relay = output.relay if not args.ui.quiet else (lambda _text: None)
    lock_path = str(args.lock) if args.lock else None
    outcome = guard(command, args.python, baseline, args.allow, relay, args.timeout, lock_path)
    code = EXIT_OK if outcome.ok else EXIT_FINDINGS
    if args.json:
        output.emit_json(guard_dict(outcome, code))
    else:
        output.emit(to_text(guard_doc(outcome, args.ui.verbose), args.ui.terminal))
    return code
