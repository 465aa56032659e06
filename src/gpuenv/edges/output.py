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
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from gpuenv.edges.files import describe_mode
from gpuenv.errors import GpuenvError
from gpuenv.render.jsontext import json_text

__all__ = [
    "drop_stdout",
    "emit",
    "emit_json",
    "json_text",
    "relay",
    "remove_file",
    "say",
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


def _write(text: str, json_bytes: bool) -> None:
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
    stream.flush()  # anything written as text before must come first
    data = text.encode("utf-8") if json_bytes else _encode(text, encoding)
    buffer.write(data)
    buffer.flush()


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
    """A line for the user on stderr (progress, where a file went); never fails the command."""
    stream = sys.stderr
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        stream.write(encodable(text, getattr(stream, "encoding", None)) + "\n")
        stream.flush()


def relay(text: str) -> None:
    """Pass a child's output on to stderr as it comes (an installer's progress), unchanged but
    for what the stream's encoding cannot carry."""
    stream = sys.stderr
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        stream.write(encodable(text, getattr(stream, "encoding", None)))
        stream.flush()


def drop_stdout() -> None:
    """Point stdout at the null device, so later writes and the interpreter's last flush do not
    fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


# -- files ----------------------------------------------------------------------------------------


def write_file(path: Path | str, content: str | bytes, *, executable: bool = False) -> Path:
    """Write `content` to `path` whole or not at all, keeping an existing file's permissions.

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
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o644
    if executable:
        mode |= 0o111
    _replace_atomically(target, data, mode)
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


def _replace_atomically(target: Path, data: bytes, mode: int) -> None:
    temp: str | None = None
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except OSError as exc:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        raise GpuenvError("cannot-write", f"cannot write {target}: {exc.strerror or exc}") from None


def write_tree(
    folder: Path | str, files: Mapping[str, str], executable: Iterable[str] = ()
) -> list[Path]:
    """Write `files` (relative POSIX names) under `folder`, creating sub-folders.

    `folder` itself may be a link (the user named it); below it, a link or a name leading out
    of it (absolute, `..`) is refused, so nothing is written outside the folder given."""
    root = Path(folder)
    _make_folder(root, root)
    run_bits = set(executable)
    written = []
    for name in files:
        path = _inside(root, name)
        written.append(write_file(path, files[name], executable=name in run_bits))
    return written


def _inside(root: Path, name: str) -> Path:
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts or "\\" in name:
        raise GpuenvError("cannot-write", f"{name!r} is not a file name inside {root}")
    here = root
    for part in parts[:-1]:
        here = here / part
        _make_folder(here, root)
    return here / parts[-1]


def _make_folder(path: Path, root: Path) -> None:
    info = _lstat(path)
    if info is None:
        try:
            path.mkdir(parents=path == root)
        except OSError as exc:
            raise GpuenvError(
                "cannot-write", f"cannot create {path}: {exc.strerror or exc}"
            ) from None
        return
    if path != root and stat.S_ISLNK(info.st_mode):
        raise GpuenvError(
            "not-a-regular-file",
            f"{path} is a symbolic link; gpuenv does not write through links inside {root}",
        )
    if not (stat.S_ISDIR(info.st_mode) or (path == root and path.is_dir())):
        raise GpuenvError("cannot-write", f"{path} exists and is not a folder")
