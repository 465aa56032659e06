"""`gpuenv doctor`: the stack floor by floor, what is wrong, why, and the fix."""

from __future__ import annotations

import argparse
from typing import Any

from gpuenv.cli.options import command_line, output_options, target_options
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "doctor",
        parents=[common],
        help="what is wrong in the GPU stack, why, and the fix",
        description="Read the GPU stack floor by floor (GPU, driver, CUDA libraries, "
        "frameworks, extensions) and report what does not fit, why, and the exact fix. "
        "Exit 0: no error found; 1: an error finding; 2: gpuenv itself failed.",
    )
    target_options(parser)
    output_options(parser)
    parser.add_argument("--markdown", action="store_true", help="Markdown for a bug report")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.api import load_target
    from gpuenv.diagnose import diagnose
    from gpuenv.kb import default_kb
    from gpuenv.render.doctor import doctor_document, render_markdown, render_text

    snapshot = load_target(args)
    diagnosis = diagnose(snapshot, default_kb())
    code = EXIT_FINDINGS if diagnosis.has_error else EXIT_OK
    if args.json:
        output.emit_json(doctor_document(diagnosis, snapshot, code))
    elif args.markdown:
        output.emit(render_markdown(diagnosis, snapshot, command_line(args)))
    else:
        output.emit(render_text(diagnosis, snapshot, args.ui.terminal, verbose=args.ui.verbose))
    return code
