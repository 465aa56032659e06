"""HTTP to a package index: the index URL pip is configured with (`pip config list`, else pip's
built-in default, both asked in a child process so that gpuenv never imports pip), GET of index
pages, GET of byte ranges of wheel files and HEAD of a file's size. Whole wheels are never
downloaded. Used by the maintainer's tools (kb refresh, audit) and by `plan --create`, which says
how much the install will download before it starts."""

from __future__ import annotations

import os
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Protocol

from gpuenv._version import __version__
from gpuenv.edges import process
from gpuenv.errors import GpuenvError

_MAX_BYTES = 64 * 1024 * 1024
_PIP_DEFAULT = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"


@dataclass(frozen=True)
class RangeAnswer:
    status: int  # 206 for a range; 200 when the server sent the whole file
    body: bytes
    start: int  # offset of body[0] in the file
    total: int | None  # size of the whole file, when the server said it
    url: str = ""


class IndexUnavailable(Exception):
    """The index could not be read (network, HTTP error or a garbled page)."""


@dataclass(frozen=True)
class Response:
    url: str
    status: int
    content_type: str
    body: bytes


class Fetcher(Protocol):
    def __call__(self, url: str, accept: str) -> Response: ...


def unreachable(code: str, message: str, exc: Exception) -> GpuenvError:
    """The error a maintainer's command gives when the index cannot be read."""
    hints = ("check the network and pip's index-url (`pip config list`)",)
    return GpuenvError(code, message, cause=str(exc), hints=hints)


# -- the index URL, from pip ------------------------------------------------------------------


def index_url_from_config(text: str) -> str | None:
    """The effective index-url in `pip config list` output: env > install > global > others."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or not key.strip().endswith(".index-url"):
            continue
        section = key.strip().rsplit(".", 1)[0]
        found[section] = value.strip().strip("'\"").split()[0] if value.strip("'\" ") else ""
    for section in (":env:", "install", "global", *sorted(found)):
        if found.get(section):
            return found[section]
    return None


def pip_index_url(python: str | None = None, timeout: float = 60.0) -> str:
    """The main index URL pip would use (extra-index-url and find-links are ignored)."""
    exe = python or sys.executable
    config = _run_python(exe, ["-m", "pip", "config", "list"], timeout)
    url = index_url_from_config(config)
    if not url:
        url = _run_python(exe, ["-c", _PIP_DEFAULT], timeout).strip()
    if not url.startswith(("http://", "https://", "file://")):
        raise IndexUnavailable(f"pip reported no usable index URL ({url!r})")
    return url.rstrip("/")


def _run_python(exe: str, args: list[str], timeout: float) -> str:
    env = {**os.environ, "LC_ALL": "C", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = process.run([exe, *args], timeout=timeout, env=env)
    if done.returncode is None:
        raise IndexUnavailable(f"cannot ask pip for its index URL: {done.problem()}")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise IndexUnavailable(f"`{exe} {' '.join(args[:3])}` failed: {tail[0]}")
    return done.stdout


# -- HTTP -------------------------------------------------------------------------------------


def urllib_fetch(url: str, accept: str, timeout: float = 60.0, attempts: int = 2) -> Response:
    """GET `url`. HTTP errors come back as a status; a network failure raises IndexUnavailable."""
    headers = {"Accept": accept, "User-Agent": f"gpuenv/{__version__} (kb refresh)"}
    problem = ""
    for _ in range(attempts):
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                body = answer.read(_MAX_BYTES + 1)
                kind = answer.headers.get("Content-Type", "")
                return Response(answer.geturl(), answer.status, kind, body[:_MAX_BYTES])
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return Response(url, exc.code, "", b"")
            problem = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            problem = str(reason)
    raise IndexUnavailable(f"{url}: {problem}")


_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


def urllib_range(
    url: str, first: int | None, last: int, limit: int, timeout: float = 60.0, attempts: int = 3
) -> RangeAnswer:
    """GET a byte range of `url` (first None: the last `last` bytes), reading at most `limit`
    bytes of the answer whatever the server sends. Redirects are followed (the Range header goes
    along). A network failure raises IndexUnavailable."""
    wanted = f"bytes=-{last}" if first is None else f"bytes={first}-{last}"
    headers = {"Range": wanted, "User-Agent": f"gpuenv/{__version__} (kb refresh)"}
    headers["Accept-Encoding"] = "identity"
    problem = ""
    for _ in range(attempts):
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                body = answer.read(limit)
                total, start = _range_of(answer.status, answer.headers)
                return RangeAnswer(answer.status, body, start, total, answer.geturl())
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return RangeAnswer(exc.code, b"", 0, None, url)
            problem = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            problem = str(getattr(exc, "reason", exc))
    raise IndexUnavailable(f"{url}: {problem}")


def _range_of(status: int, headers: Any) -> tuple[int | None, int]:
    """(total size, offset of the body) from Content-Range (206) or Content-Length (200)."""
    if status == 206:
        match = _CONTENT_RANGE.match(str(headers.get("Content-Range", "")).strip())
        if match is None or match.group(3) == "*":
            return None, int(match.group(1)) if match else 0
        return int(match.group(3)), int(match.group(1))
    length = str(headers.get("Content-Length", "")).strip()
    return (int(length) if length.isdigit() else None), 0


def urllib_size(url: str, timeout: float = 30.0) -> int | None:
    """The size of the file at `url` from a HEAD request's Content-Length; None when the server
    does not say or cannot be reached."""
    headers = {"User-Agent": f"gpuenv/{__version__}", "Accept-Encoding": "identity"}
    request = urllib.request.Request(url, headers=headers, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            length = str(answer.headers.get("Content-Length", "")).strip()
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return int(length) if length.isdigit() else None
