"""Members of a zip archive (a wheel) on an HTTP server, read with range requests: the end of
central directory record and the central directory first, then only the members asked for.

A wheel of 500 MB costs three small requests for its METADATA: the last 64 KiB (end record, often
the whole central directory too), the central directory if it did not fit, and the member. Every
request is capped (`Budget.per_request`) and so is their sum (`Budget.total`); a server that
ignores Range (200 with the whole body) is read no further than the cap and reported, never
downloaded. Stored and deflated members are read, zip64 archives too; anything else (another
compression, an encrypted member, a garbled archive) is a `ZipUnreadable` with a clear message.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from gpuenv.index.http import RangeAnswer

TAIL = 64 * 1024  # the end record's comment is at most 64 KiB; most central directories fit too
_EOCD = struct.Struct("<IHHHHIIH")  # signature .. comment length, 22 bytes
_EOCD_SIG = 0x06054B50
_LOCATOR = struct.Struct("<IIQI")  # zip64 end locator, 20 bytes
_LOCATOR_SIG = 0x07064B50
_EOCD64 = struct.Struct("<IQHHIIQQQQ")  # zip64 end record, 56 bytes
_EOCD64_SIG = 0x06064B50
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # central directory header, 46 bytes
_CENTRAL_SIG = 0x02014B50
_LOCAL = struct.Struct("<IHHHHHIIIHH")  # local file header, 30 bytes
_LOCAL_SIG = 0x04034B50
_STORED, _DEFLATED = 0, 8
_SLACK = 1024  # read past a member's data for a local extra field longer than the central one


class ZipUnreadable(Exception):
    """The archive or member cannot be read: why, in one line."""


class BudgetExceeded(ZipUnreadable):
    """A read would pass the byte cap of one request or of the whole run."""


class RangeFetch(Protocol):
    """GET bytes first..last of `url` (first None: the last `last` bytes), reading at most
    `limit` bytes of the answer."""

    def __call__(self, url: str, first: int | None, last: int, limit: int) -> RangeAnswer: ...


@dataclass
class Budget:
    """Byte caps: per request and for a whole run; counts what was read."""

    per_request: int = 16 * 1024 * 1024
    total: int = 512 * 1024 * 1024
    used: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve(self, size: int, what: str) -> None:
        if size > self.per_request:
            raise BudgetExceeded(
                f"{what}: {size} bytes is over the cap of {self.per_request} bytes per request"
            )
        with self.lock:
            if self.used + size > self.total:
                raise BudgetExceeded(
                    f"{what}: {size} more bytes would pass the cap of {self.total} bytes "
                    f"for this run ({self.used} read)"
                )
            self.requests += 1
            self.used += size

    def refund(self, size: int) -> None:
        with self.lock:
            self.used -= size


@dataclass(frozen=True)
class Member:
    name: str
    method: int
    flags: int
    compressed_size: int
    size: int
    crc32: int
    header_offset: int


# -- the end record and the central directory ---------------------------------------------------


def find_end_record(tail: bytes) -> int:
    """The offset in `tail` of the end of central directory record; raises when there is none."""
    at = len(tail) - _EOCD.size
    while at >= 0:
        at = tail.rfind(struct.pack("<I", _EOCD_SIG), 0, at + 4)
        if at < 0:
            break
        (comment_length,) = struct.unpack_from("<H", tail, at + 20)
        if at + _EOCD.size + comment_length == len(tail):
            return at
        at -= 1
    raise ZipUnreadable("no end of central directory record: not a zip archive, or cut short")


def directory_span(tail: bytes, tail_start: int) -> tuple[int, int, int]:
    """(offset, size, entry count) of the central directory, from the end record (zip64 too)."""
    at = find_end_record(tail)
    _, disk, cd_disk, _, count, size, offset, _ = _EOCD.unpack_from(tail, at)
    if disk or cd_disk:
        raise ZipUnreadable("a multi-disk archive")
    if 0xFFFF not in (count,) and 0xFFFFFFFF not in (size, offset):
        return offset, size, count
    locator_at = at - _LOCATOR.size
    if locator_at < 0:
        raise ZipUnreadable("zip64 end locator is outside the bytes read")
    signature, _, record, _ = _LOCATOR.unpack_from(tail, locator_at)
    if signature != _LOCATOR_SIG:
        raise ZipUnreadable("zip64 sizes without a zip64 end locator")
    where = record - tail_start
    if not 0 <= where <= len(tail) - _EOCD64.size:
        raise ZipUnreadable("zip64 end record is outside the bytes read")
    fields = _EOCD64.unpack_from(tail, where)
    if fields[0] != _EOCD64_SIG:
        raise ZipUnreadable("bad zip64 end record signature")
    return fields[9], fields[8], fields[7]


def parse_directory(data: bytes, count: int) -> dict[str, Member]:
    """The members listed in central directory bytes."""
    members: dict[str, Member] = {}
    at = 0
    for number in range(count):
        if at + _CENTRAL.size > len(data):
            raise ZipUnreadable(f"central directory cut short at entry {number}")
        fields = _CENTRAL.unpack_from(data, at)
        if fields[0] != _CENTRAL_SIG:
            raise ZipUnreadable(f"bad central directory signature at entry {number}")
        flags, method, crc, csize, usize = fields[3], fields[4], fields[7], fields[8], fields[9]
        name_len, extra_len, comment_len, offset = fields[10], fields[11], fields[12], fields[16]
        name_bytes = data[at + 46 : at + 46 + name_len]
        extra = data[at + 46 + name_len : at + 46 + name_len + extra_len]
        usize, csize, offset = _zip64_extra(extra, usize, csize, offset)
        name = name_bytes.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        members[name] = Member(name, method, flags, csize, usize, crc, offset)
        at += 46 + name_len + extra_len + comment_len
    return members


def _zip64_extra(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    at = 0
    while at + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4 : at + 4 + length]
        if tag == 0x0001:
            values = list(struct.unpack(f"<{len(body) // 8}Q", body[: len(body) // 8 * 8]))
            if usize == 0xFFFFFFFF and values:
                usize = values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
            if offset == 0xFFFFFFFF and values:
                offset = values.pop(0)
        at += 4 + length
    return usize, csize, offset


# -- the archive --------------------------------------------------------------------------------


class RemoteZip:
    """A zip archive at `url`, read with `fetch` within `budget`."""

    def __init__(self, url: str, fetch: RangeFetch, budget: Budget) -> None:
        self.url = url
        self._fetch = fetch
        self._budget = budget
        self._whole: bytes | None = None  # the server sent the whole (small) file
        self.size = 0
        self.members: dict[str, Member] = {}

    def open(self) -> RemoteZip:
        tail = self._get(None, TAIL, "the end of the archive")
        tail_start = self.size - len(tail)
        offset, size, count = directory_span(tail, tail_start)
        if offset + size > self.size:
            raise ZipUnreadable("the central directory lies past the end of the file")
        if offset >= tail_start:
            directory = tail[offset - tail_start : offset - tail_start + size]
        else:
            directory = self._range(offset, size, "the central directory")
        self.members = parse_directory(directory, count)
        return self

    def find(self, test: Callable[[str], bool]) -> list[str]:
        return [name for name in self.members if test(name)]

    def read(self, name: str) -> bytes:
        """One member, whole and checked (CRC-32)."""
        parts: list[bytes] = []
        self.stream(name, parts.append)
        return b"".join(parts)

    def stream(
        self,
        name: str,
        sink: Callable[[bytes], None],
        chunk: int = 0,
        on_chunk: Callable[[int], None] | None = None,
    ) -> None:
        """Feed the member's bytes to `sink`, reading its data in chunks of at most `chunk`
        bytes (default: the per-request cap); `on_chunk` hears each chunk's compressed size."""
        member = self._member(name)
        start = self._data_start(member)
        step = chunk or self._budget.per_request
        inflate = zlib.decompressobj(-15) if member.method == _DEFLATED else None
        crc, produced, at, end = 0, 0, start, start + member.compressed_size
        while at < end:
            block = self._range(at, min(step, end - at), name)
            at += len(block)
            if on_chunk is not None:
                on_chunk(len(block))
            out = inflate.decompress(block) if inflate else block
            crc, produced = zlib.crc32(out, crc), produced + len(out)
            if produced > member.size:
                raise ZipUnreadable(f"{name}: more data than its declared {member.size} bytes")
            sink(out)
        if inflate is not None:
            tail = inflate.flush()
            crc, produced = zlib.crc32(tail, crc), produced + len(tail)
            sink(tail)
        if produced != member.size or crc != member.crc32:
            raise ZipUnreadable(f"{name}: damaged (size or CRC-32 does not match)")

    def _member(self, name: str) -> Member:
        member = self.members.get(name)
        if member is None:
            raise ZipUnreadable(f"{name}: not in the archive")
        if member.flags & 0x1:
            raise ZipUnreadable(f"{name}: encrypted")
        if member.method not in (_STORED, _DEFLATED):
            raise ZipUnreadable(f"{name}: compression method {member.method} is not read")
        return member

    def _data_start(self, member: Member) -> int:
        head = self._range(member.header_offset, _LOCAL.size, member.name)
        fields = _LOCAL.unpack_from(head) if len(head) == _LOCAL.size else None
        if fields is None or fields[0] != _LOCAL_SIG:
            raise ZipUnreadable(f"{member.name}: bad local header")
        start = member.header_offset + _LOCAL.size + int(fields[9]) + int(fields[10])
        if start + member.compressed_size > self.size:
            raise ZipUnreadable(f"{member.name}: its data lies past the end of the file")
        return start

    # -- bytes --------------------------------------------------------------------------------

    def _range(self, first: int, length: int, what: str) -> bytes:
        if length <= 0:
            return b""
        if self._whole is not None:
            return self._whole[first : first + length]
        return self._get(first, length, what)

    def _get(self, first: int | None, length: int, what: str) -> bytes:
        if first is None and self.size:
            length = min(length, self.size)
        self._budget.reserve(length, what)
        last = length if first is None else first + length - 1
        try:
            answer = self._fetch(self.url, first, last, length)
        except BaseException:
            self._budget.refund(length)
            raise
        self._budget.refund(length - len(answer.body))
        return self._accept(answer, first, length, what)

    def _accept(self, answer: RangeAnswer, first: int | None, length: int, what: str) -> bytes:
        if answer.status == 200:
            if answer.total is None or len(answer.body) < answer.total:
                raise ZipUnreadable(
                    f"the server ignores range requests (200 for {what}); stopped after "
                    f"{len(answer.body)} bytes instead of downloading the whole file"
                )
            self._whole, self.size = answer.body, len(answer.body)
            return answer.body if first is None else answer.body[first : first + length]
        if answer.status != 206:
            raise ZipUnreadable(f"HTTP {answer.status} for {what}")
        if answer.total is None:
            raise ZipUnreadable(f"no Content-Range total in the answer for {what}")
        self.size = answer.total
        expected = first if first is not None else max(0, answer.total - length)
        if answer.start != expected or len(answer.body) != min(length, answer.total - expected):
            raise ZipUnreadable(f"the server answered another range for {what}")
        return answer.body
