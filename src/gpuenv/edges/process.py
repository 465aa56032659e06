"""The process gateway: every child gpuenv runs goes through `run` or `run_streaming`.

- argv lists, never a shell;
- each child leads its own process group (its own session), so the whole group can be killed and
  a terminal's Ctrl-C does not reach it behind gpuenv's back;
- output is read against a deadline, never "read to EOF, then wait": a descendant that keeps the
  pipe open (`setsid sleep 300 &`) costs at most a short grace after the child itself exits;
- at the deadline, on Ctrl-C or SIGTERM (`stop_all`), the whole group is killed;
- what is kept of each stream is bounded: a head and a tail, with the number of bytes cut between.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_KEEP = 16 * 1024 * 1024  # bytes kept of each stream: the head, then the tail
TAIL_BYTES = 1024 * 1024
# After the child exits, how long a descendant may go on writing into its pipes before gpuenv
# stops listening (it is then killed with the group, or abandoned if it left the group).
EXIT_GRACE_S = 0.2
# ... and how long at most, even while output keeps coming (a descendant that left the group
# and never stops writing would otherwise hold gpuenv until the deadline).
EXIT_DRAIN_S = 2.0
_READ = 64 * 1024
_POLL_S = 0.1  # how often a wait looks at the stop flag and the child's exit


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when it did not run to the end (timeout, not found, stopped)
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    not_found: bool = False
    error: str | None = None  # why it could not start
    elapsed_s: float = 0.0
    cut_bytes: int = 0  # bytes of output dropped between the kept head and tail
    stopped: bool = False  # killed because gpuenv was interrupted (Ctrl-C, SIGTERM)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.stopped

    def problem(self) -> str | None:
        """A one-line reason when the command did not answer normally."""
        name = self.argv[0] if self.argv else "?"
        if self.not_found:
            return f"{name} not found"
        if self.stopped:
            return f"{name} was stopped (gpuenv was interrupted)"
        if self.timed_out:
            return f"{name} timed out after {self.elapsed_s:.0f} s"
        if self.error:
            return f"{name} could not start: {self.error}"
        if self.returncode != 0:
            first = (self.stdout.strip() or self.stderr.strip()).splitlines()[:1]
            return f"{name} exited with {self.returncode}" + (
                f": {first[0][:300]}" if first else ""
            )
        return None


class _Kept:
    """A stream's bytes: the first `keep - TAIL_BYTES`, then a rolling tail; the rest counted."""

    def __init__(self, keep: int) -> None:
        self.tail_size = min(TAIL_BYTES, keep // 4)
        self.head_size = keep - self.tail_size
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0

    def add(self, block: bytes) -> None:
        room = self.head_size - len(self.head)
        if room > 0:
            self.head += block[:room]
            block = block[room:]
        if not block:
            return
        self.tail += block
        extra = len(self.tail) - self.tail_size
        if extra > 0:
            self.cut += extra
            del self.tail[:extra]

    def text(self) -> str:
        if not self.cut:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        marker = f"\n[gpuenv: {self.cut} bytes of output cut here]\n"
        head = bytes(self.head).decode("utf-8", "replace")
        return head + marker + bytes(self.tail).decode("utf-8", "replace")


# -- the running children, so that an interrupt can stop them all --------------------------------

# each running child: its argv, when it started, and whether its output is relayed as it comes
_RUNNING: dict[subprocess.Popen[bytes], tuple[tuple[str, ...], float, bool]] = {}
_LOCK = threading.Lock()
_STOPPING = threading.Event()


def stop_all() -> None:
    """Kill every running child's group now and refuse new children: after Ctrl-C or SIGTERM,
    threads waiting for commands must not sit out their timeouts, nor start the next one."""
    _STOPPING.set()
    with _LOCK:  # held while signalling: a child leaves _RUNNING before it is reaped
        for proc in list(_RUNNING):
            _kill_group(proc)


def waiting_on() -> list[tuple[tuple[str, ...], float]]:
    """The children running now whose output is not shown as it comes, with how many seconds
    each has run, longest first (for a "still waiting for nvidia-smi" note)."""
    now = time.monotonic()
    with _LOCK:
        quiet = [(args, now - start) for args, start, shown in _RUNNING.values() if not shown]
    return sorted(quiet, key=lambda item: -item[1])


def allow_runs() -> None:
    """Undo `stop_all` (a library caller that handled the interrupt and goes on; tests)."""
    _STOPPING.clear()


def stopping() -> bool:
    return _STOPPING.is_set()


# -- running ------------------------------------------------------------------------------------

OnText = Callable[[str], None]


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    keep: int = DEFAULT_KEEP,
    cwd: str | None = None,
) -> CommandResult:
    """Run `argv` to its end or its deadline; stdout and stderr kept apart (head and tail)."""
    return _run(argv, timeout, env, stdin, keep, cwd, None)


