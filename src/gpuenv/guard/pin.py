"""Pinning: the installer's own settings that make it refuse to move a GPU-critical package. Pure.

- pip: a constraints file in the env, named in the env's own `pip.conf` (`[install] constraint`),
  which every pip of that env reads (pip's "site" configuration, `<sys.prefix>/pip.conf`);
- uv: `constraint-dependencies` in the project's `[tool.uv]` (pyproject.toml), or in `uv.toml`
  where the project has no pyproject.toml;
- conda, mamba: `conda-meta/pinned`, one match spec a line.

Each edit is a `FileEdit` (the bytes before, None when the file did not exist, and after), so a
dry run shows a diff and `unpin` puts back exactly the bytes that were there.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from packaging.version import InvalidVersion, Version

from gpuenv.errors import GpuenvError
from gpuenv.guard.model import Lock, local_label
from gpuenv.kb.toml_writer import toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10
    import tomli as tomllib

CONSTRAINTS_NAME = "gpuenv-constraints.txt"
RECORD_NAME = "gpuenv-pin.json"
MARK = "gpuenv pin"
COMMENT = (
    f"# {MARK}: GPU-critical packages keep their locked versions (`gpuenv unpin` removes this)"
)


@dataclass(frozen=True)
class FileEdit:
    path: str
    before: str | None  # None: the file did not exist
    after: str | None  # None: the file is removed
    what: str  # "pip constraints", "pip configuration", "uv constraints", "conda pins"

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(
            old,
            new,
            fromfile=self.path if self.before is not None else "/dev/null",
            tofile=self.path if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def pip_requirement(name: str, version: str) -> str:
    """An exact requirement pip and uv hold to: `torch==2.1.0+cu121`, `torch===2.1.0`.

    A version without a local label is written with `===` (PEP 440 arbitrary equality, compared
    as text): `torch==2.1.0` also admits `2.1.0+cpu`, which pip and uv even prefer (a local
    version sorts after its public one), so a constraint written that way lets a CPU build
    replace the CUDA torch of the package index."""
    if local_label(version):
        return f"{name}=={version}"
    try:
        text = str(Version(version))  # what pip compares with: the normalised version
    except InvalidVersion:
        text = version
    return f"{name}==={text}"


def constraints_text(lock: Lock) -> str:
    lines = [
        f"# {MARK}: the GPU-critical packages of {lock.env.prefix or lock.env.python}",
        "# as locked" + (f" on {lock.created_at}" if lock.created_at else "") + ".",
        "# pip reads this through the env's pip.conf; `gpuenv unpin` removes both.",
    ]
    lines += [pip_requirement(p.name, p.version) for p in lock.critical]
    return "\n".join(lines) + "\n"


def constraint_reference(path: str) -> str:
    """How pip.conf names the constraints file: pip splits the value on whitespace, so a path
    with a space is written as a file: URL."""
    if not re.search(r"\s", path):
        return path
    return PurePath(path).as_uri() if PurePath(path).is_absolute() else quote(path)


# -- pip.conf ----------------------------------------------------------------------------------

_SECTION = re.compile(r"^\s*\[(?P<name>[^\]]+)\]\s*$")
_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_-]+)\s*[=:]")


def pip_conf_with_constraint(before: str | None, reference: str) -> str:
    """`before` with `reference` added to the constraint setting pip install uses.

    Where [install] (or, without it, [global]) already names constraints, the file is added to
    that value (pip reads a list); otherwise a `constraint` line is added to [install], creating
    the section at the end where there is none."""
    text = before or ""
    lines = text.splitlines(keepends=True)
    sections = _sections(lines)
    for name in ("install", "global"):
        where = _constraint_value_end(lines, sections.get(name))
        if where is not None:
            return _insert(lines, where, [f"    {reference}\n"])
    install = sections.get("install")
    if install is not None:
        return _insert(lines, install[0] + 1, [COMMENT + "\n", f"constraint = {reference}\n"])
    lead = "" if not text or text.endswith("\n") else "\n"
    gap = "\n" if text.strip() else ""
    return text + lead + gap + f"{COMMENT}\n[install]\nconstraint = {reference}\n"


def _sections(lines: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Section name -> (header line, end line) for the first section of each name."""
    found: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    for number, line in enumerate(lines):
        match = _SECTION.match(line)
        if match:
            if current is not None and current not in found:
                found[current] = (start, number)
            current, start = match.group("name").strip().lower(), number
    if current is not None and current not in found:
        found[current] = (start, len(lines))
    return found


