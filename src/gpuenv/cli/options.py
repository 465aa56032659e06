"""Options shared by several commands, and how the output should look (`Ui`)."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gpuenv.render.terminal import Terminal

MAX_TIMEOUT_S = 3600.0
MIN_WIDTH = 40
COLOR_CHOICES = ("auto", "always", "never")


def seconds(text: str) -> float:
    """--timeout: a positive, finite number of seconds (0, negative, nan and inf are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}"
        )
    return value


def file_path(text: str) -> Path:
    """-o FILE: a path; an empty one (`-o "$UNSET"`) is refused rather than read as `.`."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path")
    return Path(text)


def folder_path(text: str) -> Path:
    """-o DIR: a folder for several files; `-` (standard output) cannot hold them."""
    if text.strip() in ("", "-"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a folder to write the files to (several files cannot go to "
            "standard output)"
        )
    return Path(text)


def common_parent(suppress: bool) -> argparse.ArgumentParser:
    """-q, -v and --color: accepted before the command and after it. On the command's own
    parser their defaults are suppressed, so a value given before the command survives."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("output")
    default: dict[str, object] = {"default": argparse.SUPPRESS} if suppress else {}
    group.add_argument(
        "-q",
        "--quiet",
        action="count",
        help="say less (progress and notes on stderr are left out)",
        **({"default": argparse.SUPPRESS} if suppress else {"default": 0}),
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        help="say more (full paths, every candidate); repeatable",
        **({"default": argparse.SUPPRESS} if suppress else {"default": 0}),
    )
    group.add_argument(
        "--color",
        "--colour",
        dest="color",
        choices=COLOR_CHOICES,
        help="colour in terminal text (default auto: on a terminal, unless NO_COLOR is set; "
        "FORCE_COLOR turns it on)",
        **(default if suppress else {"default": "auto"}),
    )
    return parent


def target_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("which machine and environment")
    group.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        type=Path,
        help="a snapshot file (from `gpuenv snapshot -o`) or a pasted report or error log, "
        "instead of this machine",
    )
    group.add_argument(
        "--python",
        metavar="PATH",
        help="the target interpreter (default: the active venv/conda env, else python3)",
    )
    group.add_argument(
        "--timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="seconds each external command may take (default 10; the target interpreter's "
        "script 3 times as long)",
    )
    what_if = parser.add_argument_group("what-if (replace probed facts)")
    what_if.add_argument("--driver", metavar="VERSION", help="driver version, e.g. 535.183.01")
    what_if.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="NAME_OR_CC",
        help='GPU model or compute capability, e.g. "RTX 3090" or 8.6 (repeatable)',
    )
    what_if.add_argument("--python-version", metavar="X.Y", help="Python version of the env")
    what_if.add_argument(
        "--platform",
        metavar="PLATFORM",
        help="linux-x86_64 | linux-aarch64 | windows-x86_64 | macos-arm64 | macos-x86_64",
    )
    what_if.add_argument("--jetpack", metavar="VERSION", help="Jetson JetPack release, e.g. 6.1")


def output_options(parser: argparse.ArgumentParser, *, redact: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    if redact:
        parser.add_argument(
            "--no-redact",
            action="store_true",
            help="keep GPU UUIDs, serials, host and user names",
        )


@dataclass(frozen=True)
class Ui:
    """How this run talks to the user: terminal layout, and how much to say."""

    terminal: Terminal
    verbosity: int = 0  # -1 quiet, 0 normal, 1+ verbose
    interactive: bool = False  # a person can be asked (stdin and stderr are terminals)

    @property
    def quiet(self) -> bool:
        return self.verbosity < 0

    @property
    def verbose(self) -> bool:
        return self.verbosity > 0


def ui_from_args(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
) -> Ui:
    env = os.environ if environ is None else environ
    out = sys.stdout if stdout is None else stdout
    terminal = detect_terminal(out, getattr(args, "color", "auto") or "auto", env)
    verbosity = (getattr(args, "verbose", 0) or 0) - (getattr(args, "quiet", 0) or 0)
    interactive = isatty(sys.stdin) and isatty(sys.stderr)
    return Ui(terminal=terminal, verbosity=verbosity, interactive=interactive)


def detect_terminal(stream: TextIO | None, choice: str, env: Mapping[str, str]) -> Terminal:
    """The terminal `stream` is: its width when it is one (or COLUMNS), colour by --color
    (auto, always, never), NO_COLOR and FORCE_COLOR (set to anything non-empty), TERM=dumb."""
    tty = isatty(stream)
    if choice == "always":
        colour = True
    elif choice == "never" or env.get("NO_COLOR"):
        colour = False
    elif env.get("FORCE_COLOR"):
        colour = True
    else:
        colour = tty and env.get("TERM") != "dumb"
    return Terminal(width=_width(tty, env), colour=colour)


def isatty(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, OSError, AttributeError):
        return False


def _width(tty: bool, env: Mapping[str, str]) -> int | None:
    columns = env.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_WIDTH)
    if not tty:
        return None
    return max(shutil.get_terminal_size((80, 24)).columns, MIN_WIDTH)


def command_line(args: argparse.Namespace) -> str:
    """The command as the user typed it (for reports), arguments quoted for a POSIX shell."""
    import shlex

    words = getattr(args, "argv", None) or sys.argv[1:]
    return " ".join(["gpuenv", *(shlex.quote(str(w)) for w in words)])


def usage(parser: argparse.ArgumentParser) -> int:
    """A command group given without its sub-command: its own usage on stderr, exit 2."""
    parser.print_help(sys.stderr)
    return 2
