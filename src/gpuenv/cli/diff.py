"""`gpuenv diff`: what changed in the env since it last worked, most consequential first."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuenv.cli.guard_options import env_options
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK, GpuenvError


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "diff",
        parents=[common],
        help="what changed in the env since a lock or snapshot (default: its last one)",
        description="Compare the env now with a lock (gpuenv lock) or a snapshot (gpuenv "
        "snapshot -o), or without one with the last lock kept for this env, and list what "
        "changed, most consequential first. Exit 0: no GPU-critical change; 1: a GPU-critical "
        "package changed; 2: gpuenv failed.",
    )
    env_options(parser)
    parser.add_argument(
        "against",
        nargs="?",
        type=Path,
        metavar="LOCK|SNAPSHOT",
        help="a lock or snapshot file (default: the env's last kept lock)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.guard.compare import compare, compare_machines
    from gpuenv.guard.envs import current, last_known, read_baseline
    from gpuenv.render.guard import change_dict, diff_doc
    from gpuenv.render.terminal import to_text

    now = current(args.python, args.timeout).lock
    if args.against is not None:
        before, name = read_baseline(args.against), str(args.against)
    else:
        found = last_known(now)
        if found is None:
            raise GpuenvError(
                "no-history",
                f"nothing is kept for {now.env.prefix or now.env.python} yet",
                hints=(
                    "run `gpuenv lock` while the env works; `gpuenv diff` then compares with it",
                ),
            )
        before, name = (
            found[0],
            f"the last lock of this env ({found[0].created_at or found[1].name})",
        )
    changes = compare(before, now)
    machine = compare_machines(before, now)
    code = EXIT_FINDINGS if any(c.critical for c in changes) else EXIT_OK
    if args.json:
        output.emit_json(
            {
                "schema": "gpuenv-diff/1",
                "exit_code": code,
                "against": name,
                "changes": [change_dict(c) for c in changes],
                "machine_changes": [m.what for m in machine],
            }
        )
    else:
        output.emit(to_text(diff_doc(changes, machine, name, args.ui.verbose), args.ui.terminal))
    return code
