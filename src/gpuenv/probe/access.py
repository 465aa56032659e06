"""The probes' only door to the machine: commands, files and environment variables.

Probes receive a `MachineAccess`; `LiveMachine` is the real one, `RecordedMachine` answers from a
recorded machine fixture (commands answered, files read, environment). Every command runs as an argv
list, without a shell, with a timeout and LC_ALL=C; a command that does not answer in time becomes a
`CommandResult` with `timed_out=True`, never a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

DEFAULT_TIMEOUT_S = 10.0
MAX_FILE_BYTES = 4 * 1024 * 1024
# What a command may print on each stream; one that prints more is stopped and its output cut.
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
_CHUNK = 64 * 1024
# How a recorded machine names gpuenv's own interpreter (children run `sys.executable -m ...`)
GPUENV_PYTHON = "{gpuenv-python}"
# The target-interpreter script starts with this line; recorded machines key it as SCRIPT_KEY.
SCRIPT_MARKER = "# gpuenv-target-probe"
SCRIPT_KEY = "{target-script}"


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when it did not run to the end (timeout, not found)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    not_found: bool = False
    error: str | None = None  # OSError text when it could not start
    elapsed_s: float = 0.0
    overflow: bool = False  # printed more than MAX_OUTPUT_BYTES: stopped, output cut there

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.overflow

    def problem(self) -> str | None:
        """A one-line reason when the command did not answer normally."""
        name = self.argv[0] if self.argv else "?"
        if self.not_found:
            return f"{name} not found"
        if self.timed_out:
            return f"{name} timed out after {self.elapsed_s:.0f} s"
        if self.overflow:
            return f"{name} printed more than {MAX_OUTPUT_BYTES // (1024 * 1024)} MiB; stopped"
        if self.error:
            return f"{name} could not start: {self.error}"
        if self.returncode != 0:
            first = (self.stdout.strip() or self.stderr.strip()).splitlines()[:1]
            return f"{name} exited with {self.returncode}" + (f": {first[0]}" if first else "")
        return None


@dataclass(frozen=True)
class FileRead:
    path: str
    text: str | None
    problem: str | None = None  # "not found", "permission denied", "not text" ...


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
    """This machine, for real."""

    output_limit = MAX_OUTPUT_BYTES  # bytes kept of each stream of a command

    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT_S,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        args = tuple(argv)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_c_locale_env(env),
                start_new_session=True,
            )
        except FileNotFoundError:
            return CommandResult(args, None, not_found=True)
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
            return CommandResult(args, None, error=_start_error(args[0], exc))
        data = stdin.encode() if stdin is not None else None
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            out, err, finished, overflow = _collect(proc, data, timeout, self.output_limit)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
        if not finished:
            return CommandResult(args, None, timed_out=True, elapsed_s=time.monotonic() - start)
        return CommandResult(
            args,
            proc.returncode,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            elapsed_s=time.monotonic() - start,
            overflow=overflow,
        )

    def read_text(self, path: str, limit: int = MAX_FILE_BYTES) -> FileRead:
        try:
            with open(path, "rb") as handle:
                data = handle.read(limit)
        except FileNotFoundError:
            return FileRead(path, None, "not found")
        except PermissionError:
            return FileRead(path, None, "permission denied")
        except OSError as exc:
            return FileRead(path, None, f"unreadable: {exc.strerror or exc}")
        # /proc/device-tree strings end in NUL; a NUL anywhere else means binary
        if b"\x00" in data.rstrip(b"\x00")[:4096]:
            return FileRead(path, None, "not a text file")
        data = data.rstrip(b"\x00")
        return FileRead(path, data.decode("utf-8", "replace"))

    def list_dir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def realpath(self, path: str) -> str:
        try:
            return os.path.realpath(path)
        except (OSError, RuntimeError):  # symlink loops on some Pythons
            return path

    def environ(self) -> Mapping[str, str]:
        return dict(os.environ)

    def system(self) -> str:
        return platform.system()

    def machine(self) -> str:
        return platform.machine()


# Commands LiveMachine is waiting for, so that an interrupted probe can stop them at once
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


def stop_running_commands() -> None:
    """Kill every command a LiveMachine is waiting for: after Ctrl-C, the threads that wait for
    them must not sit out their timeouts (each runs in its own session, out of the terminal's
    reach)."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for proc in running:
        _signal_group(proc)


def _collect(
    proc: subprocess.Popen[bytes], data: bytes | None, timeout: float, limit: int
) -> tuple[bytes, bytes, bool, bool]:
    """Like `communicate`, but keeps at most `limit` bytes of each stream: a command that prints
    more is killed (with its process group) instead of filling memory. Returns stdout, stderr,
    whether it ended (with its output read) within `timeout`, and whether it printed too much."""
    too_much = threading.Event()
    sinks = (bytearray(), bytearray())

    def pump(stream: IO[bytes], sink: bytearray) -> None:
        read = getattr(stream, "read1", stream.read)  # read1: what is there, without waiting
        with contextlib.suppress(OSError, ValueError):
            for block in iter(lambda: read(_CHUNK), b""):
                room = limit - len(sink)
                sink += block[:room]
                if len(block) > room:
                    too_much.set()
                    _signal_group(proc)
                    return

    workers = [
        threading.Thread(target=pump, args=(stream, sink), daemon=True)
        for stream, sink in ((proc.stdout, sinks[0]), (proc.stderr, sinks[1]))
        if stream is not None
    ]
    if data is not None and proc.stdin is not None:
        workers.append(threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True))
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + timeout
    finished = True
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        finished = False
    except BaseException:  # Ctrl-C: the command is in its own session and would live on
        _kill_group(proc)
        raise
    for worker in workers:  # a child left behind may hold the pipes open past the deadline
        worker.join(max(deadline - time.monotonic(), 0) if finished else 0)
    if not finished or any(w.is_alive() for w in workers):
        finished = False
        _kill_group(proc)
        for worker in workers:
            worker.join(2)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()
    # a command stopped for printing too much did end, by our hand
    return bytes(sinks[0]), bytes(sinks[1]), finished or too_much.is_set(), too_much.is_set()


def _feed(pipe: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)
        pipe.close()


def _signal_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, 9)
    except (OSError, AttributeError):  # Windows has no process groups to signal
        with contextlib.suppress(OSError):
            proc.kill()


def _start_error(program: str, exc: Exception) -> str:
    if isinstance(exc, PermissionError) and os.path.isdir(program):
        return "it is a directory, not a program"
    if isinstance(exc, PermissionError) and not os.access(program, os.X_OK):
        return "it is not executable (no execute permission)"
    return str(exc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=2)


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