def run_streaming(
    argv: Sequence[str],
    *,
    timeout: float,
    on_text: OnText,
    env: Mapping[str, str] | None = None,
    keep: int = DEFAULT_KEEP,
    cwd: str | None = None,
) -> CommandResult:
    """Like `run`, with stderr merged into stdout and handed to `on_text` as it comes (an
    installer's progress); the result's stdout keeps the head and tail."""
    return _run(argv, timeout, env, None, keep, cwd, on_text)


def _run(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None,
    stdin: bytes | None,
    keep: int,
    cwd: str | None,
    on_text: OnText | None,
) -> CommandResult:
    args = tuple(argv)
    if _STOPPING.is_set():
        return CommandResult(args, None, stopped=True)
    start = time.monotonic()
    try:
        proc = _start(args, env, stdin is not None, on_text is not None, cwd)
    except FileNotFoundError:
        return CommandResult(args, None, not_found=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
        return CommandResult(args, None, error=_start_error(args[0] if args else "", exc))
    with _LOCK:
        _RUNNING[proc] = (args, start, on_text is not None)
    try:
        if _STOPPING.is_set():  # stop_all ran between the check and the registration
            _kill_group(proc)
        outcome = _Outcome(keep, on_text)
        pump = _pump_posix if os.name == "posix" else _pump_threads
        pump(proc, stdin, start + timeout, outcome)
    except BaseException:  # Ctrl-C in this thread: the child is out of the terminal's reach
        _kill_group(proc)
        raise
    finally:
        _finish(proc)
    elapsed = time.monotonic() - start
    # killed by stop_all while its pipes were closing: still an interrupted run, not an exit code
    killed = proc.returncode is None or proc.returncode < 0
    stopped = outcome.stopped or (_STOPPING.is_set() and killed and not outcome.timed_out)
    return CommandResult(
        args,
        None if (outcome.timed_out or stopped) else proc.returncode,
        stdout=outcome.out.text(),
        stderr=outcome.err.text(),
        timed_out=outcome.timed_out and not stopped,
        elapsed_s=elapsed,
        cut_bytes=outcome.out.cut + outcome.err.cut,
        stopped=stopped,
    )


def _start(
    args: tuple[str, ...], env: Mapping[str, str] | None, feed: bool, merged: bool, cwd: str | None
) -> subprocess.Popen[bytes]:
    posix = os.name == "posix"
    return subprocess.Popen(
        args,
        stdin=subprocess.PIPE if feed else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=posix,
        creationflags=0 if posix else getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
    )


class _Outcome:
    def __init__(self, keep: int, on_text: OnText | None) -> None:
        self.out = _Kept(keep)
        self.err = _Kept(keep)
        self.timed_out = False
        self.stopped = False
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def took(self, stream: int, block: bytes) -> None:
        (self.out if stream == 1 else self.err).add(block)
        if self._on_text is not None and stream == 1:
            text = self._decoder.decode(block)
            if text:
                self._on_text(text)


def _pump_posix(
    proc: subprocess.Popen[bytes], stdin: bytes | None, deadline: float, outcome: _Outcome
) -> None:
    streams = {proc.stdout: 1, proc.stderr: 2}
    with selectors.DefaultSelector() as selector:
        for pipe, number in streams.items():
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
                selector.register(pipe.fileno(), selectors.EVENT_READ, number)
        pending = memoryview(stdin) if stdin is not None else None
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, 0)
        watch = _Watch(proc, deadline, outcome)
        while selector.get_map():
            if watch.over():
                return
            for key, _events in selector.select(watch.wait()):
                if key.data == 0:
                    pending = _feed(selector, proc, key.fd, pending)
                    continue
                block = _read(key.fd)
                if block:
                    watch.last_data = time.monotonic()
                    outcome.took(key.data, block)
                elif block is not None:
                    selector.unregister(key.fd)
        _wait_exit(proc, deadline, outcome)


