"""How long scan_fatbin takes on a library the size of libtorch_cuda.so, or on any library given.

    python benchmarks/bench_fatbin.py                 # a synthetic 500 MB ELF, cold then warm
    python benchmarks/bench_fatbin.py --size-mb 2000  # bigger
    python benchmarks/bench_fatbin.py LIB [LIB ...]   # real libraries: archs and time

The synthetic library is a sparse file: an ELF header, then a `.nv_fatbin` section of containers
laid out as nvcc 13 writes them (one per translation unit, ten entries each, SASS and PTX for seven
architectures), whose payloads are holes; then the section name table and the section table. Only
the headers take disk space, so building it is quick; it is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

from gpuenv.probe.fatbin import FATBIN_MAGIC, FatbinScan, scan_fatbin

# (kind, arch, flags): kind 2 SASS, 1 PTX; flags 0x11 plain, 0x100011 arch-specific ("a")
ENTRIES = [(2, a, 0x11) for a in (75, 80, 86, 89, 90, 100, 120)]
ENTRIES += [(2, 90, 0x100011), (2, 100, 0x100011), (1, 120, 0x8011)]
ENTRY_HEADER = 0x40


def build_sparse_library(path: Path, size_mb: int, payload_kb: int) -> int:
    """Write the synthetic library; returns how many entries its fatbin holds."""
    payload = payload_kb * 1024
    container_size = 16 + len(ENTRIES) * (ENTRY_HEADER + payload)
    count = max(1, size_mb * 1024 * 1024 // container_size)
    with open(path, "wb") as out:
        out.seek(64)
        for _ in range(count):
            out.write(container_header(len(ENTRIES) * (ENTRY_HEADER + payload)))
            for kind, arch, flags in ENTRIES:
                out.write(entry_header(kind, arch, flags, payload))
                out.seek(payload, os.SEEK_CUR)
        section_size = out.tell() - 64
        names = b"\0.nv_fatbin\0.shstrtab\0"
        names_at = out.tell()
        out.write(names)
        shoff = (out.tell() + 7) // 8 * 8
        out.seek(shoff)
        out.write(section_table(section_size, names_at, len(names)))
        out.seek(0)
        out.write(elf_header(shoff))
    return count * len(ENTRIES)


def container_header(entries_size: int) -> bytes:
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, entries_size)


def entry_header(kind: int, arch: int, flags: int, payload: int) -> bytes:
    header = struct.pack("<HHIQIIHHIIIQ", kind, 0x101, ENTRY_HEADER, payload, 0, 0, 8, 1, arch,
                         0, 0, flags)  # fmt: skip
    return header.ljust(ENTRY_HEADER, b"\0")


def elf_header(shoff: int) -> bytes:
    return struct.pack(
        "<4sBBBBB7xHHIQQQIHHHHHH",
        *(b"\x7fELF", 2, 1, 1, 0, 0, 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 3, 2),
    )


def section_table(section_size: int, names_at: int, names_size: int) -> bytes:
    row = struct.Struct("<IIQQQQIIQQ")
    return (
        b"\0" * row.size
        + row.pack(1, 1, 2, 0, 64, section_size, 0, 0, 8, 0)
        + row.pack(12, 3, 0, 0, names_at, names_size, 0, 0, 1, 0)
    )


def drop_from_page_cache(path: Path) -> bool:
    """Ask the kernel to forget the file's pages so the next scan reads the disk (Linux only)."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def timed_scan(path: str) -> tuple[FatbinScan, float]:
    start = time.perf_counter()
    scan = scan_fatbin(path)
    return scan, time.perf_counter() - start


def describe(scan: FatbinScan) -> str:
    parts = [f"format={scan.file_format}", f"device_code={scan.has_device_code}"]
    parts += [f"sass={','.join(scan.sass) or '-'}", f"ptx={','.join(scan.ptx) or '-'}"]
    if scan.problem:
        parts.append(f"problem={scan.problem!r}")
    return " ".join(parts)


def bench_synthetic(size_mb: int, payload_kb: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gpuenv-bench-fatbin-") as folder:
        lib = Path(folder) / "libsynthetic_cuda.so"
        start = time.perf_counter()
        entries = build_sparse_library(lib, size_mb, payload_kb)
        built = time.perf_counter() - start
        on_disk = getattr(os.stat(lib), "st_blocks", 0) * 512
        print(f"built {lib.stat().st_size / 2**20:.0f} MB ({on_disk / 2**20:.1f} MB on disk), "
              f"{entries} entries, in {built:.2f} s")  # fmt: skip
        cold = drop_from_page_cache(lib)
        for run in range(repeats):
            scan, seconds = timed_scan(str(lib))
            label = "first (page cache dropped)" if run == 0 and cold else f"scan {run + 1}"
            print(f"  {label:28} {seconds * 1000:8.1f} ms")
        print(f"  {describe(scan)}")


def bench_paths(paths: list[str], repeats: int) -> None:
    for path in paths:
        times = []
        for _ in range(repeats):
            scan, seconds = timed_scan(path)
            times.append(seconds)
        shown = ", ".join(f"{t * 1000:.1f}" for t in times)
        print(f"{path}\n  {describe(scan)}\n  times ms: {shown}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="libraries to scan instead of a synthetic one")
    parser.add_argument("--size-mb", type=int, default=500)
    parser.add_argument("--payload-kb", type=int, default=24, help="size of each entry's payload")
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args(argv)
    if args.paths:
        bench_paths(args.paths, args.repeats)
    else:
        bench_synthetic(args.size_mb, args.payload_kb, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
