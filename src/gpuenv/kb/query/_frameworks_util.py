"""Version keys shared by the framework lookups (torch.py, frameworks.py)."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version


def parsed_version(text: str) -> Version | None:
    """A version as pip reads it ('2.4.1+cu121', '2.7.0.dev20250311'); None when unreadable."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


def release_tuple(text: object) -> tuple[int, ...] | None:
    """'2.4.1+cu121' -> (2, 4, 1); '0.12.0.1' -> (0, 12, 0, 1); anything unreadable -> None."""
    if not isinstance(text, str) or not text.strip():
        return None
    version = parsed_version(text.strip())
    return version.release if version is not None else None


def minor_line(text: object) -> tuple[int, int] | None:
    """'2.4.1' -> (2, 4): the minor line a release belongs to."""
    parts = release_tuple(text)
    if parts is None:
        return None
    return (parts[0], parts[1] if len(parts) > 1 else 0)


def in_range(value: tuple[int, ...], low: object, high: object) -> bool:
    """low <= value <= high on release tuples, comparing only as many parts as the bound has;
    a missing high bound is open."""
    low_parts = release_tuple(low)
    if low_parts is None or _cut(value, len(low_parts)) < low_parts:
        return False
    if high is None:
        return True
    high_parts = release_tuple(high)
    return high_parts is not None and _cut(value, len(high_parts)) <= high_parts


def _cut(value: tuple[int, ...], width: int) -> tuple[int, ...]:
    """`value` cut or zero-padded to `width` parts."""
    return (value + (0,) * width)[:width]
