"""Which GPU architectures a shared library carries, read from its `.nv_fatbin` section.

Only headers are read: the ELF or PE section table, then each fatbin container header and each
entry header in the section. Payloads (compressed or not) are skipped: a 500 MB library costs one
small read per entry, some tens of thousands. Reads are positioned reads rather than mmap: a
library rewritten while it is scanned (pip upgrading it) must give a problem text, not a SIGBUS.

The layout, as nvcc 13.0 writes it (little-endian; checked on files it built):

    container header, 16 bytes
      0x00 u32 magic 0xBA55ED50   0x04 u16 version (1)   0x06 u16 header size (16)
      0x08 u64 size of the entries that follow
    entry header, 0x40 bytes or more (the rest holds compile options and the object name)
      0x00 u16 kind: 1 PTX, 2 ELF (SASS), 8 LTO IR, 0x10 also ELF (see KIND_ELF_OTHER)
      0x04 u32 header size      0x08 u64 payload size       0x10 u32 compressed size
      0x18 u16, u16 PTX ISA minor, major (PTX entries: 9.0 from nvcc 13.0)
      0x1c u32 arch (75, 90, 100 ...)
      0x28 u64 flags: 0x100000 arch-specific (sm_90a), 0x200000 family (sm_100f),
                      0x2000 LZ4-compressed, 0x8000 Zstandard-compressed, 0x2 debug (-G)

A section holds one container per translation unit; the linker pads between them with zeros up to
the section alignment, and nvcc also writes empty containers. On Windows the linker cuts section
names to 8 bytes, so a DLL's section is `.nv_fatb`.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from gpuenv.edges.files import NotRegular, open_regular
from gpuenv.probe.objfile import (
    BytesReader,
    FileReader,
    Reader,
    Span,
    detect_format,
    fatbin_sections,
    not_scannable,
    os_problem,
)

FATBIN_MAGIC = 0xBA55ED50

KIND_PTX = 1
KIND_ELF = 2
# Not written by nvcc 13.0 for plain -gencode builds; cuBLASLt 13 holds such entries and cuobjdump
# --list-elf lists them as ELF, as reverse-engineering notes on the format report. Taken as SASS.
KIND_ELF_OTHER = 0x10
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000

_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, entries size
# kind, version, header size, payload size, ISA minor, ISA major, arch, flags
_ENTRY = struct.Struct("<HHIQ8xHHI8xQ")
_MIN_ENTRY_HEADER = 0x40
# headers larger than these are corruption, not a future format (entries hold option strings)
_MAX_CONTAINER_HEADER = 0x100
_MAX_ENTRY_HEADER = 0x10000
_MAX_PADDING = 4096  # zeros allowed between containers (section alignment)
_MAX_PROBLEMS = 5
_MAX_HEADERS = 1_000_000  # a crafted file of tiny containers must not take minutes


@dataclass(frozen=True)
class FatbinScan:
    path: str
    file_format: str  # "elf" | "pe" | "unknown"
    sass: tuple[str, ...]  # sorted unique, e.g. ("sm_75", "sm_90a")
    ptx: tuple[str, ...]  # sorted unique, e.g. ("compute_90",)
    has_device_code: bool  # a .nv_fatbin section with at least one entry
    problem: str | None = None  # why the scan is incomplete or failed
    ptx_isa: tuple[str, ...] = ()  # PTX ISA versions of the PTX entries, e.g. ("9.0",)


def arch_sort_key(name: str) -> tuple[int, str, str]:
    """Order "sm_75" < "sm_90" < "sm_90a" < "sm_100" < "sm_100f" < "sm_120"."""
    prefix, _, rest = name.partition("_")
    digits = rest.rstrip("abcdefghijklmnopqrstuvwxyz")
    number = int(digits) if digits.isdigit() else -1
    return (number, rest[len(digits) :], prefix)


def scan_fatbin(path: str) -> FatbinScan:
    """The SASS and PTX architectures in the library at `path`; never raises."""
    problem = not_scannable(path)
    if problem is not None:
        return _failed(path, "unknown", problem)
    try:
        fd = open_regular(path)  # swapped for a FIFO since the stat: refused, not waited on
    except NotRegular:
        return _failed(path, "unknown", "not a regular file")
    except OSError as exc:
        return _failed(path, "unknown", os_problem(exc))
    try:
        return _scan(FileReader(fd), path)
    except OSError as exc:
        return _failed(path, "unknown", os_problem(exc))
    finally:
        os.close(fd)


def scan_fatbin_bytes(data: bytes, name: str = "<bytes>") -> FatbinScan:
    """Like `scan_fatbin`, on the bytes of a whole file."""
    if not data:
        return _failed(name, "unknown", "empty file")
    return _scan(BytesReader(data if isinstance(data, bytes) else bytes(data)), name)


def scan_fatbin_reader(reader: Reader, name: str) -> FatbinScan:
    """Like `scan_fatbin`, through a reader of positioned reads (a spooled wheel member)."""
    try:
        return _scan(reader, name)
    except OSError as exc:
        return _failed(name, "unknown", os_problem(exc))


# -- the scan ---------------------------------------------------------------------------------


@dataclass
class _Found:
    sass: set[str] = field(default_factory=set)
    ptx: set[str] = field(default_factory=set)
    ptx_isa: set[str] = field(default_factory=set)
    entries: int = 0
    headers: int = 0  # containers and entries read
    problems: list[str] = field(default_factory=list)


def _scan(reader: Reader, name: str) -> FatbinScan:
    if reader.size == 0:
        return _failed(name, "unknown", "empty file")
    found = _Found()
    file_format = "unknown"
    try:
        file_format = detect_format(reader)
        for span in fatbin_sections(reader, file_format, found.problems):
            _walk_section(reader, span, found)
    except OSError as exc:  # the file went away or became unreadable while it was read
        found.problems.append(os_problem(exc))
    return FatbinScan(
        path=name,
        file_format=file_format,
        sass=tuple(sorted(found.sass, key=arch_sort_key)),
        ptx=tuple(sorted(found.ptx, key=arch_sort_key)),
        ptx_isa=tuple(sorted(found.ptx_isa, key=lambda v: tuple(map(int, v.split("."))))),
        has_device_code=found.entries > 0,
        problem=_join(found.problems),
    )


def _failed(name: str, file_format: str, problem: str) -> FatbinScan:
    return FatbinScan(name, file_format, (), (), has_device_code=False, problem=problem)


def _join(problems: list[str]) -> str | None:
    if not problems:
        return None
    shown = "; ".join(problems[:_MAX_PROBLEMS])
    hidden = len(problems) - _MAX_PROBLEMS
    return shown + (f"; and {hidden} more" if hidden > 0 else "")


# -- fatbin -----------------------------------------------------------------------------------


def _walk_section(reader: Reader, span: Span, found: _Found) -> None:
    offset, end = span.offset, span.offset + span.size
    while offset < end and not _too_many(found):
        offset = _skip_padding(reader, offset, end, found.problems)
        if offset >= end:
            return
        next_offset = _walk_container(reader, offset, end, found)
        if next_offset is None:
            return
        offset = next_offset


def _too_many(found: _Found) -> bool:
    if found.headers < _MAX_HEADERS:
        return False
    message = f"more than {_MAX_HEADERS} fatbin headers; scan stopped"
    if message not in found.problems:
        found.problems.append(message)
    return True


def _skip_padding(reader: Reader, offset: int, end: int, problems: list[str]) -> int:
    """The offset of the next container, or `end` when only zeros are left."""
    window = reader.read(offset, min(end - offset, _MAX_PADDING + 4))
    if window[:4] == struct.pack("<I", FATBIN_MAGIC):
        return offset
    gap = window.find(struct.pack("<I", FATBIN_MAGIC))
    gap = len(window) if gap < 0 else gap
    if window[:gap].count(0) == gap and (gap < len(window) or offset + gap >= end):
        return offset + gap
    if len(window) < 4:
        problems.append(f"truncated fatbin header at offset {offset:#x}")
    else:
        (magic,) = struct.unpack_from("<I", window)
        problems.append(f"bad fatbin magic {magic:#010x} at offset {offset:#x}")
    return end


def _walk_container(reader: Reader, offset: int, end: int, found: _Found) -> int | None:
    """Read one container's entries; the offset after it, or None when it cannot be trusted."""
    head = reader.read(offset, _CONTAINER.size)
    if len(head) < _CONTAINER.size or offset + _CONTAINER.size > end:
        found.problems.append(f"truncated fatbin header at offset {offset:#x}")
        return None
    found.headers += 1
    _, version, header_size, entries_size = _CONTAINER.unpack(head)
    if not _CONTAINER.size <= header_size <= _MAX_CONTAINER_HEADER:
        found.problems.append(f"bad fatbin header size {header_size} at offset {offset:#x}")
        return None
    start = offset + int(header_size)
    stop = start + int(entries_size)
    if version != 1:
        found.problems.append(f"unknown fatbin version {version} at offset {offset:#x}; skipped")
        return stop if stop <= end else None
    if stop > end:
        found.problems.append(
            f"fatbin container at offset {offset:#x} claims {entries_size} bytes, "
            f"only {max(0, end - start)} left in the section"
        )
        _walk_entries(reader, start, end, found)
        return None
    _walk_entries(reader, start, stop, found)
    return stop


