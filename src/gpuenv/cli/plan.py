"""`gpuenv plan`: its arguments and handler. Parse, read the wants and the target, call
`make_plan`, render; with --create, hand the plan to gpuenv.apply. No planning logic here."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuenv.cli.options import file_path, folder_path, output_options, target_options
from gpuenv.edges import output
from gpuenv.edges.files import read_user_text
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK
from gpuenv.plan.model import INSTALLERS

if TYPE_CHECKING:
    from gpuenv.plan.model import Plan
    from gpuenv.plan.request import Request

# What-if flags that describe another machine: plan for it without probing this one.
_DECLARING = ("driver", "gpu", "jetpack", "platform")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "plan",
        parents=[common],
        help="choose versions that fit the machine; write what each installer reads",
        description="Choose the versions of the frameworks asked for that fit this machine (or "
        "a declared one) and each other, with the reason every other candidate was passed "
        "over, written for the installer you use. Exit 0: it fits; 1: nothing fits.",
    )
    parser.add_argument(
        "wants", nargs="*", metavar="WANT", help='what to install: torch, "torch>=2.4,<2.7", jax'
    )
    parser.add_argument(
        "-r",
        "--requirements",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="a requirements file, or a pyproject.toml (its [project] dependencies)",
    )
    parser.add_argument(
        "--installer",
        choices=INSTALLERS,
        help="what will install it (default: what manages the target env, else pip)",
    )
    parser.add_argument(
        "-o", "--output", type=folder_path, metavar="DIR", help="write the files here"
    )
    parser.add_argument(
        "--create", type=file_path, metavar="PATH", help="create the env at PATH and check it"
    )
    parser.add_argument(
        "--existing-ok", action="store_true", help="with --create: install into an existing env"
    )
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="with --create: go ahead without asking, however much it downloads",
    )
    target_options(parser)
    output_options(parser)
    parser.set_defaults(handler=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    from gpuenv.kb import default_kb
    from gpuenv.plan.resolve import make_plan
    from gpuenv.render.installers import Where, render_installer

    request = read_request(args.wants, args.requirements)
    snapshot = _target(args)
    installer = args.installer or _default_installer(snapshot)
    plan = make_plan(request, snapshot, default_kb(), installer)
    where = Where(
        folder=str(args.output) if args.output else None,
        interpreter=_named_env(args, snapshot),
    )
    rendered = render_installer(plan, where)
    written = _write(args.output, rendered.files) if args.output else []
    code = EXIT_OK if plan.fits else EXIT_FINDINGS
    _print(args, plan, rendered, written, code)
    if args.create is not None:
        return _create(args, plan)
    return code


def _print(
    args: argparse.Namespace, plan: Plan, rendered: Any, written: list[str], code: int
) -> None:
    from gpuenv.render.plan_text import plan_document, render_plan_text

    if args.json:
        output.emit_json(plan_document(plan, rendered, code))
    else:
        output.emit(
            render_plan_text(plan, rendered, written, args.ui.terminal, verbose=args.ui.verbose)
        )


def read_request(wants: list[str], files: list[Path]) -> Request:
    from gpuenv.plan.request import merge, parse_pyproject, parse_requirements
    from gpuenv.plan.request import request_from_arguments as from_arguments

    parts = [from_arguments(wants)] if wants else []
    for path in files:
        text = _read(path)
        if path.suffix == ".toml":
            parts.append(parse_pyproject(text, path.name))
        else:
            parts.append(parse_requirements(text, str(path), _includer(path.parent)))
    return merge(parts)


def _includer(folder: Path) -> Any:
    def include(name: str) -> tuple[str, str]:
        path = folder / name
        return str(path), _read(path)

    return include


def _read(path: Path) -> str:
    """A requirements file or pyproject: a regular file, UTF-8 (a byte-order mark is allowed)."""
    return read_user_text(path, "requirements", code="bad-requirements-file")


def _target(args: argparse.Namespace) -> Any:
    """A snapshot file, a declared machine (what-if flags naming another one, when no env is
    named), or this one: with --python the env is probed and the flags replace only what they
    name, as on every other command."""
    from gpuenv.api import load_target, what_if_from_args
    from gpuenv.kb import default_kb
    from gpuenv.whatif import declared_snapshot

    what_if = what_if_from_args(args)
    if args.create is not None and not what_if.python_version:
        what_if = _with_python(what_if, args)
    if args.from_file is None and not args.python and any(getattr(args, n) for n in _DECLARING):
        return declared_snapshot(what_if, default_kb())
    args.python_version = what_if.python_version
    return load_target(args)


def _with_python(what_if: Any, args: argparse.Namespace) -> Any:
    """--create without --python-version: the env gets the Python gpuenv runs on (or --python's
    is probed), so plan for that one."""
    from dataclasses import replace

    if args.python or args.from_file is not None:
        return what_if
    return replace(what_if, python_version=f"{sys.version_info[0]}.{sys.version_info[1]}")


def _named_env(args: argparse.Namespace, snapshot: Any) -> str | None:
    """The interpreter the user named with --python: commands install into that env."""
    if not args.python or snapshot.python_env is None:
        return None
    return str(snapshot.python_env.interpreter or args.python)


def _default_installer(snapshot: Any) -> str:
    env = snapshot.python_env
    manager = (env.manager or "") if env else ""
    return manager if manager in INSTALLERS else "pip"


def _write(folder: Path, files: dict[str, str]) -> list[str]:
    scripts = [name for name in files if name.endswith(".sh")]
    return [str(path) for path in output.write_tree(folder, files, executable=scripts)]


def _create(args: argparse.Namespace, plan: Plan) -> int:
    from gpuenv.apply import create_env, preflight
    from gpuenv.cli.downloads import confirm_download

    preflight(plan, args.create, args.existing_ok)
    confirm_download(plan, args)
    result = create_env(plan, args.create, existing_ok=args.existing_ok)
    lines = [f"\ncreated {result.path} ({result.tool}); checking it against the plan:"]
    for check in result.checks:
        mark = {True: "ok", False: "MISMATCH", None: "unknown"}[check.ok]
        found = check.found if check.found is not None else "-"
        lines.append(f"  {mark:<8} {check.package}: planned {check.expected}, found {found}")
    verdict = "matches the plan" if result.ok else "does NOT match the plan"
    lines.append(f"{result.path} {verdict}")
    if args.json:  # stdout holds the plan document
        for text in lines:
            output.say(text)
    else:
        output.emit("\n".join(lines) + "\n")
    return EXIT_OK if result.ok else EXIT_FINDINGS
