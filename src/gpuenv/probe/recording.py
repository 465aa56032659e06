"""Record what the probes read on a real machine, to replay it later as a RecordedMachine fixture.

`RecordingMachine` wraps a live machine: every command answered, file read and directory listed
is kept (identifiers redacted) and written as the `machine.json` of a fixture folder.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuenv.probe.access import (
    DEFAULT_TIMEOUT_S,
    GPUENV_PYTHON,
    MAX_FILE_BYTES,
    SCRIPT_KEY,
    SCRIPT_MARKER,
    CommandResult,
    FileRead,
    LiveMachine,
    MachineAccess,
)
from gpuenv.redact import redact_text


class RecordingMachine:
    def __init__(self, inner: MachineAccess | None = None, names: Iterable[str] = ()) -> None:
        self.inner = inner or LiveMachine()
        self.names = tuple(names)
        self.commands: dict[str, dict[str, Any]] = {}
        self.files: dict[str, str | None] = {}
        self.dirs: dict[str, list[str]] = {}
        self.links: dict[str, str] = {}

    def _clean(self, text: str) -> str:
        return redact_text(text, self.names)

    def _key(self, argv: Sequence[str]) -> str:
        parts = list(argv)
        if parts and parts[0] == sys.executable:
            parts[0] = GPUENV_PYTHON
        parts = [SCRIPT_KEY if p.startswith(SCRIPT_MARKER) else p for p in parts]
        return " ".join(parts)

    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        result = self.inner.run(argv, timeout, env, stdin)
        if result.not_found:
            return result
        entry: dict[str, Any] = (
            {"timed_out": True}
            if result.timed_out
            else {
                "stdout": self._clean(result.stdout),
                "stderr": self._clean(result.stderr),
                "returncode": result.returncode,
            }
        )
        self.commands[self._key(argv)] = entry
        return result

    def read_text(self, path: str, limit: int = MAX_FILE_BYTES) -> FileRead:
        read = self.inner.read_text(path, limit)
        if read.text is not None:
            self.files[path] = self._clean(read.text)
        elif read.problem == "permission denied":
            self.files[path] = None
        return read

    def list_dir(self, path: str) -> list[str] | None:
        names = self.inner.list_dir(path)
        if names is not None:
            self.dirs[path] = [self._clean(n) for n in names]
        return names

    def exists(self, path: str) -> bool:
        found = self.inner.exists(path)
        if found and path not in self.files and path not in self.dirs:
            self.dirs.setdefault(path, [])
        return found

    def realpath(self, path: str) -> str:
        real = self.inner.realpath(path)
        if real != path:
            self.links[path] = real
        return real

    def environ(self) -> Mapping[str, str]:
        return self.inner.environ()

    def system(self) -> str:
        return self.inner.system()

    def machine(self) -> str:
        return self.inner.machine()

    def fixture(self, provenance: str, description: str, env_keys: Iterable[str]) -> dict[str, Any]:
        environ = self.inner.environ()
        return {
            "provenance": provenance,
            "description": description,
            "system": self.inner.system(),
            "machine": self.inner.machine(),
            "env": {k: self._clean(environ[k]) for k in env_keys if k in environ},
            "commands": dict(sorted(self.commands.items())),
            "files": dict(sorted(self.files.items())),
            "dirs": dict(sorted(self.dirs.items())),
            "links": dict(sorted(self.links.items())),
            "expected": {},
        }

    def write(
        self, folder: Path, provenance: str, description: str, env_keys: Iterable[str]
    ) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "machine.json"
        document = self.fixture(provenance, description, env_keys)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path