class _Watch:
    """When to stop reading: gpuenv interrupted, the deadline, or the child gone and its pipes
    quiet for a moment or, still written to by a descendant it left behind, for a while."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float, outcome: _Outcome) -> None:
        self.proc = proc
        self.deadline = deadline
        self.outcome = outcome
        self.exited_at: float | None = None
        self.last_data = time.monotonic()

    def over(self) -> bool:
        now = time.monotonic()
        if _STOPPING.is_set():
            self.outcome.stopped = True
            return True
        if now >= self.deadline:
            self.outcome.timed_out = not _exited(self.proc)
            return True
        if self.exited_at is None and _exited(self.proc):
            self.exited_at = now
        if self.exited_at is None:
            return False
        quiet = now - max(self.exited_at, self.last_data) > EXIT_GRACE_S
        return quiet or now - self.exited_at > EXIT_DRAIN_S

    def wait(self) -> float:
        return max(min(self.deadline - time.monotonic(), _POLL_S), 0.0)


def _feed(
    selector: selectors.BaseSelector,
    proc: subprocess.Popen[bytes],
    fd: int,
    pending: memoryview | None,
) -> memoryview | None:
    try:
        written = os.write(fd, pending[:_READ]) if pending else 0
    except (BlockingIOError, InterruptedError):
        return pending
    except OSError:  # the child closed its stdin
        written = len(pending) if pending else 0
    rest = pending[written:] if pending is not None else None
    if not rest:
        selector.unregister(fd)
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        return None
    return rest


def _read(fd: int) -> bytes | None:
    """A block, b"" at the end of the stream, None when nothing is there yet."""
    try:
        return os.read(fd, _READ)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without reaping it: while it is a zombie its process group
    id cannot be given to anyone else, so killing the group afterwards is safe."""
    waitid = getattr(os, "waitid", None)
    if waitid is None or proc.returncode is not None:
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait_exit(proc: subprocess.Popen[bytes], deadline: float, outcome: _Outcome) -> None:
    """The pipes are closed; wait for the child itself, up to the deadline."""
    pause = 0.001
    while not _exited(proc):
        if _STOPPING.is_set():
            outcome.stopped = True
            return
        left = deadline - time.monotonic()
        if left <= 0:
            outcome.timed_out = True
            return
        time.sleep(min(left, pause))
        pause = min(pause * 2, _POLL_S)


def _pump_threads(  # pragma: no cover - Windows: pipes cannot be selected there
    proc: subprocess.Popen[bytes], stdin: bytes | None, deadline: float, outcome: _Outcome
) -> None:
    lock = threading.Lock()

    def pump(pipe: object, number: int) -> None:
        read = getattr(pipe, "read1", getattr(pipe, "read", None))
        with contextlib.suppress(OSError, ValueError):
            for block in iter(lambda: read(_READ), b""):  # type: ignore[misc]
                with lock:
                    outcome.took(number, block)

    workers = [
        threading.Thread(target=pump, args=(pipe, number), daemon=True)
        for pipe, number in ((proc.stdout, 1), (proc.stderr, 2))
        if pipe is not None
    ]
    if stdin is not None and proc.stdin is not None:
        workers.append(threading.Thread(target=_write_all, args=(proc.stdin, stdin), daemon=True))
    for worker in workers:
        worker.start()
    watch = _Watch(proc, deadline, outcome)
    while any(w.is_alive() for w in workers):
        if watch.over():
            return
        for worker in workers:
            worker.join(_POLL_S / len(workers))
    _wait_exit(proc, deadline, outcome)


def _write_all(pipe: object, data: bytes) -> None:  # pragma: no cover - Windows
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)  # type: ignore[attr-defined]
        pipe.close()  # type: ignore[attr-defined]


def _finish(proc: subprocess.Popen[bytes]) -> None:
    """Kill what is left of the group (a timed-out child, or descendants a finished child left
    in it), reap the child, close our ends of the pipes. The child leaves _RUNNING first:
    once reaped, its pid (its group's id) may be given to another process, which `stop_all`
    must then never signal."""
    _kill_group(proc)
    with _LOCK:
        _RUNNING.pop(proc, None)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the child's whole group (the child is not reaped here, so the group id is
    still its own)."""
    if proc.returncode is not None:  # reaped: its group id may belong to someone else by now
        return
    if os.name == "posix":
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, 9)
            return
    with contextlib.suppress(OSError):
        proc.kill()


def _start_error(program: str, exc: Exception) -> str:
    if isinstance(exc, PermissionError) and os.path.isdir(program):
        return "it is a directory, not a program"
    if isinstance(exc, PermissionError) and not os.access(program, os.X_OK):
        return "it is not executable (no execute permission)"
    if isinstance(exc, PermissionError):
        return "permission denied (not a program that can be run)"
    return str(exc)


def python_argv(*args: str) -> list[str]:
    """gpuenv's own interpreter running `args` (a child probe, pip's configuration)."""
    return [sys.executable, *args]
