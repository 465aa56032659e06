"""The commands that bring an env back to its lock, as `uv pip sync` / `pip-sync` do: every
locked package at its locked version and variant, from the index, find-links folder or URL it
came from, without dependencies (the lock is the whole set), and packages the lock does not
have removed. Pure: `guard.actions.restore` shows the plan, runs it and verifies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from urllib.parse import unquote, urlparse

from gpuenv.guard.compare import Change, compare
from gpuenv.guard.model import Lock, LockedConda, LockedPackage, normalize
from gpuenv.guard.pin import pip_requirement

# Never removed by a restore: the installer running it
KEEP = frozenset({"pip"})


@dataclass(frozen=True)
class RestorePlan:
    changes: tuple[Change, ...]  # from the env now to the lock
    commands: tuple[tuple[str, ...], ...]  # argv lists, in order
    notes: tuple[str, ...] = ()  # what a restore cannot do by itself

    @property
    def nothing_to_do(self) -> bool:
        return not self.changes


def differences(now: Lock, lock: Lock) -> tuple[Change, ...]:
    """What a restore changes in the env (`now` -> `lock`), and what still differs after it:
    everything but the installer it runs with (KEEP), which the lock may lack."""
    return tuple(
        c for c in compare(now, lock) if not (c.kind == "removed" and _kept(c.name, c.conda))
    )


def _kept(name: str, conda: bool) -> bool:
    return not conda and normalize(name) in KEEP


def restore_plan(lock: Lock, now: Lock, python: str, uv: str | None = None) -> RestorePlan:
    """`uv`: the uv program to use where the env has no pip (a uv-made venv)."""
    changes = differences(now, lock)
    commands: list[tuple[str, ...]] = []
    notes: list[str] = [
        f"{c.name} {c.before} is kept: restore runs with it (the lock has none)"
        for c in compare(now, lock)
        if c.kind == "removed" and _kept(c.name, c.conda)
    ]
    if lock.conda or now.conda:
        commands += _conda_commands(lock, now, changes)
    remove = sorted(c.name for c in changes if c.kind == "removed" and not c.conda)
    wanted = [lock.package(c.name) for c in changes if not c.conda and c.kind != "removed"]
    install = [p for p in wanted if p is not None and p.source != "conda"]
    for package in wanted:
        if package is not None and package.source == "conda":
            notes.append(f"{package.name} {package.version} was installed by conda: see [[conda]]")
    use_uv = uv is not None and now.package("pip") is None
    if remove:
        commands.append(
            (uv, "pip", "uninstall", "--python", python, *remove)
            if use_uv and uv
            else (python, "-m", "pip", "uninstall", "--yes", *remove)
        )
    if install:
        requirements, options, skipped = _requirements(install)
        notes += skipped
        head = (
            (uv, "pip", "install", "--python", python)
            if use_uv and uv
            else (python, "-m", "pip", "install")
        )
        if requirements:
            commands.append((*head, "--no-deps", *options, *requirements))
    return RestorePlan(changes, tuple(commands), tuple(notes))


def _requirements(
    packages: Sequence[LockedPackage],
) -> tuple[list[str], list[str], list[str]]:
    requirements: list[str] = []
    options: list[str] = []
    notes: list[str] = []
    for package in packages:
        if package.source == "editable":
            path = _file_path(package.url)
            if path:
                requirements += ["-e", path]
            else:
                notes.append(f"{package.name}: editable install of {package.url}; reinstall it")
            continue
        if package.source == "url" and package.url:
            requirements.append(f"{package.name} @ {package.url}")
            continue
        requirements.append(pip_requirement(package.name, package.version))
        if package.source == "pytorch-index" and package.url:
            options += ["--extra-index-url", package.url]
        elif package.source == "find-links" and package.url:
            options += ["--find-links", str(PurePath(package.url).parent)]
    unique: list[str] = []
    for i in range(0, len(options), 2):
        pair = options[i : i + 2]
        if pair[1] not in unique[1::2]:
            unique += pair
    return requirements, unique, notes


def _file_path(url: str | None) -> str | None:
    if not url or not url.startswith("file:"):
        return None
    return unquote(urlparse(url).path)


def _conda_commands(lock: Lock, now: Lock, changes: Sequence[Change]) -> list[tuple[str, ...]]:
    prefix = now.env.prefix or lock.env.prefix or ""  # the env restored, wherever the lock was made
    conda_changes = [c for c in changes if c.conda]
    remove = sorted(c.name for c in conda_changes if c.kind == "removed")
    wanted = [_conda_of(lock, c.name) for c in conda_changes if c.kind != "removed"]
    specs = [_spec(p) for p in wanted if p is not None]
    commands: list[tuple[str, ...]] = []
    if remove:
        commands.append(("conda", "remove", "--yes", "--force", "--prefix", prefix, *remove))
    if specs:
        commands.append(("conda", "install", "--yes", "--no-deps", "--prefix", prefix, *specs))
    return commands


def _conda_of(lock: Lock, name: str) -> LockedConda | None:
    return next((p for p in lock.conda if p.key == name.lower()), None)


def _spec(package: LockedConda) -> str:
    channel = _channel_name(package.channel)
    build = f"={package.build}" if package.build else ""
    return f"{channel + '::' if channel else ''}{package.name}=={package.version}{build}"


def _channel_name(channel: str | None) -> str | None:
    """conda records a channel as a URL (".../conda-forge/linux-64"); the spec wants its name
    or the channel URL without the subdir."""
    if not channel:
        return None
    if "://" not in channel:
        return channel
    trimmed = channel.rstrip("/")
    last = trimmed.rsplit("/", 1)[-1]
    if last in ("noarch",) or ("-" in last and last.split("-")[0] in ("linux", "osx", "win")):
        trimmed = trimmed.rsplit("/", 1)[0]
    return trimmed
