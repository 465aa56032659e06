"""`gpuenv lock`: write down the env as it is while it works (docs/guard.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuenv.cli.guard_options import env_options, keep_in_history
from gpuenv.cli.options import file_path
from gpuenv.edges import output
from gpuenv.errors import EXIT_OK


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "lock",
        parents=[common],
        help="write the env's exact packages, variants and origins to a lock file",
        description="Write every distribution of the env with its exact version, build variant "
        "and origin, the GPU-critical ones marked, their GPU code and the driver and GPUs it "
        "works on, to a TOML lock file (default gpuenv.lock). Exit 0: written; 2: failed.",
    )
    env_options(parser)
    parser.add_argument(
        "-o",
        "--output",
        type=file_path,
        default=Path("gpuenv.lock"),
        metavar="FILE",
        help="where to write the lock (default gpuenv.lock; - for standard output)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.guard.envs import current
    from gpuenv.guard.lockfile import lock_text
    from gpuenv.render.guard import lock_dict, lock_doc
    from gpuenv.render.terminal import to_text

    lock = current(args.python, args.timeout).lock
    text = lock_text(lock)
    to_stdout = str(args.output) == "-"
    if not to_stdout:
        output.write_file(args.output, text)
    keep_in_history(lock, "lock", args.ui.quiet)
    if args.json:
        output.emit_json(
            {
                "schema": "gpuenv-lock/1",
                "written": None if to_stdout else str(args.output),
                "lock": lock_dict(lock),
            }
        )
    elif to_stdout:
        output.emit(text)
    elif not args.ui.quiet:
        doc = lock_doc(lock, str(args.output), args.ui.verbose)
        output.emit(to_text(doc, args.ui.terminal))
    return EXIT_OK
