"""`gpuenv pin` and `gpuenv unpin`: the env's own installer settings refuse GPU-package drift."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gpuenv.cli.guard_options import env_options, keep_in_history, lock_argument
from gpuenv.edges import output
from gpuenv.errors import EXIT_OK


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "pin",
        parents=[common],
        help="make the env's own installers refuse to change its GPU packages",
        description="Write the GPU-critical packages of the env (or of --lock) as constraints "
        "the installers read by themselves: a constraints file named in the env's pip.conf, "
        "[tool.uv] constraint-dependencies of a uv project, conda-meta/pinned of a conda env. "
        "`gpuenv unpin` takes back exactly what pin wrote. Exit 0: done; 2: failed.",
    )
    env_options(parser)
    lock_argument(parser, required=False)
    parser.add_argument("--dry-run", action="store_true", help="show the change; write nothing")
    parser.set_defaults(handler=run_pin)
    unpin = commands.add_parser(
        "unpin",
        parents=[common],
        help="remove exactly what gpuenv pin added",
        description="Put back the installer settings as they were before `gpuenv pin` (files "
        "pin created are removed, files it edited get their old bytes back). Exit 0: done; "
        "2: failed.",
    )
    env_options(unpin)
    unpin.add_argument("--dry-run", action="store_true", help="show the change; write nothing")
    unpin.set_defaults(handler=run_unpin)


def run_pin(args: argparse.Namespace) -> int:
    from gpuenv.guard import actions
    from gpuenv.guard import pin as pins
    from gpuenv.guard.envs import current, read_lock

    state = current(args.python, args.timeout)
    lock = read_lock(args.lock) if args.lock else state.lock
    prefix = actions.env_prefix(state.lock)
    edits = actions.pin_edits(lock, prefix)
    notes = [*_machine_notes(args.lock, lock, state.lock), *pins.unheld(state.lock, edits)]
    if not args.dry_run and edits:
        actions.apply_pin(prefix, edits)
        keep_in_history(lock, "pin", args.ui.quiet)
    _show(args, edits, "gpuenv pin", notes)
    return EXIT_OK


def run_unpin(args: argparse.Namespace) -> int:
    from gpuenv.guard import actions
    from gpuenv.guard.envs import current

    state = current(args.python, args.timeout)
    prefix = actions.env_prefix(state.lock)
    undos = actions.unpin_plan(prefix)
    if not args.dry_run:
        actions.apply_unpin(prefix, undos)
    edits = [u.edit for u in undos if u.content != u.current]
    notes = [f"{u.path}: {u.note}" for u in undos if u.note]
    _show(args, edits, "gpuenv unpin", notes)
    return EXIT_OK


def _machine_notes(path: Path | None, lock: Any, now: Any) -> list[str]:
    from gpuenv.guard.compare import compare_machines

    if path is None:
        return []
    return [
        f"{path} was verified on another machine: {c.what}" for c in compare_machines(lock, now)
    ]


def _show(args: argparse.Namespace, edits: list[Any], title: str, notes: list[str]) -> None:
    from gpuenv.render.guard import edit_dict, pin_doc
    from gpuenv.render.terminal import to_text

    if args.json:
        output.emit_json(
            {
                "schema": f"gpuenv-{title.split()[-1]}/1",
                "dry_run": args.dry_run,
                "files": [edit_dict(e) for e in edits],
                "notes": notes,
            }
        )
    elif not args.ui.quiet or args.dry_run:
        output.emit(to_text(pin_doc(edits, args.dry_run, title, notes), args.ui.terminal))
