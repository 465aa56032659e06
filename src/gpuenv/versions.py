"""Version types of the GPU stack, each named for what it is.

Driver versions ("535.183.01", Windows "551.78"), CUDA versions ("12.2", "13.0.88", or the
driver API integer 12020), and compute capabilities ("8.6", "9.0a", "sm_90a", "compute_90").
All parsers return None for text they cannot read, never raise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from packaging.version import InvalidVersion, Version

_DOTTED = re.compile(r"^\s*v?(\d+(?:\.\d+)*)\s*$")
_CC = re.compile(r"^\s*(?:sm_|compute_|sm|cc)?(\d+)(?:\.?(\d))?([af]?)\s*$", re.IGNORECASE)


def dotted(text: str | None) -> tuple[int, ...] | None:
    """'535.183.01' -> (535, 183, 1); anything else -> None."""
    if not text:
        return None
    match = _DOTTED.match(text)
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def sortable(text: object) -> Version:
    """A package version as pip reads it, for sorting and comparing ('2.4.1+cu121'); text it
    cannot read sorts first, as version 0."""
    try:
        return Version(str(text))
    except InvalidVersion:
        return Version("0")


def cudnn_from_code(code: int) -> str:
    """cuDNN's integer version, as its headers, torch and TensorFlow print it: 8902 -> '8.9.2'
    (major * 1000 up to cuDNN 8), 90100 -> '9.1.0' (major * 10000 from 9)."""
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


@total_ordering
@dataclass(frozen=True)
class DriverVersion:
    parts: tuple[int, ...]

    @classmethod
    def parse(cls, text: str | None) -> DriverVersion | None:
        parts = dotted(text)
        return cls(parts) if parts else None

    @property
    def branch(self) -> int:
        return self.parts[0]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, DriverVersion):
            return NotImplemented
        return _padded(self.parts, other.parts) < _padded(other.parts, self.parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DriverVersion):
            return NotImplemented
        return _padded(self.parts, other.parts) == _padded(other.parts, self.parts)

    def __hash__(self) -> int:
        return hash(tuple(p for p in self.parts) + (0,) * (4 - len(self.parts)))

    def __str__(self) -> str:
        head, *rest = self.parts
        return ".".join([str(head), *(f"{p:02d}" for p in rest)])


@total_ordering
@dataclass(frozen=True)
class CudaVersion:
    major: int
    minor: int
    patch: int | None = None

    @classmethod
    def parse(cls, text: str | int | None) -> CudaVersion | None:
        """'12.2', '12.2.140', 'cu121', 'cuda12.1', 12020 (cuDriverGetVersion) -> CudaVersion."""
        if text is None or isinstance(text, bool):
            return None
        if isinstance(text, int) or (isinstance(text, str) and text.strip().isdigit()):
            number = int(text)
            if number >= 1000:
                return cls(number // 1000, (number % 1000) // 10)
            return None
        value = text.strip().lower()
        label = re.match(r"^(?:cu|cuda)(\d{2,3})$", value)
        if label:
            digits = label.group(1)
            return cls(int(digits[:-1]), int(digits[-1]))
        value = value.removeprefix("cuda").strip()
        parts = dotted(value)
        if not parts or len(parts) < 2:
            return None
        return cls(parts[0], parts[1], parts[2] if len(parts) > 2 else None)

    @property
    def short(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def label(self) -> str:
        """The PyTorch index label: 12.1 -> 'cu121'."""
        return f"cu{self.major}{self.minor}"

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch or 0)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, CudaVersion):
            return NotImplemented
        return self._key() < other._key()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CudaVersion):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.short if self.patch is None else f"{self.short}.{self.patch}"


@total_ordering
@dataclass(frozen=True)
class ComputeCapability:
    major: int
    minor: int
    suffix: str = ""  # "a" (arch-specific) or "f" (family), only on compile targets

    @classmethod
    def parse(cls, text: str | None) -> ComputeCapability | None:
        """'8.6', '86', 'sm_86', 'compute_90a', 'sm_100f' -> ComputeCapability."""
        if not text:
            return None
        match = _CC.match(text)
        if not match:
            return None
        whole, minor, suffix = match.group(1), match.group(2), match.group(3).lower()
        if minor is None:
            if len(whole) < 2:
                return None
            return cls(int(whole[:-1]), int(whole[-1]), suffix)
        return cls(int(whole), int(minor), suffix)

    @property
    def short(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}{self.suffix}"

    def _key(self) -> tuple[int, int, str]:
        return (self.major, self.minor, self.suffix)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ComputeCapability):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        return self.short + self.suffix


def _padded(parts: tuple[int, ...], other: tuple[int, ...]) -> tuple[int, ...]:
    width = max(len(parts), len(other))
    return parts + (0,) * (width - len(parts))
