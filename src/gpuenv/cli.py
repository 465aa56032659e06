"""Command line: parse arguments, call one library function, render. No domain logic here."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gpuenv._version import __version__
from gpuenv.errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, GpuenvError

Handler = Callable[[argparse.Namespace], int]
MAX_TIMEOUT_S = 3600.0


def _seconds(text: str) -> float:
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


def _target_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("which machine and environment")
    group.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        type=Path,
        help="a snapshot file (from `gpuenv snapshot -o`) instead of this machine",
    )
    group.add_argument(
        "--python",
        metavar="PATH",
        help="the target interpreter (default: the active venv/conda env, else python3)",
    )
    group.add_argument(
        "--timeout",
        type=_seconds,
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
        help="linux-x86_64 | linux-aarch64 | windows-x86_64 | macos-arm64",
    )
    what_if.add_argument("--jetpack", metavar="VERSION", help="Jetson JetPack release, e.g. 6.1")


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--no-redact", action="store_true", help="keep GPU UUIDs, serials, host and user names"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuenv",
        description="Get a working GPU deep-learning environment and keep it working.",
    )
    parser.add_argument("--version", action="version", version=f"gpuenv {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    snap = commands.add_parser("snapshot", help="probe the machine and env; print or save facts")
    _target_options(snap)
    _output_options(snap)
    snap.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the JSON here")
    snap.set_defaults(handler=_cmd_snapshot)

    doctor = commands.add_parser("doctor", help="what is wrong in the GPU stack, why, and the fix")
    _target_options(doctor)
    _output_options(doctor)
    doctor.add_argument("--markdown", action="store_true", help="Markdown for a bug report")
    doctor.set_defaults(handler=_cmd_doctor)

    from gpuenv.plan.cli_plan import add_plan_command

    add_plan_command(commands)

    kb = commands.add_parser("kb", help="the knowledge base: show, audit, refresh")
    kb_commands = kb.add_subparsers(dest="kb_command", metavar="KB_COMMAND")
    show = kb_commands.add_parser("show", help="print a table, e.g. `kb show torch --cuda 12.1`")
    show.add_argument("topic")
    show.add_argument("text", nargs="?", help='what to look up, e.g. "RTX 3090" or 535.183.01')
    show.add_argument("--cuda")
    show.add_argument("--python")
    show.add_argument("--package")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_cmd_kb_show)
    audit = kb_commands.add_parser("audit", help="check the knowledge base for consistency")
    audit.add_argument("--json", action="store_true")
    audit.set_defaults(handler=_cmd_kb_audit)
    refresh = kb_commands.add_parser("refresh", help="rebuild generated tables from the index")
    refresh.add_argument("--package", action="append", default=[], help="only these packages")
    refresh.add_argument("--out", type=Path, help="write here instead of the packaged file")
    refresh.set_defaults(handler=_cmd_kb_refresh)
    kb.set_defaults(handler=lambda _args: _usage(kb))
    return parser


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_FAILED


def _cmd_snapshot(args: argparse.Namespace) -> int:
    from gpuenv.api import load_target
    from gpuenv.render.snapshot_text import render_snapshot
    from gpuenv.snapshot_io import snapshot_json

    snapshot = load_target(args)
    text = snapshot_json(snapshot) if args.output or args.json else ""
    if args.output:
        _write(args.output, text)
        print(f"snapshot written to {args.output}", file=sys.stderr)
    if args.json:
        _emit(text)
    elif not args.output:
        _emit(render_snapshot(snapshot))
    return EXIT_OK


def _colour_wanted() -> bool:
    # NO_COLOR counts when it is set to something (no-color.org): NO_COLOR= leaves colour on
    return (
        sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
    )


def _cmd_doctor(args: argparse.Namespace) -> int:
    from gpuenv.api import load_target
    from gpuenv.diagnose import diagnose
    from gpuenv.kb import default_kb
    from gpuenv.render.doctor import render_json, render_markdown, render_text

    snapshot = load_target(args)
    diagnosis = diagnose(snapshot, default_kb())
    code = EXIT_FINDINGS if diagnosis.has_error else EXIT_OK
    if args.json:
        _emit(render_json(diagnosis, snapshot, code))
    elif args.markdown:
        _emit(render_markdown(diagnosis, snapshot))
    else:
        _emit(render_text(diagnosis, snapshot, colour=_colour_wanted()))
    return code


def _cmd_kb_show(args: argparse.Namespace) -> int:
    from gpuenv.kb import default_kb
    from gpuenv.kb.show import render_table, show, table_to_json

    filters = {
        k: v
        for k, v in (("cuda", args.cuda), ("python", args.python), ("package", args.package))
        if v
    }
    table = show(default_kb(), args.topic, filters, args.text)
    if args.json:
        _emit(json.dumps(table_to_json(table), indent=2) + "\n")
    else:
        _emit(render_table(table))
    return EXIT_OK


def _cmd_kb_audit(args: argparse.Namespace) -> int:
    from gpuenv.kb import load_kb
    from gpuenv.kb.audit import audit, render_audit

    report = audit(load_kb(strict=False))
    if args.json:
        _emit(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        _emit(render_audit(report))
    return EXIT_OK if report.ok else EXIT_FINDINGS


def _cmd_kb_refresh(args: argparse.Namespace) -> int:
    from gpuenv.kb.refresh import refresh

    report = refresh(packages=tuple(args.package) or None, out=args.out)
    _emit(report.summary() + "\n")
    return EXIT_OK if not report.problems else EXIT_FINDINGS


def _write(path: Path, text: str) -> None:
    """Write all or nothing: a full disk or an interrupt never leaves half a snapshot behind."""
    import os
    import tempfile

    temp: str | None = None
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temp, path)
    except OSError as exc:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
        raise GpuenvError("cannot-write", f"cannot write {path}: {exc.strerror or exc}") from None


def _emit(text: str) -> None:
    """Write to stdout. A reader that went away (`| head`) is not an error: the command goes on
    and keeps its exit code; stdout that cannot be written (a full disk) is."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _drop_stdout()
    except OSError as exc:
        _drop_stdout()
        raise GpuenvError(
            "cannot-write", f"cannot write the output: {exc.strerror or exc}"
        ) from None


def _drop_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush does not fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # no file descriptor (captured output): nothing to flush
        pass


def _internal_error(exc: BaseException) -> GpuenvError:
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


def _report(error: GpuenvError, as_json: bool) -> None:
    """The error on stderr, and with --json on stdout too; where either is gone, the exit code
    still tells."""
    if as_json:
        with contextlib.suppress(GpuenvError):
            _emit(json.dumps(error.to_dict(), indent=2) + "\n")
    with contextlib.suppress(OSError):
        print(f"gpuenv: {error}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_FAILED
    try:
        return handler(args)
    except GpuenvError as error:
        _report(error, getattr(args, "json", False))
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("gpuenv: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_OK
    except Exception as exc:  # a bug: exit 2 with one clear line, never exit 1 ("findings")
        _report(_internal_error(exc), getattr(args, "json", False))
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
