"""Where a named section lies in an ELF or PE file, read with positioned reads of headers only.

Used by the fatbin reader: a 500 MB library costs a few small reads here. Problems (a section
table past the end of the file, a truncated header) are collected as text, never raised.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass
from typing import Protocol

SECTION_NAMES = (".nv_fatbin", ".nv_fatb")  # ELF / long PE name; PE image name cut to 8 bytes
_MAX_STRTAB = 1 << 20


# -- reading ----------------------------------------------------------------------------------


class Reader(Protocol):
    size: int

    def read(self, offset: int, length: int) -> bytes: ...


class BytesReader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self.size = len(data)

    def read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]


class FileReader:
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


def not_scannable(path: str) -> str | None:
    """Refuse what cannot be a library before opening it: opening a FIFO would block."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return os_problem(exc)
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


def os_problem(exc: OSError) -> str:
    return _OS_PROBLEMS.get(exc.errno or 0, f"cannot read file: {exc.strerror or exc}")


@dataclass(frozen=True)
class Span:
    offset: int  # in the file
    size: int  # bytes that the file really holds


def detect_format(reader: Reader) -> str:
    head = reader.read(0, 4)
    if head == b"\x7fELF":
        return "elf"
    if head[:2] == b"MZ" and _pe_header_offset(reader) is not None:
        return "pe"
    return "unknown"


def fatbin_sections(reader: Reader, file_format: str, problems: list[str]) -> list[Span]:
    if file_format == "elf":
        return _elf_sections(reader, problems)
    if file_format == "pe":
        return _pe_sections(reader, problems)
    problems.append("not an ELF or PE file")
    return []


def _clip(reader: Reader, name: str, offset: int, size: int, problems: list[str]) -> Span:
    if offset + size > reader.size:
        problems.append(
            f"section {name} at offset {offset:#x} ({size} bytes) runs past the end of the file "
            f"({reader.size} bytes)"
        )
        size = max(0, reader.size - offset)
    return Span(offset, size)


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


def _elf_sections(reader: Reader, problems: list[str]) -> list[Span]:
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
    reader: Reader, row: struct.Struct, shoff: int, entsize: int, shnum: int, problems: list[str]
) -> list[tuple[int, ...]] | None:
    first = reader.read(shoff, entsize)
    if len(first) == entsize and shnum == 0:  # extended numbering: the count is in section 0
        shnum = row.unpack_from(first)[4]
    if len(first) < entsize or shoff + shnum * entsize > reader.size:
        problems.append(_past_end("ELF section header table", shoff, reader.size))
        return None
    table = reader.read(shoff, shnum * entsize)
    return [row.unpack_from(table, i * entsize) for i in range(shnum)]


def _elf_span(reader: Reader, row: tuple[int, ...], problems: list[str]) -> Span | None:
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


def _pe_header_offset(reader: Reader) -> int | None:
    lfanew_bytes = reader.read(0x3C, 4)
    if len(lfanew_bytes) < 4:
        return None
    (lfanew,) = struct.unpack("<I", lfanew_bytes)
    return lfanew if reader.read(lfanew, 4) == b"PE\0\0" else None


def _pe_sections(reader: Reader, problems: list[str]) -> list[Span]:
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


def _pe_name(reader: Reader, raw: bytes, strtab_at: int) -> str:
    name = raw.rstrip(b"\0").decode("latin-1")
    if name.startswith("/") and name[1:].isdigit():  # long name kept in the COFF string table
        return _cstring(reader.read(strtab_at + int(name[1:]), 64), 0)
    return name
