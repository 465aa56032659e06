"""The writing gateway: what gpuenv prints and the files it writes.

- JSON is always valid UTF-8: a lone surrogate (from undecodable bytes in the environment, or a
  hostile file), a C1 control or a bidirectional override inside a string is written as a \\u
  escape, which is the same string for a program and harmless in a terminal;
- text takes the stream's encoding, falling back to ASCII marks (✓ → +) and escapes where the
  encoding cannot carry a character (PYTHONIOENCODING=ascii, a legacy Windows console);
- a write that fails is a GpuenvError (`cannot-write`, exit 2, one line on stderr); a reader that
  went away (`| head`) is not an error: the rest of the output is dropped;
- files are written whole or not at all (a temporary file beside the target, then a rename), only
  over a regular file, never through a link inside the directory the user gave.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import select
import stat
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TextIO, cast

from gpuenv.edges.files import describe_mode
from gpuenv.errors import GpuenvError
from gpuenv.render.jsontext import json_text
from gpuenv.render.layout import printable

__all__ = [
    "drop_stdout",
    "emit",
    "emit_json",
    "json_text",
    "relay",
    "remove_file",
    "say",
    "start_run",
    "stderr_stream",
    "stdout_used",
    "write_file",
    "write_tree",
]

# What text output shows instead of a character the stream's encoding cannot carry
ASCII_MARKS = {
    "✓": "+",
    "✗": "x",
    "≥": ">=",
    "≤": "<=",
    "→": "->",
    "←": "<-",
    "↔": "<->",
    "…": "...",
    "—": "--",
    "–": "-",
    "•": "*",
    "×": "x",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "·": "-",
    "⚠": "!",
}
_ASCII_TABLE = str.maketrans(ASCII_MARKS)


def encodable(text: str, encoding: str | None) -> str:
    """`text` as the encoding can carry it: ASCII marks for symbols, escapes for the rest."""
    codec = encoding or "utf-8"
    try:
        text.encode(codec)
        return text
    except UnicodeEncodeError:
        pass
    except LookupError:
        codec = "ascii"
    fallback = text.translate(_ASCII_TABLE)
    return fallback.encode(codec, "backslashreplace").decode(codec, "replace")


class _ReaderGone(Exception):
    pass


def emit(text: str) -> None:
    """Write command output to stdout (its encoding, or ASCII where it cannot)."""
    _write(text, json_bytes=False)


def emit_json(document: Any) -> None:
    """Write a JSON document to stdout, always as UTF-8."""
    _write(json_text(document), json_bytes=True)


_STDOUT = {"used": False}  # whether this run has written to standard output yet


def stdout_used() -> bool:
    """Whether anything was written to stdout since `start_run`: an error told as JSON must not
    follow a document already there (two documents are not one valid JSON text)."""
    return _STDOUT["used"]


def start_run() -> None:
    """A command starts (the CLI calls this, as a library caller may run several)."""
    _STDOUT["used"] = False


def _write(text: str, json_bytes: bool) -> None:
    _STDOUT["used"] = True
    stream = sys.stdout
    if stream is None:
        raise GpuenvError("cannot-write", "cannot write the output: standard output is closed")
    try:
        _write_to(stream, text, json_bytes)
    except _ReaderGone:
        drop_stdout()
    except BrokenPipeError:
        drop_stdout()
    except (OSError, ValueError) as exc:  # ValueError: a closed file object
        drop_stdout()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, OSError) and exc.errno == errno.EBADF:
            why = "standard output is closed"
        raise GpuenvError("cannot-write", f"cannot write the output: {why}") from None


def _write_to(stream: TextIO, text: str, json_bytes: bool) -> None:
    buffer = getattr(stream, "buffer", None)
    encoding = "utf-8" if json_bytes else getattr(stream, "encoding", None)
    if buffer is None:  # a StringIO: whatever it holds is str
        stream.write(text if json_bytes else encodable(text, encoding))
        stream.flush()
        return
    _until_done(stream.flush, buffer)  # anything written as text before must come first
    data = text.encode("utf-8") if json_bytes else _encode(text, encoding)
    _write_all(buffer, data)


def _write_all(buffer: Any, data: bytes) -> None:
    """All of `data`, even where standard output is non-blocking (a descriptor shared with a
    program that set O_NONBLOCK on it): there a write may take part of the data, or none and
    raise BlockingIOError, and the rest must wait until the reader makes room."""
    view = memoryview(data)
    while view:
        try:
            written = buffer.write(view) or 0
        except BlockingIOError as exc:
            written = exc.characters_written
        if written < len(view):
            _wait_writable(buffer)
        view = view[written:]
    _until_done(buffer.flush, buffer)


def _until_done(flush: Any, buffer: Any) -> None:
    while True:
        try:
            flush()
            return
        except BlockingIOError:
            _wait_writable(buffer)


def _wait_writable(buffer: Any) -> None:
    try:
        select.select([], [buffer.fileno()], [], 1.0)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        time.sleep(0.01)


def _encode(text: str, encoding: str | None) -> bytes:
    codec = encoding or "utf-8"
    try:
        return text.encode(codec)
    except (UnicodeEncodeError, LookupError):
        return encodable(text, codec).encode(codec if _known(codec) else "ascii", "replace")


def _known(codec: str) -> bool:
    try:
        "".encode(codec)
        return True
    except LookupError:
        return False


def say(text: str) -> None:
    """A line for the user on stderr (progress, where a file went, an error); never fails the
    command. Its lines may quote untrusted text (a file name read from a requirements file, a
    value from someone's snapshot): controls and bidirectional overrides are shown as escapes,
    never sent to the terminal."""
    _to_stderr("\n".join(printable(part) for part in text.split("\n")) + "\n")


def relay(text: str) -> None:
    """Pass a child's output on to stderr as it comes (an installer's progress), unchanged but
    for what the stream's encoding cannot carry."""
    _to_stderr(text)


