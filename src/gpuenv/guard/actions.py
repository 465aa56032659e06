"""What `gpuenv pin`, `unpin`, `guard` and `restore` do to a real env: read its files, run its
installer (through the process gateway), write through the output gateway."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from gpuenv.edges import output, process
from gpuenv.edges.files import read_user_text
from gpuenv.errors import GpuenvError
from gpuenv.guard import pin as pins
from gpuenv.guard.commands import (
    InstallCommand,
    install_argv,
    other_target,
    preview_argv,
    safe_commands,
)
from gpuenv.guard.compare import compare, critical_changes, refused_changes
from gpuenv.guard.envs import EnvNow, current, remember
from gpuenv.guard.model import Lock
from gpuenv.guard.outcomes import GuardOutcome, RestoreOutcome
from gpuenv.guard.preview import (
    Preview,
    parse_conda_dry_run,
    parse_pip_report,
    parse_uv_dry_run,
    projected,
)
from gpuenv.guard.restore import RestorePlan, differences, restore_plan

INSTALL_TIMEOUT_S = 3600.0
PREVIEW_TIMEOUT_S = 600.0


def _read(path: Path) -> str | None:
    if not path.exists() and not path.is_symlink():
        return None
    return read_user_text(path, "config")


def env_prefix(lock: Lock) -> Path:
    if not lock.env.prefix:
        raise GpuenvError("no-env", "the env's prefix is not known; cannot pin it")
    return Path(lock.env.prefix)


# -- pin / unpin --------------------------------------------------------------------------------


def pin_edits(lock: Lock, prefix: Path) -> list[pins.FileEdit]:
    """The files pin writes for `lock` in the env at `prefix` (nothing is written here)."""
    record = prefix / pins.RECORD_NAME
    if record.exists():
        raise GpuenvError(
            "already-pinned",
            f"{prefix} is already pinned ({record})",
            hints=("run `gpuenv unpin` first, then pin again",),
        )
    if not lock.critical and not lock.critical_conda:
        return []
    edits: list[pins.FileEdit] = []
    constraints = prefix / pins.CONSTRAINTS_NAME
    if constraints.exists():
        raise GpuenvError(
            "pin-conflict", f"{constraints} exists but no pin record does; remove it first"
        )
    if lock.critical:
        edits.append(
            pins.FileEdit(str(constraints), None, pins.constraints_text(lock), "pip constraints")
        )
        conf = prefix / ("pip.ini" if os.name == "nt" else "pip.conf")
        before = _read(conf)
        reference = pins.constraint_reference(str(constraints))
        after = pins.pip_conf_with_constraint(before, reference)
        edits.append(pins.FileEdit(str(conf), before, after, "pip configuration"))
        edits += _uv_edits(lock, prefix)
    meta = prefix / "conda-meta"
    if lock.critical_conda and meta.is_dir():
        before = _read(meta / "pinned")
        after = pins.conda_pinned_with_specs(before, lock)
        edits.append(pins.FileEdit(str(meta / "pinned"), before, after, "conda pins"))
    return edits


def uv_project(lock: Lock, prefix: Path) -> Path | None:
    """The uv project whose env this is: `<project>/.venv` beside a uv.lock, pyproject.toml or
    uv.toml, for an env uv manages."""
    project = prefix.parent
    marks = [project / n for n in ("uv.lock", "pyproject.toml", "uv.toml")]
    if not any(m.is_file() for m in marks):
        return None
    if (project / "uv.lock").is_file() or lock.env.manager == "uv":
        return project
    return None


def _uv_edits(lock: Lock, prefix: Path) -> list[pins.FileEdit]:
    project = uv_project(lock, prefix)
    if project is None:
        return []
    requirements = pins.uv_constraints(lock)
    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        before = _read(pyproject) or ""
        after = pins.pyproject_with_constraints(before, requirements, str(pyproject))
        return [pins.FileEdit(str(pyproject), before, after, "uv constraints")]
    uv_toml = project / "uv.toml"
    before_uv = _read(uv_toml)
    after_uv = pins.uv_toml_with_constraints(before_uv, requirements, str(uv_toml))
    return [pins.FileEdit(str(uv_toml), before_uv, after_uv, "uv constraints")]


def apply_pin(prefix: Path, edits: Sequence[pins.FileEdit]) -> None:
    """Write the record first (so an interrupted pin can still be undone), then the files."""
    output.write_file(prefix / pins.RECORD_NAME, pins.record_text(edits))
    for edit in edits:
        _put(edit.path, edit.after)


def _put(path: str, content: str | None) -> None:
    if content is None:
        output.remove_file(path)
    else:
        output.write_file(path, content.encode("utf-8"))


def unpin_plan(prefix: Path) -> list[pins.Undo]:
    record = prefix / pins.RECORD_NAME
    if not record.exists():
        raise GpuenvError(
            "not-pinned", f"{prefix} is not pinned by gpuenv (no {pins.RECORD_NAME} there)"
        )
    edits = pins.parse_record(read_user_text(record, "config"), str(record))
    return [pins.undo(edit, _read(Path(edit.path))) for edit in reversed(edits)]


def apply_unpin(prefix: Path, undos: Sequence[pins.Undo]) -> None:
    for step in undos:
        if step.content != step.current:
            _put(step.path, step.content)
    output.remove_file(prefix / pins.RECORD_NAME)


def pinned_constraints(lock: Lock) -> str | None:
    """The env's pin constraints file, when the env is pinned."""
    if not lock.env.prefix:
        return None
    path = Path(lock.env.prefix) / pins.CONSTRAINTS_NAME
    return str(path) if path.is_file() else None


