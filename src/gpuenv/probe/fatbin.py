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
      0x1c u32 arch (75, 90, 100 ...)
      0x28 u64 flags: 0x100000 arch-specific (sm_90a), 0x200000 family (sm_100f),
                      0x2000 LZ4-compressed, 0x8000 Zstandard-compressed, 0x2 debug (-G)

A section holds one container per translation unit; the linker pads between them with zeros up to
the section alignment, and nvcc also writes empty containers. On Windows the linker cuts section
names to 8 bytes, so a DLL's section is `.nv_fatb`.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass, field
from typing import Protocol

FATBIN_MAGIC = 0xBA55ED50
SECTION_NAMES = (".nv_fatbin", ".nv_fatb")  # ELF / long PE name; PE image name cut to 8 bytes

KIND_PTX = 1
KIND_ELF = 2
# Not written by nvcc 13.0 for plain -gencode builds; cuBLASLt 13 holds such entries and cuobjdump
# --list-elf lists them as ELF, as reverse-engineering notes on the format report. Taken as SASS.
KIND_ELF_OTHER = 0x10
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000

_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, entries size
_ENTRY = struct.Struct("<HHIQ12xI8xQ")  # kind, version, header size, payload size, arch, flags
_MIN_ENTRY_HEADER = 0x40
# headers larger than these are corruption, not a future format (entries hold option strings)
_MAX_CONTAINER_HEADER = 0x100
_MAX_ENTRY_HEADER = 0x10000
_MAX_PADDING = 4096  # zeros allowed between containers (section alignment)
_MAX_STRTAB = 1 << 20
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


def arch_sort_key(name: str) -> tuple[int, str, str]:
    """Order "sm_75" < "sm_90" < "sm_90a" < "sm_100" < "sm_100f" < "sm_120"."""
    prefix, _, rest = name.partition("_")
    digits = rest.rstrip("abcdefghijklmnopqrstuvwxyz")
    number = int(digits) if digits.isdigit() else -1
    return (number, rest[len(digits) :], prefix)


def scan_fatbin(path: str) -> FatbinScan:
    """The SASS and PTX architectures in the library at `path`; never raises."""
    problem = _not_scannable(path)
    if problem is not None:
        return _failed(path, "unknown", problem)
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return _failed(path, "unknown", _os_problem(exc))
    try:
        reader = _FileReader(fd)
        if not reader.regular:  # swapped for something else since the stat
            return _failed(path, "unknown", "not a regular file")
        return _scan(reader, path)
    except OSError as exc:
        return _failed(path, "unknown", _os_problem(exc))
    finally:
        os.close(fd)


def scan_fatbin_bytes(data: bytes, name: str = "<bytes>") -> FatbinScan:
    """Like `scan_fatbin`, on the bytes of a whole file."""
    if not data:
        return _failed(name, "unknown", "empty file")
    return _scan(_BytesReader(data if isinstance(data, bytes) else bytes(data)), name)


# -- reading ----------------------------------------------------------------------------------


class _Reader(Protocol):
    size: int

    def read(self, offset: int, length: int) -> bytes: ...


class _BytesReader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self.size = len(data)

    def read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]


class _FileReader:
    def __init__(self, fd: int) -> None:
        info = os.fstat(fd)
        self._fd = fd
        self.size = info.st_size
        self.regular = stat.S_ISREG(info.st_mode)

    def read(self, offset: int, length: int) -> bytes:
        if offset >= self.size or length <= 0:
            return b""
        if hasattr(os, "pread"):
            return os.pread(self._fd, length, offset)
        os.lseek(self._fd, offset, os.SEEK_SET)  # Windows has no pread
        return os.read(self._fd, length)