def _constraint_value_end(lines: Sequence[str], span: tuple[int, int] | None) -> int | None:
    """The line after the last line of an existing `constraint` value in the section."""
    if span is None:
        return None
    start, end = span
    for number in range(start + 1, end):
        match = _KEY.match(lines[number])
        if match and match.group("key").lower().replace("_", "-") == "constraint":
            after = number + 1
            while after < end and lines[after][:1] in (" ", "\t") and lines[after].strip():
                after += 1
            return after
    return None


def _insert(lines: Sequence[str], at: int, new: Sequence[str]) -> str:
    head = list(lines[:at])
    if head and not head[-1].endswith("\n"):
        head[-1] += "\n"
    return "".join([*head, *new, *lines[at:]])


# -- uv ------------------------------------------------------------------------------------------


def uv_constraints(lock: Lock) -> list[str]:
    return [pip_requirement(p.name, p.version) for p in lock.critical]


def pyproject_with_constraints(before: str, requirements: Sequence[str], name: str) -> str:
    """pyproject.toml with `constraint-dependencies` in [tool.uv]; an existing setting is not
    merged (gpuenv would have to rewrite it) but refused with the lines to add by hand."""
    data = _toml(before, name)
    uv = data.get("tool", {}).get("uv", {})
    _refuse_existing(uv, requirements, name, "[tool.uv]")
    block = [COMMENT + "\n", _constraint_line(requirements)]
    lines = before.splitlines(keepends=True)
    header = next(
        (i for i, line in enumerate(lines) if re.match(r"^\s*\[\s*tool\s*\.\s*uv\s*\]\s*$", line)),
        None,
    )
    if header is not None:
        after = _insert(lines, header + 1, block)
    else:
        lead = "" if not before or before.endswith("\n") else "\n"
        after = before + lead + "\n[tool.uv]\n" + "".join(block)
    _check_toml(after, data, "tool", requirements, name)
    return after


def uv_toml_with_constraints(before: str | None, requirements: Sequence[str], name: str) -> str:
    """uv.toml with a top-level `constraint-dependencies` (top-level keys come first)."""
    data = _toml(before or "", name)
    _refuse_existing(data, requirements, name, "its top level")
    after = COMMENT + "\n" + _constraint_line(requirements) + (before or "")
    _check_toml(after, data, None, requirements, name)
    return after


def _constraint_line(requirements: Sequence[str]) -> str:
    items = "".join(f"    {toml_value(r)},\n" for r in requirements)
    return f"constraint-dependencies = [\n{items}]\n"