class _RelayedStderr(io.TextIOBase):
    """Standard error as a text stream that goes through `relay`."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        relay(text)
        return len(text)


def stderr_stream() -> TextIO:
    """Standard error as a stream for code that writes progress to one (an installer's output
    during `plan --create`): what the encoding lacks as ASCII, whole on a non-blocking stream,
    and never an exception, a closed stderr included."""
    return cast(TextIO, _RelayedStderr())


def _to_stderr(text: str) -> None:
    """Whole, like standard output (a non-blocking stderr included); a stderr that fails is
    not the command's failure."""
    stream = sys.stderr
    if stream is None:
        return
    encoding = getattr(stream, "encoding", None)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(encodable(text, encoding))
            stream.flush()
            return
        _until_done(stream.flush, buffer)
        _write_all(buffer, _encode(text, encoding))


def drop_stdout() -> None:
    """Point stdout at the null device, so later writes and the interpreter's last flush do not
    fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


# -- files ----------------------------------------------------------------------------------------


def write_file(path: Path | str, content: str | bytes, *, executable: bool = False) -> Path:
    """Write `content` to `path` whole or not at all, keeping an existing file's permissions
    (a new file gets the umask's, as any program's would).

    Anything at `path` that is not a regular file (a link, a FIFO, a device, a directory) is
    refused, never replaced."""
    target = Path(path)
    existing = _lstat(target)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise GpuenvError(
            "not-a-regular-file",
            f"{target} is {describe_mode(existing.st_mode)}; gpuenv writes only regular files",
            hints=("give the path of a new or regular file",),
        )
    data = content.encode("utf-8") if isinstance(content, str) else content
    keep = stat.S_IMODE(existing.st_mode) if existing is not None else None
    if keep is not None and executable:
        keep |= (keep & 0o444) >> 2  # run bits wherever read bits are
    _replace_atomically(target, data, keep, executable)
    return target


def remove_file(path: Path | str) -> bool:
    """Remove the regular file at `path` (what gpuenv wrote there itself); False when nothing
    was there. A link, a directory or anything else that is not a regular file is refused."""
    target = Path(path)
    existing = _lstat(target)
    if existing is None:
        return False
    if not stat.S_ISREG(existing.st_mode):
        raise GpuenvError(
            "not-a-regular-file",
            f"{target} is {describe_mode(existing.st_mode)}; gpuenv removes only regular files",
        )
    try:
        os.unlink(target)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise GpuenvError(
            "cannot-write", f"cannot remove {target}: {exc.strerror or exc}"
        ) from None
    return True


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GpuenvError("cannot-write", f"cannot write {path}: {exc.strerror or exc}") from None


def _replace_atomically(target: Path, data: bytes, keep: int | None, executable: bool) -> None:
    """A temporary file beside `target`, then a rename over it. A new file is created with
    0o666 (0o777 when executable) and the kernel applies the umask; `keep` is an existing
    file's mode. The temporary file never outlives a failure, Ctrl-C included."""
    temp: Path | None = None
    try:
        handle, temp = _temporary_beside(target, 0o777 if executable else 0o666)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if keep is not None:
            os.chmod(temp, keep)
        os.replace(temp, target)
        temp = None
    except OSError as exc:
        raise GpuenvError("cannot-write", f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)


