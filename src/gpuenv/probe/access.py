"""The probes' only door to the machine: commands, files and environment variables.

Probes receive a `MachineAccess`; `LiveMachine` is the real one, `RecordedMachine` answers from a
recorded machine fixture (commands answered, files read, environment). Every command runs as an
argv list, without a shell, with a timeout and LC_ALL=C, through the process gateway
(gpuenv.edges.process): a command that does not answer in time becomes a `CommandResult` with
`timed_out=True`, never a hang. Files are read through the file-reading gateway: regular files
only, bounded.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpuenv.edges import process
from gpuenv.edges.files import LIMITS, FileRead, read_fact
from gpuenv.edges.process import DEFAULT_KEEP, CommandResult

__all__ = ["CommandResult", "FileRead", "LiveMachine", "MachineAccess", "RecordedMachine"]

DEFAULT_TIMEOUT_S = 10.0
MAX_FILE_BYTES = LIMITS["probe"]
# How a recorded machine names gpuenv's own interpreter (children run `sys.executable -m ...`)
GPUENV_PYTHON = "{gpuenv-python}"
# The target-interpreter script starts with this line; recorded machines key it as SCRIPT_KEY.
SCRIPT_MARKER = "# gpuenv-target-probe"
SCRIPT_KEY = "{target-script}"


class MachineAccess(Protocol):
    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult: ...

    def read_text(self, path: str, limit: int = MAX_FILE_BYTES) -> FileRead: ...

    def list_dir(self, path: str) -> list[str] | None: ...

    def exists(self, path: str) -> bool: ...

    def realpath(self, path: str) -> str: ...

    def environ(self) -> Mapping[str, str]: ...

    def system(self) -> str: ...  # platform.system(): "Linux", "Windows", "Darwin"

    def machine(self) -> str: ...  # platform.machine()


def _c_locale_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    if extra:
        env.update(extra)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    return env


class LiveMachine:
    """This machine, for real: commands through the process gateway, files through the
    file-reading gateway."""

    keep = DEFAULT_KEEP  # bytes kept of each stream of a command (head and tail)

    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
        return process.run(
            argv, timeout=timeout, env=_c_locale_env(env), stdin=data, keep=self.keep
        )

    def read_text(self, path: str, limit: int = MAX_FILE_BYTES) -> FileRead:
        return read_fact(path, limit)

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except (OSError, ValueError):
            return None

    def exists(self, path: str) -> bool:
        try:
            return os.path.exists(path)
        except ValueError:
            return False

    def realpath(self, path: str) -> str:
        try:
            return os.path.realpath(path)
        except (OSError, RuntimeError, ValueError):  # symlink loops on some Pythons
            return path

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ)

    def system(self) -> str:
        return platform.system()

    def machine(self) -> str:
        return platform.machine()


def stop_running_commands() -> None:
    """Kill every running command and start no new one (Ctrl-C, SIGTERM)."""
    process.stop_all()


@dataclass
class RecordedMachine:
    """A machine described by a fixture: what each command printed, what each file held.

    Commands are keyed by their argv joined with single spaces; the program may be given by its
    base name ("nvidia-smi ..."), gpuenv's own interpreter as "{gpuenv-python}" and the target
    script as "{target-script}". An unrecorded command is "not found" and an unrecorded file is
    missing: a fixture says exactly what the machine had. `files/` beside machine.json holds
    longer files at their absolute paths.
    """

    commands: dict[str, dict[str, object]] = field(default_factory=dict)
    files: dict[str, str | None] = field(default_factory=dict)
    dirs: dict[str, list[str]] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    system_name: str = "Linux"
    machine_name: str = "x86_64"

    @classmethod
    def load(cls, folder: Path) -> RecordedMachine:
        """Read `machine.json` (see CONTRIBUTING.md: recording a machine) and its files/ tree."""
        spec = json.loads((folder / "machine.json").read_text(encoding="utf-8"))
        files: dict[str, str | None] = dict(spec.get("files", {}))
        files_dir = folder / "files"
        if files_dir.is_dir():
            for item in files_dir.rglob("*"):
                if item.is_file():
                    files["/" + item.relative_to(files_dir).as_posix()] = item.read_text(
                        encoding="utf-8", errors="replace"
                    )
        return cls(
            commands=dict(spec.get("commands", {})),
            files=files,
            dirs={k: list(v) for k, v in spec.get("dirs", {}).items()},
            links=dict(spec.get("links", {})),
            env=dict(spec.get("env", {})),
            system_name=str(spec.get("system", "Linux")),
            machine_name=str(spec.get("machine", "x86_64")),
        )

    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        args = tuple(argv)
        answer = self._answer(args)
        if answer is None:
            return CommandResult(args, None, not_found=True)
        if answer.get("timed_out"):
            return CommandResult(args, None, timed_out=True, elapsed_s=timeout)
        code = answer.get("returncode", 0)
        return CommandResult(
            args,
            int(code) if isinstance(code, int) else None,
            stdout=str(answer.get("stdout", "")),
            stderr=str(answer.get("stderr", "")),
        )

    def _answer(self, args: tuple[str, ...]) -> dict[str, object] | None:
        """Exact argv first, then argv[0] by its base name, then gpuenv's own interpreter."""
        if not args:
            return None
        rest = [SCRIPT_KEY if a.startswith(SCRIPT_MARKER) else a for a in args[1:]]
        keys = [[args[0], *rest], [os.path.basename(args[0].replace("\\", "/")), *rest]]
        if args[0] == sys.executable:
            keys.append([GPUENV_PYTHON, *rest])
        for key in keys:
            answer = self.commands.get(" ".join(key))
            if answer is not None:
                return answer
        return None

    def read_text(self, path: str, limit: int = MAX_FILE_BYTES) -> FileRead:
        if path not in self.files:
            return FileRead(path, None, "not found")
        text = self.files[path]
        if text is None:
            return FileRead(path, None, "permission denied")
        return FileRead(path, text[:limit])

    def list_dir(self, path: str) -> list[str] | None:
        if path in self.dirs:
            return sorted(self.dirs[path])
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix) :].split("/")[0] for p in self.files if p.startswith(prefix)}
        names |= {p[len(prefix) :].split("/")[0] for p in self.dirs if p.startswith(prefix)}
        return sorted(n for n in names if n) or None

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.links or self.list_dir(path) is not None

    def realpath(self, path: str) -> str:
        return self.links.get(path, path)

    def environ(self) -> Mapping[str, str]:
        return dict(self.env)

    def system(self) -> str:
        return self.system_name

    def machine(self) -> str:
        return self.machine_name
