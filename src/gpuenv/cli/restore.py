"""`gpuenv restore LOCK`: the env back to exactly its locked packages, then verified."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gpuenv.cli.guard_options import env_options, lock_argument
from gpuenv.edges import output
from gpuenv.errors import EXIT_FINDINGS, EXIT_OK, GpuenvError

if TYPE_CHECKING:
    from gpuenv.guard.model import Lock


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "restore",
        parents=[common],
        help="bring the env back to exactly its lock, then verify",
        description="Install every locked package at its locked version and variant from "
        "where it came from (without dependencies: the lock is the whole set) and remove what "
        "the lock does not have, like `uv pip sync`; the plan is shown first, then the env is "
        "read again and checked. Without --python, the env restored is the one the lock was "
        "made of. Exit 0: the env matches the lock; 1: it does not (or an installer failed); "
        "2: gpuenv failed.",
    )
    env_options(
        parser,
        "the env to restore (default: the env the lock was made of, when it is on this machine)",
    )
    lock_argument(parser, required=True)
    parser.add_argument("--dry-run", action="store_true", help="show the plan; change nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.guard import actions
    from gpuenv.guard.compare import compare_machines
    from gpuenv.guard.envs import current, read_lock
    from gpuenv.render.guard import (
        machine_lines,
        restore_dict,
        restore_doc,
        restore_result_lines,
    )
    from gpuenv.render.terminal import to_text

    lock = read_lock(args.lock)
    python = args.python or _locked_env(lock, str(args.lock))
    state = current(python, args.timeout)
    plan = actions.plan_restore(lock, state)
    machine = compare_machines(lock, state.lock)
    target = state.lock.env
    text = not args.json
    if text:
        doc = machine_lines(machine, str(args.lock)) + restore_doc(
            plan, str(args.lock), args.dry_run, target.prefix or target.python
        )
        output.emit(to_text(doc, args.ui.terminal))
    if args.dry_run or plan.nothing_to_do:
        code = EXIT_OK if plan.nothing_to_do or args.dry_run else EXIT_FINDINGS
        if args.json:
            output.emit_json(restore_dict(plan, None, machine, code, args.dry_run, target.python))
        return code
    relay = output.relay if not args.ui.quiet else (lambda _text: None)
    outcome = actions.run_restore(plan, lock, state, python, relay, args.timeout)
    code = EXIT_OK if outcome.ok else EXIT_FINDINGS
    if text:
        output.emit(to_text(restore_result_lines(outcome.results, outcome.left), args.ui.terminal))
    else:
        output.emit_json(restore_dict(plan, outcome, machine, code, False, target.python))
    return code


def _locked_env(lock: Lock, name: str) -> str:
    """Without --python, the env the lock was made of, when it is on this machine: never the
    active env or python3 by default, whose packages a restore would remove."""
    import os

    if os.path.isfile(lock.env.python):
        return str(lock.env.python)
    where = lock.env.prefix or lock.env.python
    raise GpuenvError(
        "no-env",
        f"{name} is a lock of {where}, which is not on this machine",
        hints=(f"name the env to bring to this lock: gpuenv restore --python PATH {name}",),
    )
