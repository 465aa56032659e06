"""The env as a lock, now: a snapshot, pip's find-links folders, and the per-env history.

The history keeps the last locks of each env (taken by `lock`, before `guard` runs an installer
and before `restore`) outside the env, in the user's cache directory (platformdirs:
~/.cache/gpuenv on Linux, ~/Library/Caches/gpuenv on macOS, %LOCALAPPDATA%\\gpuenv\\Cache on
Windows; GPUENV_CACHE_DIR overrides it), so `gpuenv diff` can say what changed since.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from gpuenv._version import __version__
from gpuenv.edges import output, process
from gpuenv.edges.files import read_user_text
from gpuenv.errors import GpuenvError
from gpuenv.facts import Snapshot
from gpuenv.guard.build import Origins, lock_from_snapshot
from gpuenv.guard.lockfile import lock_text, parse_lock
from gpuenv.guard.model import Lock, normalize

HISTORY_KEEP = 20
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")


@dataclass(frozen=True)
class EnvNow:
    snapshot: Snapshot
    lock: Lock


def now_text() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def current(python: str | None, timeout: float = 10.0) -> EnvNow:
    """Probe the env (and the machine: driver, GPUs) and describe it as a lock."""
    from gpuenv.api import take_snapshot
    from gpuenv.kb import default_kb

    if python and (os.sep in python or "/" in python):
        python = os.path.abspath(python)  # a venv's python is a link: made absolute, not resolved
    snapshot = take_snapshot(python=python, redact=False, timeout=timeout)
    env = snapshot.python_env
    if env is None or env.python_version is None:
        problems = "; ".join(env.problems) if env is not None else "no Python environment"
        raise GpuenvError(
            "no-env",
            f"cannot read the Python environment: {problems}",
            hints=("give the env's interpreter with --python PATH",),
        )
    origins = Origins(find_links=find_links_wheels(env.interpreter, timeout))
    lock = lock_from_snapshot(snapshot, default_kb(), origins, now_text(), __version__)
    return EnvNow(snapshot, lock)


def find_links_wheels(python: str, timeout: float) -> dict[tuple[str, str], str]:
    """Wheel files in the local find-links folders the env's pip is configured with."""
    result = process.run(
        [python, "-m", "pip", "config", "list"],
        timeout=timeout,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "LC_ALL": "C"},
    )
    if not result.ok:
        return {}
    found: dict[tuple[str, str], str] = {}
    for folder in config_find_links(result.stdout):
        for path in _wheels(folder):
            match = _WHEEL.match(path.name)
            if match:
                key = (normalize(match.group("name")), match.group("version"))
                found.setdefault(key, str(path))
    return found


def config_find_links(text: str) -> list[str]:
    """Local folders named by find-links in `pip config list` output."""
    folders = []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if not key.strip().endswith(".find-links"):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            continue
        for word in " ".join(words).split():
            path = word[len("file://") :] if word.startswith("file://") else word
            if "://" not in path:
                folders.append(path)
    return folders


def _wheels(folder: str) -> list[Path]:
    try:
        return sorted(p for p in Path(folder).iterdir() if p.name.endswith(".whl"))
    except OSError:
        return []


# -- reading a lock or snapshot the user names -------------------------------------------------


def read_lock(path: Path) -> Lock:
    return parse_lock(read_user_text(path, "lock"), str(path))


def read_baseline(path: Path) -> Lock:
    """A lock file, or a snapshot JSON (`gpuenv snapshot -o`) described as a lock."""
    text = read_user_text(path, "snapshot")
    if text.lstrip().startswith("{"):
        import json

        from gpuenv.kb import default_kb
        from gpuenv.snapshot_io import snapshot_from_dict

        try:
            data = json.loads(text)
        except ValueError as exc:
            raise GpuenvError("bad-snapshot", f"{path} is not valid JSON: {exc}") from None
        snapshot = snapshot_from_dict(data, str(path))
        if snapshot.python_env is None:
            raise GpuenvError("bad-snapshot", f"{path} holds no Python environment to compare")
        return lock_from_snapshot(snapshot, default_kb(), created_at=snapshot.captured_at)
    return parse_lock(text, str(path))


# -- history -----------------------------------------------------------------------------------


def cache_root() -> Path:
    override = os.environ.get("GPUENV_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("gpuenv", appauthor=False))


def history_dir(lock: Lock) -> Path:
    where = lock.env.prefix or lock.env.python
    digest = hashlib.sha256(os.path.realpath(where).encode("utf-8", "surrogateescape")).hexdigest()
    return cache_root() / "envs" / digest[:16]


def remember(lock: Lock, reason: str) -> Path:
    """Keep `lock` in the env's history (the newest HISTORY_KEEP are kept)."""
    folder = history_dir(lock)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    output.write_tree(folder, {"prefix.txt": (lock.env.prefix or lock.env.python) + "\n"})
    path = output.write_file(folder / f"{stamp}-{reason}.lock", lock_text(lock))
    for old in history(lock)[HISTORY_KEEP:]:
        output.remove_file(old)
    return path


def history(lock: Lock) -> list[Path]:
    """The env's kept locks, newest first."""
    try:
        entries = list(history_dir(lock).iterdir())
    except OSError:
        return []
    return sorted((p for p in entries if p.name.endswith(".lock")), reverse=True)


# Kept to undo a restore, not as a state that worked: `gpuenv diff` right after a restore would
# list everything the restore put right as changes.
NOT_A_BASELINE = ("-before-restore.lock",)


def last_known(lock: Lock) -> tuple[Lock, Path] | None:
    """The newest kept lock of the env as it worked (what `gpuenv diff` compares with)."""
    for path in history(lock):
        if path.name.endswith(NOT_A_BASELINE):
            continue
        try:
            return read_lock(path), path
        except GpuenvError:
            continue
    return None
