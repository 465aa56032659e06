"""`conda info` (virtual packages such as __cuda, conda and Python versions, platform) and
`conda list` rows (name, version, build string, channel)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_INFO_KEY = re.compile(r"^\s*([a-z][a-z -]{1,30}?)\s+:\s*(.*?)\s*$")
_VIRTUAL = re.compile(r"^\s*(__[a-z0-9_]+)=(\S+?)(?:=(\S+))?\s*$")
_LIST_ROW = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9_.-]*)\s+(\d[\w.+!-]*)\s+([\w.+!-]+)(?:\s+([\w./:-]+))?\s*$"
)
ANCHORS = ("virtual packages :", "conda version :", "# packages in environment at", "conda list")


@dataclass(frozen=True)
class CondaInfo:
    conda_version: str | None = None
    python_version: str | None = None  # "3.10.8.final.0" as printed
    platform: str | None = None  # "linux-64"
    virtual_packages: tuple[str, ...] = ()  # "__cuda=12.0=0" as printed

    @property
    def cuda(self) -> str | None:
        """The __cuda virtual package: the CUDA the driver supports, as conda sees it."""
        for package in self.virtual_packages:
            name, _, rest = package.partition("=")
            if name == "__cuda":
                return rest.split("=")[0] or None
        return None

    @property
    def glibc(self) -> str | None:
        for package in self.virtual_packages:
            if package.startswith("__glibc="):
                return package.split("=")[1]
        return None


@dataclass(frozen=True)
class CondaPackageRow:
    name: str
    version: str
    build: str
    channel: str | None
    line: int  # within the lines given


def parse_conda_info(lines: list[str]) -> CondaInfo | None:
    values: dict[str, str] = {}
    virtual: list[str] = []
    in_virtual = False
    for raw in lines:
        line = raw.replace("\t", " ")
        key = _INFO_KEY.match(line)
        if key:
            name = key.group(1).strip()
            values.setdefault(name, key.group(2))
            in_virtual = name == "virtual packages"
            line = " " + key.group(2) if in_virtual else ""
        elif in_virtual and not line.strip():
            in_virtual = False
        if in_virtual:
            virtual.extend(_virtual(line))
    if not values or not ({"conda version", "virtual packages"} & set(values)):
        return None
    return CondaInfo(
        conda_version=values.get("conda version") or None,
        python_version=values.get("python version") or None,
        platform=values.get("platform") or None,
        virtual_packages=tuple(virtual),
    )


def _virtual(line: str) -> list[str]:
    """One virtual package a line; a cut paste may leave junk before it."""
    at = line.find("__")
    match = _VIRTUAL.match(line[at:]) if at >= 0 else None
    return [match.group(0).strip()] if match else []


def parse_conda_list(lines: list[str]) -> tuple[CondaPackageRow, ...]:
    """Rows of `conda list` (also the `[conda] …` lines of collect_env, without their prefix)."""
    rows = []
    for number, raw in enumerate(lines):
        line = raw.strip().removeprefix("[conda]").strip()
        if line.startswith("#"):
            continue
        match = _LIST_ROW.match(line)
        if match:
            name, version, build, channel = match.groups()
            rows.append(CondaPackageRow(name, version, build, channel, number))
    return tuple(rows)