# -- running installers ---------------------------------------------------------------------------

_ERROR_LINE = re.compile(r"^(ERROR|error|CRITICAL|critical)\b|^[A-Za-z]+(Error|Exception)\b")


def installer_problem(result: process.CommandResult) -> str | None:
    """Why an installer run failed, in its own words: its first error line, not its first line
    (pip and uv begin with "Looking in links", "Using Python ... environment")."""
    if result.returncode in (0, None) or result.not_found or result.error or result.stopped:
        return result.problem()
    lines = [ln.strip() for ln in f"{result.stdout}\n{result.stderr}".splitlines() if ln.strip()]
    said = next((ln for ln in lines if _ERROR_LINE.match(ln)), lines[-1] if lines else "")
    argv = result.argv
    name = "pip" if argv[1:3] == ("-m", "pip") else Path(argv[0]).name if argv else "?"
    return f"{name} exited with {result.returncode}" + (f": {said[:300]}" if said else "")


# -- guard --------------------------------------------------------------------------------------


def preview(
    command: InstallCommand, now: Lock, timeout: float
) -> tuple[Preview | None, str | None]:
    """Ask the installer what it would do; (None, its error) when it refuses or fails."""
    argv = preview_argv(command, now.env.python, now.env.prefix)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    result = process.run(argv, timeout=timeout, env=env)
    if result.not_found or result.error:
        raise GpuenvError(
            "installer-not-found" if result.not_found else "cannot-run",
            f"cannot run {argv[0]}: {result.problem()}",
            hints=(f"install {command.program}, or give its path after --",),
        )
    if not result.ok:
        text = (result.stderr.strip() or result.stdout.strip())[-2000:]
        if command.installer == "pip" and "No module named pip" in text:
            raise GpuenvError(
                "no-pip",
                f"the env of {now.env.python} has no pip",
                hints=("an env made by uv: gpuenv guard -- uv pip install ...",),
            )
        if "no such option: --report" in text or "no such option: --dry-run" in text:
            text = "this pip is too old to preview an install (pip 22.2 or newer has --report)"
        return None, text or result.problem()
    if command.installer == "pip":
        return parse_pip_report(result.stdout), None
    if command.installer == "uv":
        return parse_uv_dry_run(result.stderr + "\n" + result.stdout), None
    return parse_conda_dry_run(result.stdout), None