def _toml(text: str, name: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise GpuenvError(
            "bad-config", f"{name} is not valid TOML ({exc}); gpuenv left it"
        ) from None


def _refuse_existing(
    table: Mapping[str, object], requirements: Sequence[str], name: str, where: str
) -> None:
    if "constraint-dependencies" in table:
        raise GpuenvError(
            "pin-conflict",
            f"{name} already sets constraint-dependencies in {where}; gpuenv does not rewrite it",
            hints=("add these to it yourself: " + ", ".join(toml_value(r) for r in requirements),),
        )


def _check_toml(
    after: str,
    before: Mapping[str, Any],
    table: str | None,
    requirements: Sequence[str],
    name: str,
) -> None:
    """The edited text must parse and hold the same data plus the constraints."""
    try:
        data = tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:
        raise GpuenvError(
            "pin-conflict",
            f"adding constraint-dependencies to {name} would make it invalid TOML ({exc})",
            hints=("add [tool.uv] constraint-dependencies yourself",),
        ) from None
    uv = data.get("tool", {}).get("uv", {}) if table == "tool" else data
    assert uv.get("constraint-dependencies") == list(requirements)


# -- conda ---------------------------------------------------------------------------------------


def conda_spec(name: str, version: str, build: str | None) -> str:
    """An exact match spec: `pytorch ==2.1.0 py3.11_cuda12.1_cudnn8.9.2_0`."""
    return f"{name} =={version}" + (f" {build}" if build else "")


def conda_pinned_with_specs(before: str | None, lock: Lock) -> str:
    specs = [conda_spec(p.name, p.version, p.build) for p in lock.critical_conda]
    text = before or ""
    lead = "" if not text or text.endswith("\n") else "\n"
    return text + lead + f"{COMMENT}\n" + "".join(f"{spec}\n" for spec in specs)


def unheld(env_now: Lock, edits: Sequence[FileEdit]) -> tuple[str, ...]:
    """What the pin cannot reach in this env, to be said rather than implied: an env without pip
    (made by uv) outside a uv project gets a pip.conf nothing reads, and uv reads nothing in an
    env (only a project's pyproject.toml or uv.toml, and the user's own uv.toml)."""
    if not edits or env_now.package("pip") is not None:
        return ()
    if any(e.what in ("uv constraints", "conda pins") for e in edits):
        return ()
    return (
        "this env has no pip and is not part of a uv project: `uv pip install` reads neither "
        "pip.conf nor anything else in the env, so nothing holds it to this pin; install "
        "through `gpuenv guard -- uv pip install ...`",
    )


# -- the pin record: what `unpin` puts back -----------------------------------------------------


def record_text(edits: Sequence[FileEdit]) -> str:
    """The JSON record pin leaves in the env: each file's bytes before and after."""
    files = [{"path": e.path, "before": e.before, "after": e.after, "what": e.what} for e in edits]
    return json.dumps({"gpuenv_pin": 1, "files": files}, indent=1) + "\n"


def parse_record(text: str, name: str) -> tuple[FileEdit, ...]:
    try:
        doc = json.loads(text)
        files = doc["files"]
        edits = tuple(
            FileEdit(str(f["path"]), f["before"], f["after"], str(f.get("what", ""))) for f in files
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise GpuenvError(
            "bad-pin-record",
            f"{name} is not a gpuenv pin record ({type(exc).__name__}: {exc})",
            hints=("remove the pin settings by hand: see docs/guard.md",),
        ) from None
    for edit in edits:
        for side in (edit.before, edit.after):
            if side is not None and not isinstance(side, str):
                raise GpuenvError("bad-pin-record", f"{name}: {edit.path} has a bad entry")
    return edits


@dataclass(frozen=True)
class Undo:
    """What unpin does to one file: put `content` back (None: remove it), or keep the file and
    say why."""

    path: str
    current: str | None
    content: str | None
    note: str | None = None  # the file changed after pin: what gpuenv did instead

    @property
    def edit(self) -> FileEdit:
        return FileEdit(self.path, self.current, self.content, "unpin")


def undo(edit: FileEdit, current: str | None) -> Undo:
    """How to take back one pin edit, given the file as it is now."""
    if current == edit.after:
        return Undo(edit.path, current, edit.before)
    if current is None:
        return Undo(edit.path, None, None, note="already removed")
    if edit.after is not None and edit.before is not None:
        added = _added_text(edit.before, edit.after)
        if added and current.count(added) == 1:
            return Undo(
                edit.path,
                current,
                current.replace(added, "", 1),
                note="changed since pin: only the lines pin added were removed",
            )
    if edit.before is None and edit.after is not None and current.startswith(edit.after):
        rest = current[len(edit.after) :]
        return Undo(edit.path, current, rest or None, note="changed since pin: pin's lines removed")
    return Undo(
        edit.path, current, current, note="changed since pin: left as it is, edit it by hand"
    )


def _added_text(before: str, after: str) -> str | None:
    """The one contiguous piece pin inserted into `before` to make `after`."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < len(before) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    added = after[start : len(after) - end]
    return (
        added if added and before[:start] + added + before[len(before) - end :] == after else None
    )
