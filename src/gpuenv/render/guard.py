"""Terminal text and JSON for `gpuenv lock`, `pin`, `unpin`, `guard`, `diff` and `restore`."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from typing import Any

from gpuenv.guard.commands import allow_command
from gpuenv.guard.compare import Change, MachineChange, compare_machines
from gpuenv.guard.model import Lock
from gpuenv.guard.outcomes import GuardOutcome, RestoreOutcome
from gpuenv.guard.pin import FileEdit
from gpuenv.guard.restore import RestorePlan
from gpuenv.render.layout import Doc, blank, command, line, verbatim

GUARD_SCHEMA = "gpuenv-guard/1"


# -- pieces ----------------------------------------------------------------------------------------


def change_lines(changes: Sequence[Change], limit: int | None = None) -> Doc:
    doc: Doc = []
    shown = list(changes)[:limit] if limit else list(changes)
    for change in shown:
        style = "error" if change.critical else "muted"
        mark = "✗ " if change.critical else "- "
        if change.critical and change.kind == "added":  # new: nothing that works has moved
            style, mark = "warning", "+ "
        doc.append(
            line((mark, style), (change.title, None if change.critical else "muted"), indent=2)
        )
    if limit and len(changes) > limit:
        doc.append(line((f"… and {len(changes) - limit} more (-v shows all)", "muted"), indent=2))
    return doc


def machine_lines(changes: Sequence[MachineChange], lock_name: str) -> Doc:
    if not changes:
        return []
    doc: Doc = [line(("! ", "warning"), f"{lock_name} was verified on another machine:")]
    doc += [line(("- ", "warning"), c.what, indent=2) for c in changes]
    return doc


def change_dict(change: Change) -> dict[str, Any]:
    return {**dataclasses.asdict(change), "title": change.title}


def lock_dict(lock: Lock) -> dict[str, Any]:
    return dataclasses.asdict(lock)


def edit_dict(edit: FileEdit) -> dict[str, Any]:
    return {
        "path": edit.path,
        "what": edit.what,
        "existed": edit.before is not None,
        "removed": edit.after is None,
        "diff": edit.diff(),
    }


# -- lock ----------------------------------------------------------------------------------------


def lock_doc(lock: Lock, written: str | None, verbose: bool) -> Doc:
    env = lock.env
    doc: Doc = [
        line(
            ("gpuenv lock", "heading"), f" {env.prefix or env.python} (Python {env.python_version})"
        ),
        blank(),
    ]
    critical = lock.critical
    doc.append(
        line(
            f"{len(lock.packages)} distributions, {len(critical)} GPU-critical"
            + (
                f"; {len(lock.conda)} conda packages, {len(lock.critical_conda)} GPU-critical"
                if lock.conda
                else ""
            )
            + ":"
        )
    )
    for p in critical:
        where = p.source + (f" {p.url}" if p.url and verbose else "")
        archs = f", {len(p.sass)} SASS archs" if p.sass else ""
        doc.append(
            line(
                ("✓ ", "ok"),
                f"{p.name} {p.version}",
                (f"  {p.why}; {where}{archs}", "muted"),
                indent=2,
            )
        )
    for c in lock.critical_conda:
        doc.append(
            line(
                ("✓ ", "ok"),
                f"{c.name} {c.version} {c.build or ''}",
                (f"  {c.channel or ''}", "muted"),
                indent=2,
            )
        )
    machine = lock.machine
    gpus = ", ".join(f"{g.name} ({g.compute_capability})" for g in machine.gpus) or "no GPU seen"
    doc += [blank(), line(("verified on: ", "muted"), f"driver {machine.driver or 'none'}; {gpus}")]
    if written:
        doc.append(line(("written to: ", "muted"), written))
    return doc


# -- pin -----------------------------------------------------------------------------------------


def pin_doc(edits: Sequence[FileEdit], dry_run: bool, title: str, notes: Sequence[str] = ()) -> Doc:
    doc: Doc = [line((title, "heading")), blank()]
    if not edits:
        doc.append(line("Nothing to change."))
    for edit in edits:
        verb = "create" if edit.before is None else "remove" if edit.after is None else "edit"
        doc.append(
            line(
                ("would " if dry_run else "") + f"{verb} {edit.path}", (f"  ({edit.what})", "muted")
            )
        )
        if dry_run:
            doc += [verbatim(text, indent=2) for text in edit.diff().splitlines()]
    doc += [line(("! ", "warning"), note) for note in notes]
    if dry_run and edits:
        doc += [blank(), line("Nothing was written (--dry-run).")]
    return doc


# -- diff ----------------------------------------------------------------------------------------


def diff_doc(
    changes: Sequence[Change],
    machine: Sequence[MachineChange],
    against: str,
    verbose: bool,
) -> Doc:
    doc: Doc = [line(("gpuenv diff", "heading"), f" against {against}"), blank()]
    doc += machine_lines(machine, against)
    if not changes:
        doc.append(line(("✓ ", "ok"), "No package changed."))
        return doc
    critical = sum(c.critical for c in changes)
    doc.append(
        line(f"{len(changes)} change(s), {critical} GPU-critical, most consequential first:")
    )
    doc += change_lines(changes, None if verbose else 40)
    return doc


# -- guard ---------------------------------------------------------------------------------------


def _foreign(outcome: GuardOutcome) -> tuple[MachineChange, ...]:
    """How the machine differs from the one --lock was verified on (nothing without --lock)."""
    if outcome.baseline is outcome.before:
        return ()
    return compare_machines(outcome.baseline, outcome.before)


def guard_doc(outcome: GuardOutcome, verbose: bool) -> Doc:
    doc: Doc = [line(("gpuenv guard", "heading"), " " + outcome.command.text), blank()]
    doc += machine_lines(_foreign(outcome), outcome.lock_path or "the lock")
    if outcome.refusal:
        why = "refuses the install:" if outcome.conflict else "could not preview the install:"
        doc.append(line(("✗ ", "error"), f"{outcome.command.installer} {why}"))
        doc += [verbatim(text, indent=2) for text in outcome.refusal.splitlines()[-12:]]
    elif outcome.planned:
        doc.append(line(f"{outcome.command.installer} would change:"))
        doc += change_lines(outcome.planned, None if verbose else 40)
    else:
        doc.append(line(("✓ ", "ok"), "The preview changes nothing installed."))
    if outcome.refused:
        if not outcome.refusal:
            doc += [
                blank(),
                line(
                    ("✗ ", "error"),
                    "Refused: a GPU-critical package would change. Nothing was installed.",
                ),
            ]
        else:
            doc += [blank(), line("Nothing was installed.")]
        if outcome.refusal and outcome.conflict:
            doc.append(line("It conflicts with what the env must keep (its pin or its lock)."))
        if outcome.safe:
            doc += [blank(), line("Instead, keep the GPU packages where they are:")]
            doc += [command(text, indent=2) for text in outcome.safe]
        if not outcome.refusal:
            allow = allow_command(outcome.command, outcome.before.env.python, outcome.lock_path)
            doc += [blank(), line("Or go on anyway:"), command(allow, indent=2)]
        return doc
    doc += [blank(), line(("ran: ", "muted"), " ".join(outcome.ran))]
    if outcome.install_problem:
        doc.append(line(("✗ ", "error"), f"the installer failed: {outcome.install_problem}"))
        doc.append(line("The env is as the installer left it. This install changed:"))
        doc += change_lines(outcome.changed) or [line("nothing", indent=2)]
    elif outcome.unexpected:
        doc.append(line(("✗ ", "error"), "GPU-critical changes the preview did not show:"))
        doc += change_lines(outcome.unexpected)
    else:
        critical = [c for c in outcome.changed if c.critical]
        if any(c.kind != "added" for c in critical):
            told = f"{len(critical)} GPU-critical change(s), as previewed and allowed (--allow)."
        elif critical:
            told = f"{len(critical)} new GPU-critical package(s), as previewed."
        else:
            told = "no GPU-critical package changed."
        doc.append(line(("✓ ", "ok"), "Checked after the install: " + told))
        doc += change_lines(critical)
    drift = [c for c in outcome.drift if c.critical]
    if outcome.baseline is not outcome.before and drift:
        doc += [blank(), line(("! ", "warning"), "Against the lock, GPU-critical changes:")]
        doc += change_lines(drift)
    if outcome.changed and not outcome.ok and outcome.saved:
        undo = f"gpuenv restore --python {shlex.quote(outcome.before.env.python)} "
        doc += [blank(), line("To undo it (the env as it was before, kept by gpuenv):")]
        doc.append(command(undo + shlex.quote(outcome.saved), indent=2))
    return doc


def guard_dict(outcome: GuardOutcome, code: int) -> dict[str, Any]:
    preview = outcome.preview
    return {
        "schema": GUARD_SCHEMA,
        "exit_code": code,
        "command": list(outcome.command.args),
        "installer": outcome.command.installer,
        "refused": outcome.refused,
        "installer_refusal": outcome.refusal,
        "conflict": outcome.conflict,
        "preview": None
        if preview is None
        else {
            "install": [dataclasses.asdict(p) for p in preview.install],
            "remove": [dataclasses.asdict(p) for p in preview.remove],
        },
        "planned_changes": [change_dict(c) for c in outcome.planned],
        "safe_commands": list(outcome.safe),
        "saved": outcome.saved,
        "ran": list(outcome.ran),
        "install_exit_code": outcome.install_code,
        "install_problem": outcome.install_problem,
        "changes": [change_dict(c) for c in outcome.changed],
        "changes_since_lock": [change_dict(c) for c in outcome.drift],
        "unexpected": [change_dict(c) for c in outcome.unexpected],
        "machine_changes": [m.what for m in _foreign(outcome)],
    }


# -- restore -------------------------------------------------------------------------------------


def restore_doc(plan: RestorePlan, lock_name: str, dry_run: bool, env: str = "") -> Doc:
    doc: Doc = [line(("gpuenv restore", "heading"), f" {lock_name}")]
    doc += [line(("env: ", "muted"), env)] if env else []
    doc.append(blank())
    if plan.nothing_to_do:
        doc.append(line(("✓ ", "ok"), "The env already matches the lock."))
        return doc
    doc.append(line("To match the lock (now → locked):"))
    doc += change_lines([_reverse(c) for c in plan.changes])
    doc += [blank(), line("Commands" + (" (not run: --dry-run):" if dry_run else ":"))]
    doc += [command(" ".join(argv), indent=2) for argv in plan.commands]
    doc += [line(("! ", "warning"), note) for note in plan.notes]
    return doc


def _reverse(change: Change) -> Change:
    """A change from the env to the lock, told as what restore does to the env."""
    if change.kind == "added":
        return dataclasses.replace(change, what="will be installed")
    if change.kind == "removed":
        return dataclasses.replace(change, what="will be removed (not in the lock)")
    return change


def restore_result_lines(
    results: Sequence[tuple[Sequence[str], int | None, str | None]], left: Sequence[Change]
) -> Doc:
    doc: Doc = [blank()]
    for _argv, _code, problem in results:
        if problem:
            doc.append(line(("✗ ", "error"), f"failed: {problem}"))
    if left:
        doc.append(line(("✗ ", "error"), "Still different from the lock:"))
        doc += change_lines(left)
    else:
        doc.append(line(("✓ ", "ok"), "Verified: the env matches the lock."))
    return doc


def restore_dict(
    plan: RestorePlan,
    outcome: RestoreOutcome | None,
    machine: Sequence[MachineChange],
    code: int,
    dry_run: bool,
    python: str | None = None,
) -> dict[str, Any]:
    return {
        "schema": "gpuenv-restore/1",
        "exit_code": code,
        "python": python,
        "dry_run": dry_run,
        "changes": [change_dict(c) for c in plan.changes],
        "commands": [list(argv) for argv in plan.commands],
        "notes": list(plan.notes),
        "machine_changes": [m.what for m in machine],
        "results": [
            {"command": list(argv), "exit_code": rc, "problem": problem}
            for argv, rc, problem in (outcome.results if outcome else ())
        ],
        "still_different": [change_dict(c) for c in (outcome.left if outcome else ())],
    }
