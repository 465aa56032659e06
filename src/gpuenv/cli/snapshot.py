"""`gpuenv snapshot`: the facts of this machine and env (or a --from file) as text or JSON."""

from __future__ import annotations

import argparse
from typing import Any

from gpuenv.cli.options import file_path, output_options, target_options
from gpuenv.edges import output
from gpuenv.errors import EXIT_OK


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "snapshot",
        parents=[common],
        help="probe the machine and env; print or save the facts",
        description="Probe this machine and one Python environment (or read a --from file) "
        "and print the facts, or save them as one JSON document to attach to a bug report.",
    )
    target_options(parser)
    output_options(parser)
    parser.add_argument(
        "-o",
        "--output",
        type=file_path,
        metavar="FILE",
        help="write the JSON here (- for standard output)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.api import load_target
    from gpuenv.facts import to_dict
    from gpuenv.render.snapshot_text import render_snapshot

    snapshot = load_target(args)
    if args.output is not None and str(args.output) == "-":  # as `gpuenv lock -o -`
        args.json, args.output = True, None
    if args.output:
        output.write_file(args.output, output.json_text(to_dict(snapshot)))
        if not args.ui.quiet:
            output.say(f"snapshot written to {args.output}")
    if args.json:
        output.emit_json(to_dict(snapshot))
    elif not args.output:
        output.emit(render_snapshot(snapshot, args.ui.terminal))
    return EXIT_OK
