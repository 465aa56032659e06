"""What `guard` and `restore` did, as data for the renderers. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from gpuenv.guard.commands import InstallCommand
from gpuenv.guard.compare import Change
from gpuenv.guard.model import Lock
from gpuenv.guard.preview import Preview
from gpuenv.guard.restore import RestorePlan


@dataclass(frozen=True)
class GuardOutcome:
    command: InstallCommand
    before: Lock  # the env before
    baseline: Lock  # what the result is checked against (the lock, else the env before)
    preview: Preview | None = None
    planned: tuple[Change, ...] = ()  # env before -> env the installer would leave
    refused: bool = False
    refusal: str | None = None  # why the installer's dry run failed (its error text)
    conflict: bool = False  # it failed on conflicting requirements (a pin, the lock)
    safe: tuple[str, ...] = ()
    saved: str | None = None  # the env's lock kept in its history just before the install
    ran: tuple[str, ...] = ()  # the install command run
    install_code: int | None = None
    install_problem: str | None = None
    after: Lock | None = None
    changed: tuple[Change, ...] = ()  # what this install changed (env before -> after)
    drift: tuple[Change, ...] = ()  # the lock (baseline) -> the env after
    # GPU-critical changes of this install (env before -> after) that the preview did not show
    unexpected: tuple[Change, ...] = ()
    lock_path: str | None = None  # --lock, as given

    @property
    def ok(self) -> bool:
        return (
            not self.refused
            and self.install_problem is None
            and not self.unexpected
            and self.refusal is None
        )


@dataclass(frozen=True)
class RestoreOutcome:
    plan: RestorePlan
    results: tuple[tuple[tuple[str, ...], int | None, str | None], ...] = ()  # argv, code, why
    left: tuple[Change, ...] = ()  # what still differs after the restore

    @property
    def ok(self) -> bool:
        return not self.left and all(problem is None for _, _, problem in self.results)
