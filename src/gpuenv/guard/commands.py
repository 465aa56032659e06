"""Installer command lines: what `gpuenv guard -- ...` was given, its dry run, the real run, and
the safe alternative when the preview is refused. Pure (the running is in `guard.actions`).

The install always runs in the env gpuenv previewed: `pip` becomes `<python> -m pip`, uv gets
`--python <python>`, conda and mamba get `--prefix <env>` unless the command names an env.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from gpuenv.errors import GpuenvError
from gpuenv.guard.compare import Change
from gpuenv.guard.model import Lock

_PIP = re.compile(r"pip(3(\.\d+)?)?(\.exe)?$")
_PYTHON = re.compile(r"python(\d(\.\d+)?)?(\.exe)?$")
_CONDA = re.compile(r"(conda|mamba|micromamba)(\.exe|\.bat)?$")


@dataclass(frozen=True)
class InstallCommand:
    installer: str  # "pip" | "uv" | "conda"
    program: str  # as typed: "pip", "uv", "mamba" ...
    args: tuple[str, ...]  # the arguments after `install`

    @property
    def text(self) -> str:
        words = {
            "pip": ["pip", "install"],
            "uv": [self.program, "pip", "install"],
            "conda": [self.program, "install"],
        }[self.installer]
        return shlex.join([*words, *self.args])


def parse_command(argv: Sequence[str]) -> InstallCommand:
    """`pip install ...`, `python -m pip install ...`, `uv pip install ...`,
    `conda|mamba|micromamba install ...`."""
    words = list(argv)
    if not words:
        raise _unsupported("nothing after --")
    name = PurePath(words[0]).name.lower()
    if _PYTHON.match(name) and words[1:3] == ["-m", "pip"]:
        words = ["pip", *words[3:]]
        name = "pip"
    if _PIP.match(name) and words[1:2] == ["install"]:
        return InstallCommand("pip", words[0], tuple(words[2:]))
    if name in ("uv", "uv.exe") and words[1:3] == ["pip", "install"]:
        return InstallCommand("uv", words[0], tuple(words[3:]))
    if _CONDA.match(name) and words[1:2] == ["install"]:
        return InstallCommand("conda", words[0], tuple(words[2:]))
    raise _unsupported(shlex.join(words))


def _unsupported(what: str) -> GpuenvError:
    return GpuenvError(
        "bad-argument",
        f"gpuenv guard cannot preview {what!r}",
        hints=(
            "give an install command after --: pip install ..., uv pip install ..., "
            "conda install ... or mamba install ...",
        ),
    )


def _names_env(args: Sequence[str]) -> bool:
    return any(
        a in ("-n", "--name", "-p", "--prefix") or a.startswith(("--name=", "--prefix="))
        for a in args
    )


def preview_argv(command: InstallCommand, python: str, prefix: str | None) -> list[str]:
    if command.installer == "pip":
        return [
            python,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            "-",
            *command.args,
        ]
    if command.installer == "uv":
        return [command.program, "pip", "install", "--dry-run", "--python", python, *command.args]
    where = [] if _names_env(command.args) or not prefix else ["--prefix", prefix]
    return [command.program, "install", "--dry-run", "--json", *where, *command.args]


def install_argv(command: InstallCommand, python: str, prefix: str | None) -> list[str]:
    if command.installer == "pip":
        return [python, "-m", "pip", "install", *command.args]
    if command.installer == "uv":
        return [command.program, "pip", "install", "--python", python, *command.args]
    where = [] if _names_env(command.args) or not prefix else ["--prefix", prefix]
    yes = [] if {"-y", "--yes"} & set(command.args) else ["--yes"]
    return [command.program, "install", *yes, *where, *command.args]


def safe_commands(
    command: InstallCommand, changes: Sequence[Change], lock: Lock, constraints: str | None
) -> list[str]:
    """What to run instead: the same install holding the GPU-critical packages where they are
    (a constraints file when the env is pinned, else the locked versions as requirements), and
    the same install without dependencies."""
    held = [c for c in changes if c.critical and c.before is not None]
    safe = []
    if command.installer == "conda":
        specs = [f"{c.name}=={c.before}" for c in held]
        safe.append(shlex.join([command.program, "install", *command.args, *specs]))
        safe.append(shlex.join([command.program, "install", "--no-deps", *command.args]))
        return safe
    head = ["pip", "install"] if command.installer == "pip" else [command.program, "pip", "install"]
    if constraints:
        safe.append(shlex.join([*head, *command.args, "--constraint", constraints]))
    else:
        pins = [f"{c.name}=={_locked_version(c, lock)}" for c in held]
        safe.append(shlex.join([*head, *command.args, *pins]))
    safe.append(shlex.join([*head, "--no-deps", *command.args]))
    return safe


def _locked_version(change: Change, lock: Lock) -> str:
    package = lock.package(change.name)
    return package.version if package is not None else change.before or ""