def _not_scannable(path: str) -> str | None:
    """Refuse what cannot be a library before opening it: opening a FIFO would block."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return _os_problem(exc)
    except (TypeError, ValueError) as exc:  # a NUL in the name, not a path at all
        return f"invalid path: {exc}"
    if stat.S_ISDIR(info.st_mode):
        return "is a directory"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size == 0:
        return "empty file"
    return None


_OS_PROBLEMS = {
    errno.ENOENT: "file not found",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "symlink loop (too many levels of symbolic links)",
    errno.EISDIR: "is a directory",
}


def _os_problem(exc: OSError) -> str:
    return _OS_PROBLEMS.get(exc.errno or 0, f"cannot read file: {exc.strerror or exc}")


# -- the scan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    offset: int  # in the file
    size: int  # bytes that the file really holds


@dataclass
class _Found:
    sass: set[str] = field(default_factory=set)
    ptx: set[str] = field(default_factory=set)
    entries: int = 0
    headers: int = 0  # containers and entries read
    problems: list[str] = field(default_factory=list)


def _scan(reader: _Reader, name: str) -> FatbinScan:
    if reader.size == 0:
        return _failed(name, "unknown", "empty file")
    found = _Found()
    file_format = "unknown"
    try:
        file_format = _detect(reader)
        for span in _sections(reader, file_format, found.problems):
            _walk_section(reader, span, found)
    except OSError as exc:  # the file went away or became unreadable while it was read
        found.problems.append(_os_problem(exc))
    return FatbinScan(
        path=name,
        file_format=file_format,
        sass=tuple(sorted(found.sass, key=arch_sort_key)),
        ptx=tuple(sorted(found.ptx, key=arch_sort_key)),
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


def _detect(reader: _Reader) -> str:
    head = reader.read(0, 4)
    if head == b"\x7fELF":
        return "elf"
    if head[:2] == b"MZ" and _pe_header_offset(reader) is not None:
        return "pe"
    return "unknown"


def _sections(reader: _Reader, file_format: str, problems: list[str]) -> list[_Span]:
    if file_format == "elf":
        return _elf_sections(reader, problems)
    if file_format == "pe":
        return _pe_sections(reader, problems)
    problems.append("not an ELF or PE file")
    return []


def _clip(reader: _Reader, name: str, offset: int, size: int, problems: list[str]) -> _Span:
    if offset + size > reader.size:
        problems.append(
            f"section {name} at offset {offset:#x} ({size} bytes) runs past the end of the file "
            f"({reader.size} bytes)"
        )
        size = max(0, reader.size - offset)
    return _Span(offset, size)


# -- ELF --------------------------------------------------------------------------------------


# (file header: e_shoff, e_shentsize, e_shnum, e_shstrndx; where it starts;
#  section header: sh_name, sh_type, sh_flags, sh_offset, sh_size, sh_link)
_ELF64 = ("Q10xHHH", 0x28, "IIQ8xQQI")
_ELF32 = ("I10xHHH", 0x20, "III4xIII")
_ElfLayout = tuple[struct.Struct, int, struct.Struct]
_SHT_NOBITS = 8
_SHF_COMPRESSED = 0x800


def _elf_layout(ident: bytes) -> _ElfLayout | None:
    if len(ident) < 6 or ident[4] not in (1, 2):
        return None
    endian = ">" if ident[5] == 2 else "<"
    header, at, section = _ELF64 if ident[4] == 2 else _ELF32
    return struct.Struct(endian + header), at, struct.Struct(endian + section)


def _elf_sections(reader: _Reader, problems: list[str]) -> list[_Span]:
    layout = _elf_layout(reader.read(0, 6))
    head = b"" if layout is None else reader.read(layout[1], layout[0].size)
    if layout is None or len(head) < layout[0].size:
        problems.append("truncated or unsupported ELF header")
        return []
    shoff, entsize, shnum, shstrndx = layout[0].unpack(head)
    if shoff == 0:
        problems.append("no ELF section header table (stripped?)")
        return []
    if entsize < layout[2].size:
        problems.append(f"bad ELF section header size {entsize}")
        return []
    rows = _elf_rows(reader, layout[2], shoff, entsize, shnum, problems)
    if rows is None:
        return []
    shstrndx = rows[0][5] if shstrndx == 0xFFFF else shstrndx  # extended numbering
    if shstrndx >= len(rows):
        problems.append(f"bad ELF section name table index {shstrndx}")
        return []
    strtab = reader.read(rows[shstrndx][3], min(rows[shstrndx][4], _MAX_STRTAB))
    found = [row for row in rows if _cstring(strtab, row[0]) == ".nv_fatbin"]
    return [s for s in (_elf_span(reader, row, problems) for row in found) if s is not None]


def _elf_rows(
    reader: _Reader, row: struct.Struct, shoff: int, entsize: int, shnum: int, problems: list[str]
) -> list[tuple[int, ...]] | None:
    first = reader.read(shoff, entsize)
    if len(first) == entsize and shnum == 0:  # extended numbering: the count is in section 0
        shnum = row.unpack_from(first)[4]
    if len(first) < entsize or shoff + shnum * entsize > reader.size:
        problems.append(_past_end("ELF section header table", shoff, reader.size))
        return None
    table = reader.read(shoff, shnum * entsize)
    return [row.unpack_from(table, i * entsize) for i in range(shnum)]


def _elf_span(reader: _Reader, row: tuple[int, ...], problems: list[str]) -> _Span | None:
    _, kind, flags, offset, size, _ = row
    if kind == _SHT_NOBITS:  # a debug-only copy holds no section data
        problems.append("section .nv_fatbin has no data in this file (SHT_NOBITS)")
        return None
    if flags & _SHF_COMPRESSED:
        problems.append("section .nv_fatbin is compressed (SHF_COMPRESSED); not read")
        return None
    return _clip(reader, ".nv_fatbin", offset, size, problems)


def _cstring(table: bytes, at: int) -> str:
    end = table.find(b"\0", at)
    return table[at : end if end >= 0 else len(table)].decode("latin-1")


def _past_end(what: str, offset: int, size: int) -> str:
    return f"{what} at offset {offset:#x} runs past the end of the file ({size} bytes)"


# -- PE ---------------------------------------------------------------------------------------

_PE_SECTION = struct.Struct("<8sIIII")  # name, virtual size, virtual address, raw size, raw offset


def _pe_header_offset(reader: _Reader) -> int | None:
    lfanew_bytes = reader.read(0x3C, 4)
    if len(lfanew_bytes) < 4:
        return None
    (lfanew,) = struct.unpack("<I", lfanew_bytes)
    return lfanew if reader.read(lfanew, 4) == b"PE\0\0" else None


def _pe_sections(reader: _Reader, problems: list[str]) -> list[_Span]:
    lfanew = _pe_header_offset(reader) or 0
    coff = reader.read(lfanew + 4, 20)
    if len(coff) < 20:
        problems.append("truncated PE header")
        return []
    _, count, _, symtab, nsyms, opt_size, _ = struct.unpack("<HHIIIHH", coff)
    table_at = lfanew + 24 + opt_size
    table = reader.read(table_at, count * 40)
    if len(table) < count * 40:
        problems.append(_past_end("PE section table", table_at, reader.size))
        return []
    spans = []
    for i in range(count):
        raw_name, vsize, _, raw_size, raw_at = _PE_SECTION.unpack_from(table, i * 40)
        name = _pe_name(reader, raw_name, symtab + nsyms * 18)
        if name in SECTION_NAMES:
            size = min(vsize, raw_size) if vsize else raw_size  # raw size is rounded up
            spans.append(_clip(reader, name, raw_at, size, problems))
    return spans


def _pe_name(reader: _Reader, raw: bytes, strtab_at: int) -> str:
    name = raw.rstrip(b"\0").decode("latin-1")
    if name.startswith("/") and name[1:].isdigit():  # long name kept in the COFF string table
        return _cstring(reader.read(strtab_at + int(name[1:]), 64), 0)
    return name


# -- fatbin -----------------------------------------------------------------------------------


def _walk_section(reader: _Reader, span: _Span, found: _Found) -> None:
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


def _skip_padding(reader: _Reader, offset: int, end: int, problems: list[str]) -> int:
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


def _walk_container(reader: _Reader, offset: int, end: int, found: _Found) -> int | None:
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


def _walk_entries(reader: _Reader, offset: int, stop: int, found: _Found) -> None:
    while offset < stop and not _too_many(found):
        found.headers += 1
        head = reader.read(offset, _ENTRY.size)
        if len(head) < _ENTRY.size or offset + _ENTRY.size > stop:
            found.problems.append(f"truncated fatbin entry header at offset {offset:#x}")
            return
        kind, _, header_size, payload_size, arch, flags = _ENTRY.unpack(head)
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
