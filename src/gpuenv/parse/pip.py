"""What pip prints about packages: `pip list` and `pip freeze` rows, "Successfully installed …",
and the tags of a wheel file name (which Python and platform it is for)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_FREEZE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][^\s;#]*)\s*$")
_LIST = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s+([0-9][A-Za-z0-9.+!_-]*)(?:\s+\S.*)?$")
_INSTALLED = re.compile(r"Successfully installed\s+(.+)$")
_NAME_VERSION = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*?)-([0-9][A-Za-z0-9.+!_]*)$")
WHEEL = re.compile(
    r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>[0-9][A-Za-z0-9_.+!]*)(?:-\d[^-\s]*)?"
    r"-(?P<python>(?:cp|py|pp)[0-9]{1,3}[A-Za-z0-9_.]*)-(?P<abi>[A-Za-z0-9_.]+)"
    r"-(?P<platform>[A-Za-z0-9_.]+)\.whl"
)
ANCHORS = ("pip list", "pip freeze", "Package    ", "Successfully installed")


@dataclass(frozen=True)
class PipPackage:
    name: str
    version: str
    line: int  # within the lines given


@dataclass(frozen=True)
class WheelTags:
    name: str
    version: str
    python: str  # "cp35", "cp312", "py3"
    abi: str
    platform: str  # "linux_x86_64", "win_amd64", "macosx_10_6_x86_64", "manylinux_2_28_x86_64"

    @property
    def python_version(self) -> str | None:
        """'3.5' from cp35, '3.12' from cp312; None for py3 and other generic tags."""
        match = re.fullmatch(r"cp(\d)(\d{1,2})", self.python.split(".")[0])
        return f"{match.group(1)}.{match.group(2)}" if match else None

    @property
    def os(self) -> str | None:
        platform = self.platform.lower()
        if platform.startswith(("linux", "manylinux", "musllinux")):
            return "linux"
        if platform.startswith("win"):
            return "windows"
        if platform.startswith("macosx"):
            return "darwin"
        return None


def parse_wheel_name(text: str) -> WheelTags | None:
    match = WHEEL.search(text)
    if match is None:
        return None
    return WheelTags(
        match.group("name"),
        match.group("version"),
        match.group("python"),
        match.group("abi"),
        match.group("platform"),
    )


def parse_pip_packages(lines: list[str]) -> tuple[PipPackage, ...]:
    """`pip freeze` (name==version) and `pip list` (two columns) rows, and the packages of
    'Successfully installed a-1.0 b-2.0' lines."""
    found: list[PipPackage] = []
    for number, raw in enumerate(lines):
        line = raw.strip()
        installed = _INSTALLED.search(line)
        if installed:
            for word in installed.group(1).split():
                pair = _NAME_VERSION.match(word)
                if pair:
                    found.append(PipPackage(pair.group(1), pair.group(2), number))
            continue
        row = _FREEZE.match(line) or _LIST.match(line)
        if row and not line.startswith(("Package", "-")):
            found.append(PipPackage(row.group(1), row.group(2), number))
    return tuple(found)
