"""Command line: parse arguments, call one library function, render. No domain logic here."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gpuenv._version import __version__
from gpuenv.errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, GpuenvError

Handler = Callable[[argparse.Namespace], int]


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
        type=float,
        default=10.0,
        metavar="S",
        help="seconds each external command may take (default 10)",
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
    text = snapshot_json(snapshot)
    if args.output:
        _write(args.output, text)
        print(f"snapshot written to {args.output}", file=sys.stderr)
    if args.json:
        sys.stdout.write(text)
    elif not args.output:
        sys.stdout.write(render_snapshot(snapshot))
    return EXIT_OK


def _colour_wanted() -> bool:
    import os

    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _cmd_doctor(args: argparse.Namespace) -> int:
    from gpuenv.api import load_target
    from gpuenv.diagnose import diagnose
    from gpuenv.kb import default_kb
    from gpuenv.render.doctor import render_json, render_markdown, render_text

    snapshot = load_target(args)
    diagnosis = diagnose(snapshot, default_kb())
    code = EXIT_FINDINGS if diagnosis.has_error else EXIT_OK
    if args.json:
        sys.stdout.write(render_json(diagnosis, snapshot, code))
    elif args.markdown:
        sys.stdout.write(render_markdown(diagnosis, snapshot))
    else:
        sys.stdout.write(render_text(diagnosis, snapshot, colour=_colour_wanted()))
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
        print(json.dumps(table_to_json(table), indent=2))
    else:
        sys.stdout.write(render_table(table))
    return EXIT_OK


def _cmd_kb_audit(args: argparse.Namespace) -> int:
    from gpuenv.kb import load_kb
    from gpuenv.kb.audit import audit, render_audit

    report = audit(load_kb(strict=False))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        sys.stdout.write(render_audit(report))
    return EXIT_OK if report.ok else EXIT_FINDINGS


def _cmd_kb_refresh(args: argparse.Namespace) -> int:
    from gpuenv.kb.refresh import refresh

    report = refresh(packages=tuple(args.package) or None, out=args.out)
    print(report.summary())
    return EXIT_OK if not report.problems else EXIT_FINDINGS


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise GpuenvError("cannot-write", f"cannot write {path}: {exc.strerror or exc}") from None


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
        if getattr(args, "json", False):
            print(json.dumps(error.to_dict(), indent=2))
        print(f"gpuenv: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("gpuenv: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
