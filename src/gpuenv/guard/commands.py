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
from gpuenv.guard.model import Lock, LockEnv
from gpuenv.guard.pin import pip_requirement

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


# Options that send an install somewhere else than the env gpuenv reads and compares with
_ELSEWHERE = {
    "pip": ("-t", "--target", "--prefix", "--root", "--user"),
    "uv": ("-p", "--python", "--system", "--target", "--prefix"),
    "conda": ("-n", "--name", "-p", "--prefix"),
}


def other_target(command: InstallCommand) -> tuple[str, str | None] | None:
    """The option (and its value) by which the install names its own target, or None."""
    args = list(command.args)
    for i, arg in enumerate(args):
        for option in _ELSEWHERE[command.installer]:
            if arg == option:
                takes = option not in ("--user", "--system")
                return option, (args[i + 1] if takes and i + 1 < len(args) else None)
            if option.startswith("--") and arg.startswith(option + "="):
                return option, arg.split("=", 1)[1]
    return None


def _names_env(args: Sequence[str]) -> bool:
    return any(
        a in ("-n", "--name", "-p", "--prefix") or a.startswith(("--name=", "--prefix="))
        for a in args
    )


def _install_head(command: InstallCommand, python: str, prefix: str | None) -> list[str]:
    """`... install` aimed at the env gpuenv read, whatever pip, uv or conda is first on PATH."""
    if command.installer == "pip":
        return [python, "-m", "pip", "install"]
    if command.installer == "uv":
        return [command.program, "pip", "install", "--python", python]
    where = [] if _names_env(command.args) or not prefix else ["--prefix", prefix]
    return [command.program, "install", *where]


def preview_argv(command: InstallCommand, python: str, prefix: str | None) -> list[str]:
    head = _install_head(command, python, prefix)
    if command.installer == "pip":
        return [*head, "--dry-run", "--quiet", "--report", "-", *command.args]
    if command.installer == "uv":
        return [*head, "--dry-run", *command.args]
    return [*head[:2], "--dry-run", "--json", *head[2:], *command.args]


def install_argv(command: InstallCommand, python: str, prefix: str | None) -> list[str]:
    head = _install_head(command, python, prefix)
    if command.installer != "conda":
        return [*head, *command.args]
    yes = [] if {"-y", "--yes"} & set(command.args) else ["--yes"]
    return [*head[:2], *yes, *head[2:], *command.args]


def safe_commands(
    command: InstallCommand,
    changes: Sequence[Change],
    target: LockEnv,
    lock: Lock,
    constraints: str | None,
) -> list[str]:
    """What to run instead, aimed at the guarded env (`target`), as guard itself would run it:
    the same install holding the GPU-critical packages where they are (a constraints file when
    the env is pinned, else their versions in `lock` as exact requirements), and the same install
    without dependencies."""
    held = [c for c in changes if c.critical and c.before is not None]
    head = _install_head(command, target.python, target.prefix)
    if command.installer == "conda":
        specs = [f"{c.name}=={c.before}" for c in held]
        return [
            shlex.join([*head, *command.args, *specs]),
            shlex.join([*head, "--no-deps", *command.args]),
        ]
    safe = []
    if constraints:
        safe.append(shlex.join([*head, *command.args, "--constraint", constraints]))
    else:
        pins = [pip_requirement(c.name, _locked_version(c, lock)) for c in held]
        safe.append(shlex.join([*head, *command.args, *pins]))
    safe.append(shlex.join([*head, "--no-deps", *command.args]))
    return safe


def allow_command(command: InstallCommand, python: str, lock_path: str | None) -> str:
    """`gpuenv guard --allow ...` for the same env (and lock) as the refused run."""
    options = ["--allow", "--python", python]
    options += ["--lock", lock_path] if lock_path else []
    return shlex.join(["gpuenv", "guard", *options, "--"]) + " " + command.text


def _locked_version(change: Change, lock: Lock) -> str:
    package = lock.package(change.name)
    return package.version if package is not None else change.before or ""
