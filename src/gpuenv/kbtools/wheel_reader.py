"""Read what refresh needs from one wheel on the index without downloading it: its core metadata
(the PEP 658 file where the index serves one, else the `*.dist-info/METADATA` member read with
range requests) and, for frameworks, their small build file (buildinfo.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gpuenv.index.remote_zip import Budget, RangeFetch, RemoteZip, ZipUnreadable
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools.buildinfo import BuildFile, build_facts

T = TypeVar("T")
_MAX_MEMBER = 4 * 1024 * 1024  # a METADATA or build file larger than this is not one


@dataclass(frozen=True)
class WheelRead:
    meta: ic.CoreMetadata
    via: str  # "pep658" | "range"
    build: Mapping[str, Any] = field(default_factory=dict)  # build_version, build_cuda ...


@dataclass
class Tally:
    """What a run asked of the index and what it could not get."""

    budget: Budget = field(default_factory=Budget)
    requests: int = 0  # pages and PEP 658 files; range requests are counted by the budget
    via: dict[str, int] = field(default_factory=dict)
    gaps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fetch(self, fetcher: ic.Fetcher, url: str, accept: str) -> ic.Response:
        with self.lock:
            self.requests += 1
        return fetcher(url, accept)

    def note(self, gaps: Iterable[str] = (), problems: Iterable[str] = ()) -> None:
        with self.lock:
            self.gaps.extend(gaps)
            self.problems.extend(problems)

    def count(self, via: str) -> None:
        with self.lock:
            self.via[via] = self.via.get(via, 0) + 1

    @property
    def metadata_read(self) -> int:
        return sum(self.via.values())

    @property
    def all_requests(self) -> int:
        return self.requests + self.budget.requests


@dataclass(frozen=True)
class WheelReader:
    fetch: ic.Fetcher
    fetch_range: RangeFetch
    tally: Tally

    def read(self, wheel: ic.Wheel, build_file: BuildFile | None) -> WheelRead | None:
        """The wheel's metadata (and build facts); None, with a gap noted, when unreadable. A
        build file that cannot be read is a gap of its own: the metadata still counts."""
        meta = self._pep658(wheel) if wheel.file.metadata else None
        via, archive = "pep658", None
        if meta is None:
            via, archive = "range", self._open(wheel)
            if archive is None:
                return None
            opened = archive
            body = self._attempt(wheel, lambda: _member(opened, _is_metadata, "METADATA"))
            if body is None:
                return None
            meta = ic.parse_core_metadata(body)
        build: dict[str, Any] = {}
        if build_file is not None:
            archive = archive or self._open(wheel)
            if archive is not None and build_file.member in archive.members:
                found = archive
                body = self._attempt(wheel, lambda: _member(found, build_file.member.__eq__, ""))
                build = build_facts(build_file.kind, body) if body is not None else {}
        self.tally.count(via)
        return WheelRead(meta, via, build)

    def _open(self, wheel: ic.Wheel) -> RemoteZip | None:
        archive = RemoteZip(wheel.file.url, self.fetch_range, self.tally.budget)
        return archive if self._attempt(wheel, archive.open) is not None else None

    def _attempt(self, wheel: ic.Wheel, step: Callable[[], T]) -> T | None:
        try:
            return step()
        except (ZipUnreadable, ic.IndexUnavailable) as exc:
            self.tally.note(gaps=[f"{wheel.file.filename}: {exc}"])
            return None

    def _pep658(self, wheel: ic.Wheel) -> ic.CoreMetadata | None:
        answer = self.tally.fetch(self.fetch, ic.metadata_url(wheel.file), "*/*")
        if answer.status != 200:
            return None
        if not ic.check_metadata_hash(wheel.file, answer.body):
            self.tally.note(
                problems=[f"{wheel.file.filename}: core metadata does not match its hash"]
            )
            return None
        return ic.parse_core_metadata(answer.body)


def _is_metadata(name: str) -> bool:
    top, _, rest = name.partition("/")
    return top.endswith(".dist-info") and rest == "METADATA"


def _member(archive: RemoteZip, test: Callable[[str], bool], what: str) -> bytes:
    names = archive.find(test)
    if len(names) != 1:
        raise ZipUnreadable(f"{len(names)} {what} members in the archive")
    if archive.members[names[0]].size > _MAX_MEMBER:
        raise ZipUnreadable(f"{names[0]} is implausibly large")
    return archive.read(names[0])
