"""Reading wheel members with range requests: real zip archives built here with zipfile, served by
a real HTTP server on 127.0.0.1 (tests/wheel_server.py) and read with the real urllib client."""

from __future__ import annotations

import os
import random
import struct
import zipfile
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuenv.index.remote_zip import (
    TAIL,
    Budget,
    BudgetExceeded,
    RemoteZip,
    ZipUnreadable,
    directory_span,
    parse_directory,
)
from gpuenv.kbtools import index_client as ic
from tests.wheel_server import WheelServer, make_wheel, metadata_text, serving

METADATA = metadata_text("demo", "1.0", ("numpy>=1.22", "nvidia-cudnn-cu13==9.26.0.51"))
VERSION_PY = b"__version__ = '1.0+cu132'\ncuda = '13.2'\n"
BIG = os.urandom(300_000)  # incompressible: the archive is larger than one tail read


@pytest.fixture(scope="module")
def server() -> Iterator[WheelServer]:
    with serving() as state:
        state.files["demo-1.0-py3-none-any.whl"] = make_wheel(
            {
                "demo/__init__.py": b"",
                "demo/version.py": VERSION_PY,
                "demo/blob.bin": BIG,
                "demo-1.0.dist-info/METADATA": METADATA,
            },
            stored=("demo/blob.bin", "demo/version.py"),
        )
        state.files["small-1.0-py3-none-any.whl"] = make_wheel(
            {"small-1.0.dist-info/METADATA": metadata_text("small", "1.0")}
        )
        members = {f"many/{n}.txt": b"" for n in range(70_000)}
        members["many-1.0.dist-info/METADATA"] = metadata_text("many", "1.0")
        state.files["many-1.0-py3-none-any.whl"] = make_wheel(members)
        state.files["garbage-1.0-py3-none-any.whl"] = random.Random(1).randbytes(100_000)
        yield state


def remote(server: WheelServer, name: str, how: str = "files", **caps: int) -> RemoteZip:
    return RemoteZip(server.url(name, how), ic.urllib_range, Budget(**caps))


def test_members_are_read_with_a_few_ranges_not_the_whole_file(server: WheelServer) -> None:
    server.log.clear()
    archive = remote(server, "demo-1.0-py3-none-any.whl").open()
    assert set(archive.members) >= {"demo/version.py", "demo-1.0.dist-info/METADATA"}
    assert archive.read("demo-1.0.dist-info/METADATA") == METADATA  # deflated
    assert archive.read("demo/version.py") == VERSION_PY  # stored
    ranges = [r for _, r in server.log]
    assert ranges[0] == f"bytes=-{TAIL}" and all(r.startswith("bytes=") for r in ranges)
    assert archive._budget.used < 100_000 < archive.size  # the 300 kB blob was never read


def test_a_large_stored_member_streams_in_capped_chunks(server: WheelServer) -> None:
    archive = remote(server, "demo-1.0-py3-none-any.whl").open()
    parts: list[bytes] = []
    archive.stream("demo/blob.bin", parts.append, chunk=64 * 1024)
    assert b"".join(parts) == BIG and len(parts) >= 5


def test_a_redirect_is_followed_with_its_range(server: WheelServer) -> None:
    archive = remote(server, "demo-1.0-py3-none-any.whl", "redirect").open()
    assert archive.read("demo-1.0.dist-info/METADATA") == METADATA


def test_zip64_archive_with_more_than_65535_members(server: WheelServer) -> None:
    data = server.files["many-1.0-py3-none-any.whl"]
    assert struct.pack("<I", 0x06064B50) in data[-200:]  # zipfile wrote a zip64 end record
    archive = remote(server, "many-1.0-py3-none-any.whl").open()
    assert len(archive.members) == 70_001
    assert b"Name: many" in archive.read("many-1.0.dist-info/METADATA")


def test_a_server_that_ignores_range_is_not_read_to_the_end(server: WheelServer) -> None:
    server.sent = 0
    with pytest.raises(ZipUnreadable, match="ignores range requests") as caught:
        remote(server, "demo-1.0-py3-none-any.whl", "norange").open()
    assert "instead of downloading the whole file" in str(caught.value)
    # a small file sent whole is simply used
    archive = remote(server, "small-1.0-py3-none-any.whl", "norange").open()
    assert b"Name: small" in archive.read("small-1.0.dist-info/METADATA")


def test_byte_caps_per_request_and_per_run(server: WheelServer) -> None:
    with pytest.raises(BudgetExceeded, match="per request"):
        remote(server, "many-1.0-py3-none-any.whl", per_request=TAIL).open()
    budget = Budget(total=TAIL + 10)
    archive = RemoteZip(server.url("demo-1.0-py3-none-any.whl"), ic.urllib_range, budget).open()
    with pytest.raises(BudgetExceeded, match="for this run"):
        archive.read("demo/blob.bin")
    assert budget.used <= budget.total


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("garbage-1.0-py3-none-any.whl", "no end of central directory"),
        ("absent-1.0-py3-none-any.whl", "HTTP 404"),
    ],
)
def test_garbled_or_missing_archives_are_a_clear_problem(
    server: WheelServer, name: str, message: str
) -> None:
    with pytest.raises(ZipUnreadable, match=message):
        remote(server, name).open()


def test_a_damaged_member_fails_its_crc(server: WheelServer) -> None:
    data = bytearray(make_wheel({"d/x.txt": b"hello world" * 50}, stored=("d/x.txt",)))
    data[40] ^= 0xFF  # inside the stored data (30-byte header + 7-byte name)
    server.files["damaged-1.0-py3-none-any.whl"] = bytes(data)
    archive = remote(server, "damaged-1.0-py3-none-any.whl").open()
    with pytest.raises(ZipUnreadable, match="CRC-32"):
        archive.read("d/x.txt")
    with pytest.raises(ZipUnreadable, match="not in the archive"):
        archive.read("d/y.txt")


def test_an_unsupported_compression_is_refused(server: WheelServer) -> None:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_BZIP2) as archive:
        archive.writestr("x.txt", b"x" * 100)
    server.files["bz-1.0-py3-none-any.whl"] = buffer.getvalue()
    with pytest.raises(ZipUnreadable, match="compression method 12"):
        remote(server, "bz-1.0-py3-none-any.whl").open().read("x.txt")


# -- the pure parts, on any bytes ---------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400), cut=st.integers(0, 400))
def test_any_bytes_give_members_or_zip_unreadable(data: bytes, cut: int) -> None:
    """Rule: garbled bytes never raise anything but ZipUnreadable."""
    real = make_wheel({"a/METADATA": b"Name: a\n"})
    for tail in (data, real[:cut] + data, real[cut:]):
        try:
            offset, size, count = directory_span(tail, 0)
            parse_directory(tail[offset : offset + size], min(count, 1000))
        except ZipUnreadable:
            pass


def test_a_zip64_extra_field_cut_short_is_not_a_crash() -> None:
    big = 0xFFFFFFFF
    fields = (0x02014B50, 20, 20, 0, 8, 0, 0, 0, big, big, 1, 12, 0, 0, 0, 0, big)
    entry = struct.pack("<IHHHHHHIIIHHHHHII", *fields)
    entry += b"x" + struct.pack("<HH", 1, 24) + b"\x05" + b"\x00" * 7  # claims 24, holds 8
    members = parse_directory(entry, 1)
    assert members["x"].size == 5 and members["x"].compressed_size == 0xFFFFFFFF
