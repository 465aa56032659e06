"""Options of the guard commands (lock, pin, unpin, guard, diff, restore)."""

from __future__ import annotations

import argparse
from typing import Any

from gpuenv.cli.options import seconds
from gpuenv.edges import output
from gpuenv.errors import GpuenvError

ACTIVE_ENV = "the env's interpreter (default: the active venv/conda env, else python3)"


def env_options(parser: argparse.ArgumentParser, python_help: str = ACTIVE_ENV) -> None:
    group = parser.add_argument_group("which environment")
    group.add_argument("--python", metavar="PATH", help=python_help)
    group.add_argument(
        "--timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="seconds each probe command may take (default 10)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def lock_argument(parser: argparse.ArgumentParser, required: bool) -> None:
    from pathlib import Path

    if required:
        parser.add_argument("lock", type=Path, metavar="LOCK", help="a lock file from gpuenv lock")
    else:
        parser.add_argument(
            "--lock",
            type=Path,
            metavar="FILE",
            help="the lock to hold the env to (default: a fresh lock of the env now)",
        )


def keep_in_history(lock: Any, reason: str, quiet: bool) -> None:
    """Keep `lock` in the env's history for `gpuenv diff`. The history is a convenience: a
    cache folder that cannot be written (a read-only home) is a note, not the command's
    failure, once the lock itself was written."""
    from gpuenv.guard.envs import remember

    try:
        remember(lock, reason)
    except GpuenvError as error:
        if not quiet:
            output.say(
                f"gpuenv: note: not kept in the env's history ({error.message}); `gpuenv diff` "
                "without a file will not know it (set GPUENV_CACHE_DIR to a writable folder)"
            )
