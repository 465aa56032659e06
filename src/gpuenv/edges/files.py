"""The file-reading gateway: regular files only, never blocking, never unbounded.

A FIFO, a character device (`/dev/zero`), a socket or a directory given where a file is expected
is refused before a byte is read: the file is opened with O_NONBLOCK (so a FIFO without a writer
does not block the open), `fstat` tells what it is, and only a regular file is read, at most
`limit` bytes. Probes get a `FileRead` with a problem (a fact: "not a regular file (FIFO)");
commands reading a user's file get a GpuenvError with a clear message.
"""

from __future__ import annotations

import codecs
import errno
import os
import select
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union

from gpuenv.errors import GpuenvError

PathLike = Union[str, Path]

# Byte caps per kind of file, in one place.
LIMITS = {
    "probe": 4 * 1024 * 1024,  # a file a probe reads: version.json, conda-meta, RECORD, /proc
    "snapshot": 64 * 1024 * 1024,  # a --from snapshot document
    "report": 64 * 1024 * 1024,  # a pasted report or error log given to --from / explain
    "requirements": 2_000_000,  # a -r requirements file or pyproject.toml
    "lock": 16 * 1024 * 1024,  # a gpuenv.lock
    "config": 1024 * 1024,  # an installer's configuration file (pip.conf, pinned)
}
_CHUNK = 1024 * 1024


class NotRegular(OSError):
    """The path names something other than a regular file (FIFO, device, socket, directory)."""


@dataclass(frozen=True)
class FileRead:
    """What a probe got from a file: its text, or why not."""

    path: str
    text: str | None
    problem: str | None = None  # "not found", "permission denied", "not a regular file (FIFO)"


