"""scan_fatbin: the SASS and PTX architectures read from the `.nv_fatbin` headers of a library.

Unit tests wrap recorded sections (tests/fixtures/fatbin, from real nvcc 13.0 output) in minimal
ELF and PE files built here. The `real` tests build small libraries with the nvcc on PATH.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuenv.probe import fatbin
from gpuenv.probe.fatbin import FatbinScan, arch_sort_key, scan_fatbin, scan_fatbin_bytes

FATBINS = Path(__file__).parent / "fixtures" / "fatbin"
MAGIC = struct.pack("<I", 0xBA55ED50)
ARCH = re.compile(r"^(sm|compute)_\d+[af]?$")

# recorded section -> (sass, ptx)
RECORDED = {
    "sm80_sm90_compute90": (("sm_80", "sm_90"), ("compute_90",)),
    "sm100a_compute100a_compute103f": (("sm_100a",), ("compute_100a", "compute_103f")),
    "compute75_only": ((), ("compute_75",)),
}


def recorded(name: str) -> bytes:
    return (FATBINS / f"{name}.nv_fatbin").read_bytes()


def archs(scan: FatbinScan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return scan.sass, scan.ptx


# -- building files -------------------------------------------------------------------------


def make_elf(section: bytes, name: bytes = b".nv_fatbin") -> bytes:
    """A minimal ELF64 shared object: the section at offset 64, .shstrtab, the section table."""
    names = b"\0" + name + b"\0.shstrtab\0"
    names_at = 64 + len(section)
    shoff = (names_at + len(names) + 7) // 8 * 8
    header = struct.pack(
        "<4sBBBBB7xHHIQQQIHHHHHH",
        *(b"\x7fELF", 2, 1, 1, 0, 0),  # ELF64, little-endian, version 1
        *(3, 62, 1, 0, 0, shoff, 0),  # ET_DYN, x86-64, entry, phoff, shoff, flags
        *(64, 56, 0, 64, 3, 2),  # ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    )
    table = b"\0" * 64
    table += struct.pack("<IIQQQQIIQQ", 1, 1, 2, 0, 64, len(section), 0, 0, 8, 0)
    table += struct.pack("<IIQQQQIIQQ", len(name) + 2, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)
    body = header + section + names
    return body + b"\0" * (shoff - len(body)) + table


def elf_section(data: bytes, wanted: bytes = b".nv_fatbin") -> tuple[int, int, int]:
    """(where its section header is, its offset, its size), read independently of gpuenv."""
    shoff, shentsize, shnum, shstrndx = struct.unpack_from("<Q10xHHH", data, 0x28)
    rows = [struct.unpack_from("<I20xQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = rows[shstrndx][1]
    for i, (name_at, offset, size) in enumerate(rows):
        start = names_at + name_at
        if data[start : data.index(b"\0", start)] == wanted:
            return shoff + i * shentsize, offset, size
    raise LookupError(wanted)


def make_pe(section: bytes, long_name: bool = False) -> bytes:
    """A minimal PE32+ DLL: DOS header, PE signature, COFF and optional headers, .text and the
    fatbin section (named `.nv_fatb` as link.exe cuts it, or `/4` into the COFF string table)."""
    file_align, sect_align, lfanew = 0x200, 0x1000, 0x80
    headers = _align(lfanew + 4 + 20 + 240 + 2 * 40, file_align)
    text = b"\xc3"  # ret
    fat_at = headers + file_align
    fat_raw = _align(len(section), file_align)
    strtab_at = fat_at + fat_raw
    image = _align(3 * sect_align, sect_align)
    dos = b"MZ" + b"\0" * 0x3A + struct.pack("<I", lfanew)
    coff = struct.pack("<HHIIIHH", 0x8664, 2, 0, strtab_at if long_name else 0, 0, 240, 0x2022)
    optional = struct.pack(
        "<HBBIIIIIQIIHHHHHHIIIIHHQQQQII",
        *(0x20B, 14, 0, file_align, fat_raw, 0, 0, sect_align, 0x180000000),
        *(sect_align, file_align, 6, 0, 0, 0, 6, 0, 0, image, headers, 0),
        *(2, 0x160, 0x100000, 0x1000, 0x100000, 0x1000, 0, 16),
    ) + b"\0" * (16 * 8)
    name = b"/4" if long_name else b".nv_fatb"
    sections = struct.pack(
        "<8sIIIIIIHHI", b".text", 1, sect_align, file_align, headers, 0, 0, 0, 0, 0x60000020
    )
    sections += struct.pack(
        "<8sIIIIIIHHI", name, len(section), 2 * sect_align, fat_raw, fat_at, 0, 0, 0, 0, 0x40000040
    )
    out = dos + b"\0" * (lfanew - len(dos)) + b"PE\0\0" + coff + optional + sections
    out += b"\0" * (headers - len(out)) + text.ljust(file_align, b"\0")
    out += section.ljust(fat_raw, b"\0")
    if long_name:
        out += struct.pack("<I", 4 + 11) + b".nv_fatbin\0"
    return out


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


def containers(section: bytes) -> Iterator[int]:
    """Offsets of the fatbin containers in a section (skipping zero padding)."""
    offset = 0
    while offset < len(section):
        found = section.find(MAGIC, offset)
        if found < 0:
            return
        yield found
        offset = found + 16 + struct.unpack_from("<Q", section, found + 8)[0]


def entries(section: bytes, container: int) -> list[int]:
    offset = container + 16
    end = offset + struct.unpack_from("<Q", section, container + 8)[0]
    found = []
    while offset < end:
        found.append(offset)
        header_size, payload_size = struct.unpack_from("<IQ", section, offset + 4)
        offset += header_size + payload_size
    return found


def patched(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def fake_container(*entries: tuple[int, int, int]) -> bytes:
    """A container of (kind, arch, flags) entries laid out as nvcc writes them."""
    body = b""
    for kind, arch, flags in entries:
        header = struct.pack("<HHIQIIHHIIIQ", kind, 0x101, 0x40, 16, 0, 0, 8, 1, arch, 0, 0, flags)
        body += header.ljust(0x40, b"\0") + b"\x5a" * 16
    return MAGIC + struct.pack("<HHQ", 1, 16, len(body)) + body


# -- recorded sections in synthetic files ---------------------------------------------------


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_section_in_elf_gives_its_archs(name: str) -> None:
    scan = scan_fatbin_bytes(make_elf(recorded(name)), name="lib.so")
    assert archs(scan) == RECORDED[name]
    assert (scan.file_format, scan.has_device_code, scan.problem) == ("elf", True, None)
    assert scan.path == "lib.so"


@pytest.mark.parametrize("long_name", [False, True], ids=["nv_fatb", "long-name"])
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_section_in_pe_gives_the_same_archs(name: str, long_name: bool) -> None:
    scan = scan_fatbin_bytes(make_pe(recorded(name), long_name=long_name))
    assert archs(scan) == RECORDED[name]
    assert (scan.file_format, scan.has_device_code, scan.problem) == ("pe", True, None)


def test_file_and_bytes_scans_agree(tmp_path: Path) -> None:
    data = make_pe(recorded("sm80_sm90_compute90"))
    (tmp_path / "lib.dll").write_bytes(data)
    on_disk = scan_fatbin(str(tmp_path / "lib.dll"))
    assert on_disk == scan_fatbin_bytes(data, name=str(tmp_path / "lib.dll"))
    assert on_disk.sass == ("sm_80", "sm_90")


def test_containers_separated_by_zero_padding_are_all_read() -> None:
    a, b = recorded("compute75_only"), recorded("sm100a_compute100a_compute103f")
    section = a + b"\0" * 8 + b + b"\0" * 24 + recorded("sm80_sm90_compute90") + b"\0" * 16
    scan = scan_fatbin_bytes(make_elf(section))
    assert scan.sass == ("sm_80", "sm_90", "sm_100a")
    assert scan.ptx == ("compute_75", "compute_90", "compute_100a", "compute_103f")
    assert scan.problem is None


def test_flags_give_arch_specific_and_family_suffixes() -> None:
    section = fake_container((2, 90, 0x100011), (2, 100, 0x1200011), (1, 120, 0x208011))
    section += fake_container((2, 75, 0x11), (1, 90, 0x8011), (2, 90, 0x2011))
    scan = scan_fatbin_bytes(make_elf(section))
    assert archs(scan) == (("sm_75", "sm_90", "sm_90a", "sm_100f"), ("compute_90", "compute_120f"))


def test_the_other_elf_kind_counts_as_sass() -> None:
    scan = scan_fatbin_bytes(make_elf(fake_container((0x10, 103, 0x1000011), (1, 103, 0x8011))))
    assert archs(scan) == (("sm_103",), ("compute_103",))


def test_lto_ir_counts_as_device_code_but_not_as_an_arch() -> None:
    scan = scan_fatbin_bytes(make_elf(fake_container((8, 80, 0x18011))))
    assert (scan.sass, scan.ptx, scan.has_device_code, scan.problem) == ((), (), True, None)


def test_no_fatbin_section_is_not_a_problem() -> None:
    scan = scan_fatbin_bytes(make_elf(b"\x90" * 32, name=b".text"))
    assert scan == FatbinScan("<bytes>", "elf", (), (), has_device_code=False, problem=None)


def test_empty_fatbin_section_has_no_device_code() -> None:
    scan = scan_fatbin_bytes(make_elf(b""))
    assert (scan.has_device_code, scan.problem) == (False, None)


def test_archs_sort_by_number_then_suffix() -> None:
    shuffled = ["sm_120", "sm_100f", "sm_90a", "sm_75", "sm_100", "sm_90", "sm_80", "sm_100a"]
    assert sorted(shuffled, key=arch_sort_key) == [
        *("sm_75", "sm_80", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_120")
    ]


# -- corrupt input --------------------------------------------------------------------------

MIXED = recorded("sm80_sm90_compute90")  # containers at 0 and 0xc60; the PTX entry last


def test_bad_magic_in_the_first_container_is_reported() -> None:
    scan = scan_fatbin_bytes(make_elf(patched(MIXED, 0, "<I", 0xDEADBEEF)))
    assert scan.problem == "bad fatbin magic 0xdeadbeef at offset 0x40"
    assert (scan.sass, scan.ptx, scan.has_device_code) == ((), (), False)


def test_bad_magic_later_keeps_what_came_before() -> None:
    second = list(containers(MIXED))[1]
    scan = scan_fatbin_bytes(make_elf(patched(MIXED, second, "<I", 0)))
    assert archs(scan) == (("sm_80", "sm_90"), ())
    assert scan.problem is not None and "bad fatbin magic 0x00000000" in scan.problem


def test_entry_size_past_its_container_drops_only_that_entry() -> None:
    ptx_entry = entries(MIXED, list(containers(MIXED))[1])[-1]
    scan = scan_fatbin_bytes(make_elf(patched(MIXED, ptx_entry + 8, "<Q", 2**40)))
    assert archs(scan) == (("sm_80", "sm_90"), ())
    assert (
        scan.problem is not None and f"fatbin entry at offset {64 + ptx_entry:#x}" in scan.problem
    )


@pytest.mark.parametrize("size", [2**63, 2**64 - 1, len(MIXED)])
def test_absurd_container_size_is_reported(size: int) -> None:
    scan = scan_fatbin_bytes(make_elf(patched(MIXED, 8, "<Q", size)))
    assert scan.problem is not None and "fatbin container at offset 0x40 claims" in scan.problem
    assert scan.sass == ("sm_80", "sm_90")  # the entries that fit are whole and read


@pytest.mark.parametrize(("offset", "value"), [(6, 0), (6, 0xFFFF), (16 + 4, 0), (16 + 4, 2**31)])
def test_absurd_header_sizes_are_reported(offset: int, value: int) -> None:
    fmt = "<H" if offset == 6 else "<I"
    scan = scan_fatbin_bytes(make_elf(patched(MIXED, offset, fmt, value)))
    assert scan.problem is not None and "header size" in scan.problem


def test_unknown_container_version_is_skipped_with_a_problem() -> None:
    scan = scan_fatbin_bytes(make_elf(patched(MIXED, 4, "<H", 2)))
    assert scan.problem == "unknown fatbin version 2 at offset 0x40; skipped"
    assert archs(scan) == (("sm_80", "sm_90"), ("compute_90",))  # from the second container


def test_pe_cut_inside_the_section_keeps_the_whole_containers() -> None:
    pe = make_pe(MIXED)
    fat_at = pe.index(MAGIC)
    scan = scan_fatbin_bytes(pe[: fat_at + 0xC60 + 100])
    assert archs(scan) == (("sm_80", "sm_90"), ())
    assert scan.problem is not None and "runs past the end of the file" in scan.problem


def test_elf_cut_short_loses_its_section_table() -> None:
    elf = make_elf(MIXED)
    scan = scan_fatbin_bytes(elf[: 64 + len(MIXED) // 2])
    assert scan.problem is not None
    assert scan.problem.startswith("ELF section header table at offset")
    assert (scan.file_format, scan.has_device_code) == ("elf", False)


def test_section_header_pointing_past_the_end_is_reported() -> None:
    elf = make_elf(MIXED)
    header_at, _, _ = elf_section(elf)
    scan = scan_fatbin_bytes(patched(elf, header_at + 24, "<Q", len(elf) + 4096))
    assert scan.problem is not None and "runs past the end of the file" in scan.problem
    assert not scan.has_device_code


def test_section_size_past_the_end_keeps_the_archs() -> None:
    elf = make_elf(MIXED)
    header_at, _, _ = elf_section(elf)
    scan = scan_fatbin_bytes(patched(elf, header_at + 32, "<Q", 2**40))
    assert archs(scan) == RECORDED["sm80_sm90_compute90"]
    assert scan.problem is not None and scan.problem.startswith("section .nv_fatbin at offset 0x40")


@pytest.mark.parametrize(
    "data",
    [b"hello, world\n" * 10, b"\0" * 100, b"MZ" + b"\0" * 200, b"!<arch>\n", b"\xca\xfe\xba\xbe"],
    ids=["text", "zeros", "mz-without-pe", "archive", "mach-o"],
)
def test_not_elf_or_pe_is_reported(data: bytes) -> None:
    scan = scan_fatbin_bytes(data, name="x")
    assert scan == FatbinScan(
        "x", "unknown", (), (), has_device_code=False, problem="not an ELF or PE file"
    )


@pytest.mark.parametrize("data", [b"\x7fELF", b"\x7fELF\x02\x01" + b"\0" * 20, b"\x7fELF\x07\x01"])
def test_truncated_or_odd_elf_header_is_reported(data: bytes) -> None:
    scan = scan_fatbin_bytes(data)
    assert (scan.file_format, scan.problem) == ("elf", "truncated or unsupported ELF header")


def test_pe_with_a_section_table_past_the_end_is_reported() -> None:
    pe = make_pe(MIXED)
    scan = scan_fatbin_bytes(patched(pe, 0x80 + 6, "<H", 60000))
    assert scan.problem is not None and scan.problem.startswith("PE section table at offset")


def test_empty_bytes() -> None:
    assert scan_fatbin_bytes(b"").problem == "empty file"


@settings(max_examples=300, deadline=None)
@given(at=st.integers(0, len(MIXED) + 600), value=st.integers(0, 255))
def test_any_corrupt_byte_gives_a_scan_not_an_exception(at: int, value: int) -> None:
    """Rule: whatever one byte becomes, the scan returns, and every arch it names is well-formed."""
    data = bytearray(make_elf(MIXED))
    data[at % len(data)] = value
    scan = scan_fatbin_bytes(bytes(data))
    assert all(ARCH.match(a) for a in scan.sass + scan.ptx)
    assert scan.sass == tuple(sorted(set(scan.sass), key=arch_sort_key))


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(1, len(make_pe(MIXED))))
def test_a_library_cut_short_never_invents_archs(cut: int) -> None:
    """Rule: a truncated library reports a subset of the whole one's archs, and a problem when the
    cut falls inside the fatbin section."""
    pe = make_pe(MIXED)
    scan = scan_fatbin_bytes(pe[:cut])
    assert set(scan.sass) <= {"sm_80", "sm_90"} and set(scan.ptx) <= {"compute_90"}
    if cut < pe.index(MAGIC) + len(MIXED):
        assert scan.problem is not None


# -- the file system ------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    scan = scan_fatbin(str(tmp_path / "nope.so"))
    assert (scan.file_format, scan.problem) == ("unknown", "file not found")


def test_directory(tmp_path: Path) -> None:
    assert scan_fatbin(str(tmp_path)).problem == "is a directory"


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.so").write_bytes(b"")
    assert scan_fatbin(str(tmp_path / "empty.so")).problem == "empty file"


def test_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "a.so").symlink_to(tmp_path / "b.so")
    (tmp_path / "b.so").symlink_to(tmp_path / "a.so")
    problem = scan_fatbin(str(tmp_path / "a.so")).problem
    assert problem is not None and problem.startswith("symlink loop")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.so")
    assert scan_fatbin(str(tmp_path / "pipe.so")).problem == "not a regular file"


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root reads files whatever their mode"
)
def test_unreadable_file(tmp_path: Path) -> None:
    lib = tmp_path / "secret.so"
    lib.write_bytes(make_elf(MIXED))
    lib.chmod(0)
    assert scan_fatbin(str(lib)).problem == "permission denied"


def test_permission_error_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "lib.so"
    lib.write_bytes(make_elf(MIXED))

    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    assert scan_fatbin(str(lib)).problem == "permission denied"


@pytest.mark.skipif(not hasattr(os, "pread"), reason="reads go through lseek/read here")
def test_read_error_midway_keeps_the_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "lib.so"
    lib.write_bytes(make_elf(MIXED))
    real_pread = os.pread

    def failing_pread(fd: int, length: int, offset: int) -> bytes:
        if offset >= 64:  # the ELF header reads fine, the section table does not
            raise OSError(errno.EIO, "Input/output error")
        return real_pread(fd, length, offset)

    monkeypatch.setattr(os, "pread", failing_pread)
    scan = scan_fatbin(str(lib))
    assert (scan.file_format, scan.problem) == ("elf", "cannot read file: Input/output error")


def test_header_count_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fatbin, "_MAX_HEADERS", 3)
    scan = scan_fatbin_bytes(make_elf(MIXED))
    assert scan.problem == "more than 3 fatbin headers; scan stopped"
    assert archs(scan) == (("sm_80", "sm_90"), ())  # the first container and its two entries


def test_nul_in_path() -> None:
    problem = scan_fatbin("lib\0.so").problem
    assert problem is not None and problem.startswith("invalid path")


# -- real libraries built by nvcc -----------------------------------------------------------

KERNEL = """
__global__ void scale_{n}(float* x) {{ x[threadIdx.x] *= {n}.0f; }}
extern "C" void launch_{n}(float* x) {{ scale_{n}<<<1, 32>>>(x); }}
"""


def gencode(*specs: str) -> list[str]:
    return [arg for spec in specs for arg in ("-gencode", spec)]


COMPRESS = ["-Xfatbin", "-compress-all"]
# name -> (nvcc arguments, expected sass, expected ptx)
BUILDS: dict[str, tuple[list[str], tuple[str, ...], tuple[str, ...]]] = {
    "sm75": (gencode("arch=compute_75,code=sm_75"), ("sm_75",), ()),
    "mixed": (
        gencode("arch=compute_80,code=sm_80", "arch=compute_90,code=[sm_90,compute_90]"),
        ("sm_80", "sm_90"),
        ("compute_90",),
    ),
    "sm90a": (gencode("arch=compute_90a,code=[sm_90a,compute_90a]"), ("sm_90a",), ("compute_90a",)),
    "blackwell": (
        gencode(
            *("arch=compute_100a,code=sm_100a", "arch=compute_100f,code=sm_100f"),
            *("arch=compute_120,code=sm_120", "arch=compute_120f,code=compute_120f"),
        ),
        ("sm_100a", "sm_100f", "sm_120"),
        ("compute_120f",),
    ),
    "ptx75": (gencode("arch=compute_75,code=compute_75"), (), ("compute_75",)),
    # -compress-all compresses every entry: Zstandard by default, LZ4 with -compress-mode=speed
    "zstd": (
        [*gencode("arch=compute_75,code=[sm_75,compute_75]"), *COMPRESS],
        ("sm_75",),
        ("compute_75",),
    ),
    "lz4": (
        [*gencode("arch=compute_86,code=[sm_86,compute_86]"), "-compress-mode=speed", *COMPRESS],
        ("sm_86",),
        ("compute_86",),
    ),
}
TWO_UNITS = ("sm_75", "sm_89"), ("compute_89",)  # one .cu built for sm_75, the other for sm_89


@pytest.fixture(scope="session")
def nvcc_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every library of BUILDS plus `two_units`, compiled once, side by side."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH: the real-library tests need a CUDA 13 toolkit")
    root = tmp_path_factory.mktemp("nvcc")
    sources = [root / f"k{n}.cu" for n in (1, 2)]
    for n, source in enumerate(sources, 1):
        source.write_text(KERNEL.format(n=n))
    shared = [nvcc, "-shared", "-Xcompiler", "-fPIC"]
    obj = [nvcc, "-c", "-Xcompiler", "-fPIC"]
    jobs = {
        name: [*shared, *args, str(sources[0]), "-o", str(root / f"{name}.so")]
        for name, (args, _, _) in BUILDS.items()
    }
    units = {
        "unit1": "arch=compute_75,code=sm_75",
        "unit2": "arch=compute_89,code=[sm_89,compute_89]",
    }
    for (unit, spec), source in zip(units.items(), sources):
        jobs[unit] = [*obj, *gencode(spec), str(source), "-o", str(root / f"{unit}.o")]
    _run_all(jobs)
    objects = [str(root / f"{unit}.o") for unit in units]
    _run_all({"two_units": [*shared, *objects, "-o", str(root / "two_units.so")]})
    return {name: root / f"{name}.so" for name in [*BUILDS, "two_units"]}


def _run_all(jobs: dict[str, list[str]]) -> None:
    env = {**os.environ, "LC_ALL": "C"}
    running = {
        name: subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        for name, argv in jobs.items()
    }
    for name, process in running.items():
        output, _ = process.communicate(timeout=300)
        if process.returncode != 0:
            pytest.fail(f"nvcc failed for {name}: {output.decode(errors='replace')[-2000:]}")


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_real_library_archs(nvcc_libs: dict[str, Path], name: str) -> None:
    _, sass, ptx = BUILDS[name]
    scan = scan_fatbin(str(nvcc_libs[name]))
    assert (scan.sass, scan.ptx) == (sass, ptx)
    assert (scan.file_format, scan.has_device_code, scan.problem) == ("elf", True, None)


@pytest.mark.real
def test_real_library_of_two_translation_units(nvcc_libs: dict[str, Path]) -> None:
    data = nvcc_libs["two_units"].read_bytes()
    _, offset, size = elf_section(data)
    assert len(list(containers(data[offset : offset + size]))) >= 2
    assert archs(scan_fatbin(str(nvcc_libs["two_units"]))) == TWO_UNITS


@pytest.mark.real
@pytest.mark.parametrize("long_name", [False, True])
def test_real_fatbin_in_a_pe_gives_the_same_archs(
    nvcc_libs: dict[str, Path], long_name: bool
) -> None:
    for name in ("mixed", "blackwell", "lz4"):
        data = nvcc_libs[name].read_bytes()
        _, offset, size = elf_section(data)
        scan = scan_fatbin_bytes(make_pe(data[offset : offset + size], long_name=long_name))
        assert (scan.file_format, scan.problem) == ("pe", None)
        assert archs(scan) == archs(scan_fatbin(str(nvcc_libs[name])))


@pytest.mark.real
def test_real_library_corrupted(nvcc_libs: dict[str, Path], tmp_path: Path) -> None:
    data = nvcc_libs["mixed"].read_bytes()
    header_at, offset, size = elf_section(data)
    first_entry = offset + 16
    copies = {
        "cut": (data[: offset + size // 2], "ELF section header table at offset"),
        "magic": (patched(data, offset, "<I", 0x12345678), "bad fatbin magic 0x12345678"),
        "entry": (patched(data, first_entry + 8, "<Q", 2**40), f"entry at offset {first_entry:#x}"),
        "section": (
            patched(data, header_at + 32, "<Q", len(data)),
            "runs past the end of the file",
        ),
    }
    for name, (corrupt, expected) in copies.items():
        (tmp_path / f"{name}.so").write_bytes(corrupt)
        scan = scan_fatbin(str(tmp_path / f"{name}.so"))
        assert scan.problem is not None and expected in scan.problem, name
        assert set(scan.sass) <= {"sm_80", "sm_90"} and set(scan.ptx) <= {"compute_90"}, name


SYSTEM_LIBS = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib/libc.so.6",
]


@pytest.mark.real
def test_real_system_library_has_no_device_code() -> None:
    libc = next((p for p in SYSTEM_LIBS if os.path.isfile(p)), None)
    if libc is None:
        pytest.skip("no libc.so.6 at a known path")
    scan = scan_fatbin(libc)
    assert scan == FatbinScan(libc, "elf", (), (), has_device_code=False, problem=None)


@pytest.mark.real
def test_real_cuda_runtime_scans_cleanly() -> None:
    found = sorted(Path("/usr/local").glob("cuda*/lib64/libcudart.so.*"))
    if not found:
        pytest.skip("no libcudart under /usr/local/cuda*")
    scan = scan_fatbin(str(found[0]))
    assert (scan.file_format, scan.problem) == ("elf", None)
    assert all(ARCH.match(a) for a in scan.sass + scan.ptx)