_TEMP_STEM = 64  # characters of the target's name kept in the temporary one (NAME_MAX is 255)


def _temporary_beside(target: Path, mode: int) -> tuple[int, Path]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _attempt in range(100):
        temp = target.parent / f".{target.name[:_TEMP_STEM]}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(temp, flags, mode), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file")


def write_tree(
    folder: Path | str, files: Mapping[str, str], executable: Iterable[str] = ()
) -> list[Path]:
    """Write `files` (relative POSIX names) under `folder`, creating sub-folders.

    `folder` itself may be a link (the user named it); below it, a link or a name leading out
    of it (absolute, `..`, a drive or a device name on Windows) is refused, so nothing is
    written outside the folder given. Every target is checked before the first is written: a
    refusal leaves the folder as it was."""
    root = Path(folder)
    _refuse_as_folder(root, root)
    targets = {name: _inside(root, name) for name in files}
    for path in targets.values():
        _check_target(path, root)
    _make_folder(root, root)
    run_bits = set(executable)
    written = []
    for name, path in targets.items():
        for parent in _folders_between(root, path):
            _make_folder(parent, root)
        written.append(write_file(path, files[name], executable=name in run_bits))
    return written


# Names Windows gives to devices, whatever the extension (nul.txt is the null device there)
_WINDOWS_DEVICES = {"con", "prn", "aux", "nul", "conin$", "conout$"} | {
    f"{kind}{n}" for kind in ("com", "lpt") for n in range(1, 10)
}


def _inside(root: Path, name: str) -> Path:
    """`root`/`name`, for a name that can only mean a file below `root` on every system."""
    parts = PurePosixPath(name).parts
    portable = all(
        part not in (".", "..")
        and ":" not in part  # a drive (C:x) or an NTFS stream (file:stream)
        and part.split(".")[0].lower() not in _WINDOWS_DEVICES
        and part == part.rstrip(". ")  # Windows drops trailing dots and spaces
        for part in parts
    )
    if not parts or PurePosixPath(name).is_absolute() or "\\" in name or not portable:
        raise GpuenvError("cannot-write", f"{name!r} is not a file name inside {root}")
    return root.joinpath(*parts)


def _folders_between(root: Path, path: Path) -> list[Path]:
    """The folders from below `root` down to `path`'s own."""
    relative = path.relative_to(root)
    return [root / sub for sub in reversed(relative.parents) if sub != Path(".")]


def _check_target(path: Path, root: Path) -> None:
    """Refuse now what writing `path` would refuse later: a link or a non-folder on the way,
    something other than a regular file at the end."""
    for parent in _folders_between(root, path):
        if _lstat(parent) is None:
            return
        _refuse_as_folder(parent, root)
    info = _lstat(path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise GpuenvError(
            "not-a-regular-file",
            f"{path} is {describe_mode(info.st_mode)}; gpuenv writes only regular files",
            hints=(f"remove it, or give another folder than {root}",),
        )


def _make_folder(path: Path, root: Path) -> None:
    if _lstat(path) is None:
        try:
            path.mkdir(parents=path == root)
        except OSError as exc:
            raise GpuenvError(
                "cannot-write", f"cannot create {path}: {exc.strerror or exc}"
            ) from None
        return
    _refuse_as_folder(path, root)


def _refuse_as_folder(path: Path, root: Path) -> None:
    info = _lstat(path)
    if info is None:
        return
    if path != root and stat.S_ISLNK(info.st_mode):
        raise GpuenvError(
            "not-a-regular-file",
            f"{path} is a symbolic link; gpuenv does not write through links inside {root}",
        )
    if not (stat.S_ISDIR(info.st_mode) or (path == root and path.is_dir())):
        raise GpuenvError("cannot-write", f"{path} exists and is not a folder")