def describe_mode(mode: int) -> str:
    """What a stat mode is, in words: "a FIFO", "a character device" ..."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def open_regular(path: PathLike) -> int:
    """A read-only descriptor of `path`, which must be a regular file (links are followed).

    Raises NotRegular for anything else and OSError when it cannot be opened; the open itself
    never blocks."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(errno.EINVAL, f"{describe_mode(mode)}, not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes_capped(path: PathLike, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of a regular file, and whether there was more."""
    fd = open_regular(path)
    try:
        parts: list[bytes] = []
        size = 0
        while size <= limit:
            block = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not block:
                break
            parts.append(block)
            size += len(block)
    finally:
        os.close(fd)
    data = b"".join(parts)
    return data[:limit], len(data) > limit


def problem_of(exc: OSError) -> str:
    """An OSError as a short fact about the file."""
    if isinstance(exc, NotRegular):
        return str(exc.strerror)
    words = {
        errno.ENOENT: "not found",
        errno.ENOTDIR: "not found",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EISDIR: "a directory, not a regular file",
        errno.ELOOP: "symlink loop (too many levels of symbolic links)",
        errno.ENAMETOOLONG: "name too long",
    }
    return words.get(exc.errno or 0) or f"unreadable: {exc.strerror or exc}"


def read_fact(path: str, limit: int = LIMITS["probe"]) -> FileRead:
    """A probe's read: the text (UTF-8, undecodable bytes replaced), or a problem; never raises.

    A NUL before the end means a binary file; /proc/device-tree strings end in NUL and are kept.
    A file longer than `limit` gives its first `limit` bytes."""
    try:
        data, _more = read_bytes_capped(path, limit)
    except OSError as exc:
        return FileRead(path, None, problem_of(exc))
    except (TypeError, ValueError) as exc:  # a NUL in the name
        return FileRead(path, None, f"invalid path: {exc}")
    data = data.rstrip(b"\x00")
    if b"\x00" in data[:4096]:
        return FileRead(path, None, "not a text file")
    return FileRead(path, data.decode("utf-8", "replace"))


STDIN = "-"  # the name that means standard input, as for most tools


def read_user_file(path: PathLike, kind: str, *, code: str = "cannot-read") -> bytes:
    """A file the user named (--from, -r, a lock): its bytes, or a GpuenvError that says why.
    `-` is standard input (`gpuenv snapshot --json | gpuenv doctor --from -`), read with the
    same cap; a FIFO named as a file is refused, as it could block for ever.

    `kind` picks the byte cap from LIMITS; a larger file is refused rather than cut."""
    if str(path) == STDIN:
        return read_standard_input(kind, code=code)
    limit = LIMITS[kind]
    try:
        data, more = read_bytes_capped(path, limit)
    except FileNotFoundError:
        raise GpuenvError("file-not-found", f"{path} does not exist") from None
    except NotRegular as exc:
        raise GpuenvError(
            code,
            f"{path}: cannot read: it is {exc.strerror}",
            hints=("give a regular file, or pipe it in and give - to read standard input",),
        ) from None
    except OSError as exc:
        raise GpuenvError(code, f"{path}: cannot read: {problem_of(exc)}") from None
    except (TypeError, ValueError) as exc:
        raise GpuenvError(code, f"{path!s:.200}: cannot read: invalid path ({exc})") from None
    if more:
        raise GpuenvError(code, f"{path}: larger than {_size(limit)}, too large for a {kind} file")
    return data


def read_stream(stream: BinaryIO, kind: str, name: str, *, code: str = "cannot-read") -> bytes:
    """What a stream (standard input) holds, at most LIMITS[kind] bytes; more is refused."""
    limit = LIMITS[kind]
    try:
        data = _read_to_end(stream, limit + 1)
    except OSError as exc:
        raise GpuenvError(code, f"{name}: cannot read: {problem_of(exc)}") from None
    if len(data) > limit:
        raise GpuenvError(
            code,
            f"{name}: larger than {_size(limit)}, too large for a {kind}",
            hints=("give the part of the log around the failure",),
        )
    return bytes(data)


def _read_to_end(stream: BinaryIO, most: int) -> bytes:
    """Up to `most` bytes, to the end of the stream, also where it is non-blocking (a pipe
    another program set O_NONBLOCK on gives None or part of the data until more comes)."""
    parts: list[bytes] = []
    size = 0
    while size < most:
        try:
            block = stream.read(min(_CHUNK, most - size))
        except BlockingIOError:
            block = None
        if block is None:
            _wait_readable(stream)
            continue
        if not block:
            break
        parts.append(bytes(block))
        size += len(block)
    return b"".join(parts)


def _wait_readable(stream: BinaryIO) -> None:
    try:
        select.select([stream.fileno()], [], [], 1.0)
    except (OSError, ValueError, AttributeError):
        time.sleep(0.01)


def read_standard_input(kind: str, *, code: str = "cannot-read") -> bytes:
    """What is piped into gpuenv, at most LIMITS[kind] bytes. A terminal is refused: nothing
    would tell the user that gpuenv waits for them to type a file."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise GpuenvError(code, "-: there is no standard input to read")
    if _isatty(sys.stdin):
        raise GpuenvError(
            code,
            "-: standard input is a terminal, not a file",
            hints=("pipe the file in (`… < FILE`, `… | gpuenv …`), or name the file",),
        )
    return read_stream(stream, kind, "standard input", code=code)


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def decode_text(data: bytes, name: str, *, code: str = "cannot-read") -> str:
    """UTF-8 with or without a byte-order mark, or UTF-16 with one (PowerShell's `>` writes
    it); anything else is a GpuenvError naming the file."""
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError:
        raise GpuenvError(code, f"{name}: not a UTF-8 text file") from None


def read_user_text(path: PathLike, kind: str, *, code: str = "cannot-read") -> str:
    return decode_text(read_user_file(path, kind, code=code), str(path), code=code)


def _size(limit: int) -> str:
    """A cap in the words the docs use for it: 64 MiB, 2 MB."""
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    if limit % 1_000_000 == 0:
        return f"{limit // 1_000_000} MB"
    return f"{limit} bytes"
