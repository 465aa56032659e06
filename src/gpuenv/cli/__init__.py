"""Command line: parse arguments, call one library function, render. No domain logic here.

Each command lives in a module of this package with a `register(commands)` function; `COMMANDS`
lists them in the order `gpuenv --help` shows. Every command writes through gpuenv.edges.output,
so output errors, encodings and exit codes behave the same everywhere (docs/cli.md).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType

from gpuenv._version import __version__
from gpuenv.cli.options import common_parent, ui_from_args
from gpuenv.cli.waiting import waiting_notes
from gpuenv.edges import output, process
from gpuenv.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    GpuenvError,
)

Handler = Callable[[argparse.Namespace], int]
COMMANDS = (
    "snapshot",
    "doctor",
    "plan",
    "explain",
    "check",
    "lock",
    "pin",
    "guard",
    "diff",
    "restore",
    "kb",
    "completion",
)

__all__ = ["COMMANDS", "build_parser", "main"]


class Terminated(BaseException):
    """SIGTERM: stop like Ctrl-C, with its own exit code."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuenv",
        description="Get a working GPU deep-learning environment and keep it working.",
        parents=[common_parent(suppress=False)],
    )
    parser.add_argument("--version", action="version", version=f"gpuenv {__version__}")
    parser.set_defaults(root_parser=parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = common_parent(suppress=True)
    for name in COMMANDS:
        module = importlib.import_module(f"gpuenv.cli.{name}")
        module.register(commands, common)
    _know_own_parser(parser)
    return parser


def _know_own_parser(parser: argparse.ArgumentParser) -> None:
    """Each (sub-)command's parser as a default of its own namespace, so that an argument no
    parser took is reported with the usage of the command it was given to."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_parser=sub)
                _know_own_parser(sub)


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, except that an unknown argument gets the usage of the sub-command it was
    given to (`gpuenv doctor --bogus` shows doctor's usage, not gpuenv's)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        owner: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        owner.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    process.allow_runs()
    output.start_run()
    try:
        parser = build_parser()
        args = parse(parser, argv)
    except KeyboardInterrupt:  # Ctrl-C while starting: no command is running yet
        return _stopped("interrupted", EXIT_INTERRUPTED)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_FAILED
    args.ui = ui_from_args(args)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    with _signals(), waiting_notes(args.ui):
        try:
            code = handler(args)
            _flush()
            return code
        except GpuenvError as error:
            report(error, getattr(args, "json", False))
            return EXIT_FAILED
        except KeyboardInterrupt:
            return _stopped("interrupted", EXIT_INTERRUPTED)
        except Terminated:
            return _stopped("terminated", EXIT_TERMINATED)
        except Exception as exc:  # a bug: exit 2 with one clear line, never exit 1 ("findings")
            report(internal_error(exc), getattr(args, "json", False))
            return EXIT_FAILED


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    """SIGTERM ends a command like Ctrl-C does: children killed, exit 143."""

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError, AttributeError):  # not the main thread; no SIGTERM
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(how: str, code: int) -> int:
    process.stop_all()
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"gpuenv: {how}\n")
    return code


def _flush() -> None:
    """Flush stdout now, so that a failure shows as exit 2 here and not as exit 120 at exit."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        output.drop_stdout()
    except (OSError, ValueError) as exc:
        output.drop_stdout()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise GpuenvError("cannot-write", f"cannot write the output: {why}") from None


def internal_error(exc: BaseException) -> GpuenvError:
    """A bug in gpuenv, told in one line with the place it happened (no traceback)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return GpuenvError(
        "internal-error",
        f"gpuenv failed: {type(exc).__name__}{where}" + (f": {text}" if text else ""),
        hints=("this is a bug in gpuenv; please report it with the command you ran",),
    )


def report(error: GpuenvError, as_json: bool) -> None:
    """The error on stderr, and with --json on stdout too, unless a document is there already
    (plan --json --create that fails after the plan); where either is gone, the exit code
    still tells."""
    if as_json and not output.stdout_used():
        with contextlib.suppress(GpuenvError):
            output.emit_json(error.to_dict())
    output.say(f"gpuenv: {error}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