def _walk_entries(reader: Reader, offset: int, stop: int, found: _Found) -> None:
    while offset < stop and not _too_many(found):
        found.headers += 1
        head = reader.read(offset, _ENTRY.size)
        if len(head) < _ENTRY.size or offset + _ENTRY.size > stop:
            found.problems.append(f"truncated fatbin entry header at offset {offset:#x}")
            return
        kind, _, header_size, payload_size, isa_minor, isa_major, arch, flags = _ENTRY.unpack(head)
        if not _MIN_ENTRY_HEADER <= header_size <= _MAX_ENTRY_HEADER:
            found.problems.append(f"bad fatbin entry header size {header_size} at {offset:#x}")
            return
        after = offset + header_size + payload_size
        if after > stop:
            found.problems.append(
                f"fatbin entry at offset {offset:#x} claims {payload_size} bytes, "
                f"only {max(0, stop - offset - header_size)} left in its container"
            )
            return
        _record(kind, arch, flags, offset, found)
        if kind == KIND_PTX and 1 <= isa_major < 100 and isa_minor < 100:
            found.ptx_isa.add(f"{isa_major}.{isa_minor}")
        offset = after


def _record(kind: int, arch: int, flags: int, offset: int, found: _Found) -> None:
    found.entries += 1
    if kind not in (KIND_PTX, KIND_ELF, KIND_ELF_OTHER):
        return  # LTO IR and kinds unknown today carry nothing a driver runs directly
    if not 10 <= arch < 10000:
        found.problems.append(f"implausible architecture {arch} in entry at {offset:#x}")
        return
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    if kind != KIND_PTX:
        found.sass.add(f"sm_{arch}{suffix}")
    else:
        found.ptx.add(f"compute_{arch}{suffix}")
