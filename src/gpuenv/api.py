"""The library API the CLI is thin over: take a snapshot (here, from a file, or what-if)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuenv.diagnose.findings import Diagnosis
from gpuenv.errors import GpuenvError
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase, default_kb
from gpuenv.probe.access import MachineAccess
from gpuenv.whatif import WhatIf, apply_what_if

if TYPE_CHECKING:
    from gpuenv.check.model import CheckReport


PROBE_TIMEOUT_S = 10.0  # each external command a probe runs (the target interpreter: 3 times)


def take_snapshot(
    *,
    from_file: Path | None = None,
    python: str | None = None,
    what_if: WhatIf | None = None,
    redact: bool = True,
    timeout: float = PROBE_TIMEOUT_S,
    machine: MachineAccess | None = None,
    kb: KnowledgeBase | None = None,
) -> Snapshot:
    """Facts about a machine: probed (this one, or `machine`), or read from `from_file`;
    then what-if flags applied and identifiers redacted.

    `timeout` bounds each external command; the script run in the target interpreter, which
    reads every installed distribution, gets three times as long."""
    from gpuenv.redact import redact_snapshot

    if not (math.isfinite(timeout) and timeout > 0):
        raise GpuenvError("bad-argument", f"timeout {timeout!r}: expected seconds above 0")
    if python is not None and not python.strip():
        raise GpuenvError("bad-argument", "--python is empty: give the path of an interpreter")
    if from_file is not None:
        from gpuenv.snapshot_io import read_snapshot

        snapshot = read_snapshot(from_file)
    else:
        from gpuenv.probe.run import ProbeOptions, here_names, probe_machine

        options = ProbeOptions(
            interpreter=python, command_timeout=timeout, python_timeout=3 * timeout
        )
        snapshot = probe_machine(machine, options)
        if redact:
            snapshot = redact_snapshot(snapshot, here_names())
    if what_if is not None and what_if.any:
        snapshot = apply_what_if(snapshot, what_if, kb or default_kb())
    return snapshot


def doctor(snapshot: Snapshot, kb: KnowledgeBase | None = None) -> Diagnosis:
    """The stack floor by floor and the findings (what `gpuenv doctor` prints)."""
    from gpuenv.diagnose import diagnose

    return diagnose(snapshot, kb or default_kb())


def check_env(
    snapshot: Snapshot | None = None,
    *,
    python: str | None = None,
    frameworks: Sequence[str] | None = None,
    device: int | None = None,
    timeout: float | None = None,
    bench: bool = False,
    kb: KnowledgeBase | None = None,
    progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Prove the GPU works from each framework in the env (what `gpuenv check` prints): each
    framework's checks in a child process of the env's interpreter, `timeout` seconds each
    (default 180). The env is read first, each command for at most 10 s (or `timeout`, when
    shorter; the interpreter three times as long).

    `snapshot` must be of this machine (it says which frameworks the env holds and which GPUs
    the driver lists); by default one is taken of `python`'s env."""
    from gpuenv.check.runner import DEFAULT_TIMEOUT_S, CheckOptions, run_check

    kb = kb or default_kb()
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    if snapshot is None:  # a short --timeout bounds reading the env too, not only the checks
        probe_timeout = min(PROBE_TIMEOUT_S, timeout)
        snapshot = take_snapshot(python=python, redact=False, kb=kb, timeout=probe_timeout)
    chosen = tuple(frameworks) if frameworks is not None else None
    options = CheckOptions(frameworks=chosen, device=device, timeout=timeout, bench=bench)
    return run_check(snapshot, options, kb, progress)


def what_if_from_args(args: argparse.Namespace) -> WhatIf:
    return WhatIf(
        driver=args.driver,
        gpus=tuple(args.gpu or ()),
        python_version=args.python_version,
        platform=args.platform,
        jetpack=args.jetpack,
    )


def load_target(args: argparse.Namespace) -> Snapshot:
    """The snapshot a command's target options describe. An interpreter named with --python
    that cannot be run or read is an error (exit 2): a check with a typo must not pass."""
    snapshot = take_snapshot(
        from_file=args.from_file,
        python=args.python,
        what_if=what_if_from_args(args),
        redact=not getattr(args, "no_redact", False),
        timeout=args.timeout,
    )
    if args.python and args.from_file is None:
        require_readable_target(snapshot, args.python)
    return snapshot


def require_readable_target(snapshot: Snapshot, python: str) -> None:
    env = snapshot.python_env
    problems = env.problems if env else ("it was not probed",)
    unreadable = env is None or env.python_version is None or _too_old(env.python_version)
    if unreadable:
        raise GpuenvError(
            "target-unreadable",
            f"the target interpreter {python} cannot be read: {'; '.join(problems) or 'unknown'}",
            hints=("give the path of the environment's Python (3.6 or newer) with --python",),
        )


def _too_old(version: str) -> bool:
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) < (3, 6)
    except ValueError:
        return False
