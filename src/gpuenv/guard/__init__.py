"""Keep a working env working: lock, pin, guard, diff, restore (docs/guard.md).

Pure (facts in, data out): `model` (the Lock), `build` (a lock from a snapshot), `lockfile` (TOML),
`compare`, `pin` (installer setting edits), `preview` (dry-run readers), `commands`, `restore`
(plans), `outcomes`. Touching the machine: `envs` (the env now as a lock, the per-env history) and
`actions` (pin/unpin files, running installers through the process gateway).
"""

from __future__ import annotations

from gpuenv.guard.build import lock_from_snapshot
from gpuenv.guard.compare import Change, MachineChange, compare, compare_machines
from gpuenv.guard.lockfile import lock_text, parse_lock
from gpuenv.guard.model import Lock, LockedConda, LockedPackage

__all__ = [
    "Change",
    "Lock",
    "LockedConda",
    "LockedPackage",
    "MachineChange",
    "compare",
    "compare_machines",
    "lock_from_snapshot",
    "lock_text",
    "parse_lock",
]