_CONFLICT = re.compile(
    r"ResolutionImpossible|conflicting dependencies|No solution found|unsatisfiable"
    r"|UnsatisfiableError|conflicts? with|pinned",
    re.IGNORECASE,
)


def is_conflict(text: str) -> bool:
    """Whether an installer's error says the request conflicts with what it must keep."""
    return bool(_CONFLICT.search(text))


def guard(
    command: InstallCommand,
    python: str | None,
    baseline: Lock | None,
    allow: bool,
    on_text: Callable[[str], None],
    timeout: float = 10.0,
    lock_path: str | None = None,
) -> GuardOutcome:
    state = current(python, timeout)
    now = state.lock
    _same_target(command, now)
    base = baseline or now
    planned_env, refusal = preview(command, now, PREVIEW_TIMEOUT_S)
    outcome = GuardOutcome(command, now, base, planned_env, refusal=refusal, lock_path=lock_path)
    if planned_env is None:
        conflict = is_conflict(refusal or "")
        safe = safe_commands(command, (), now.env, base, None)[1:] if conflict else []
        return replace(outcome, refused=True, conflict=conflict, safe=tuple(safe))
    planned = compare(now, projected(now, planned_env))
    outcome = replace(outcome, planned=planned)
    if refused_changes(planned) and not allow:
        safe = safe_commands(command, planned, now.env, base, pinned_constraints(now))
        return replace(outcome, refused=True, safe=tuple(safe))
    saved = remember(now, "before-guard")
    argv = install_argv(command, now.env.python, now.env.prefix)
    result = process.run_streaming(argv, timeout=INSTALL_TIMEOUT_S, on_text=on_text)
    after = current(python, timeout).lock
    changed = compare(now, after)
    shown = {(c.name, c.after) for c in planned}
    unexpected = tuple(c for c in critical_changes(changed) if (c.name, c.after) not in shown)
    return replace(
        outcome,
        saved=str(saved),
        ran=tuple(argv),
        install_code=result.returncode,
        install_problem=installer_problem(result),
        after=after,
        changed=changed,
        drift=compare(base, after),
        unexpected=unexpected,
    )


def _same_target(command: InstallCommand, now: Lock) -> None:
    """The install must go into the env guard reads: a preview of another env compared with this
    one says nothing true (`conda install -n other`, `pip install --target`, `uv --system`)."""
    found = other_target(command)
    if found is None:
        return
    option, value = found
    conda_prefix = command.installer == "conda" and option in ("-p", "--prefix")
    here = now.env.prefix
    if conda_prefix and value and here and os.path.realpath(value) == os.path.realpath(here):
        return
    raise GpuenvError(
        "bad-argument",
        f"gpuenv guard installs into the env it reads ({now.env.prefix or now.env.python}); "
        f"the install names another target with {option}",
        hints=("name the env with gpuenv guard --python PATH -- ... and leave the option out",),
    )


# -- restore ------------------------------------------------------------------------------------


def plan_restore(lock: Lock, state: EnvNow) -> RestorePlan:
    uv = shutil.which("uv")
    return restore_plan(lock, state.lock, state.lock.env.python, uv)


def run_restore(
    plan: RestorePlan,
    lock: Lock,
    state: EnvNow,
    python: str | None,
    on_text: Callable[[str], None],
    timeout: float = 10.0,
) -> RestoreOutcome:
    remember(state.lock, "before-restore")
    results = []
    for argv in plan.commands:
        result = process.run_streaming(argv, timeout=INSTALL_TIMEOUT_S, on_text=on_text)
        results.append((argv, result.returncode, installer_problem(result)))
        if not result.ok:
            break
    after = current(python, timeout).lock
    return RestoreOutcome(plan, tuple(results), differences(after, lock))
