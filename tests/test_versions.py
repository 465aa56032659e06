"""The shared version helpers of gpuenv.versions that the typed versions do not cover."""

from __future__ import annotations

import pytest
from packaging.version import Version

from gpuenv.versions import cudnn_from_code, sortable


def test_sortable_orders_releases_as_pip_does() -> None:
    found = ["2.10.0", "2.9.1", "2.4.1+cu121", "2.7.0.dev20250311", "2.4.1"]
    assert sorted(found, key=sortable) == [
        "2.4.1",
        "2.4.1+cu121",
        "2.7.0.dev20250311",
        "2.9.1",
        "2.10.0",
    ]


@pytest.mark.parametrize("text", ["", "latest", "nightly-2024", None, "1..2"])
def test_unreadable_text_sorts_first_as_version_zero(text: object) -> None:
    assert sortable(text) == Version("0")
    assert sorted(["0.1", text], key=sortable)[0] == text


def test_sortable_reads_what_is_not_a_string() -> None:
    assert sortable(13) == Version("13")


@pytest.mark.parametrize(
    ("code", "version"), [(7605, "7.6.5"), (8902, "8.9.2"), (90100, "9.1.0"), (90300, "9.3.0")]
)
def test_cudnn_integer_versions_read_for_each_scheme(code: int, version: str) -> None:
    assert cudnn_from_code(code) == version
