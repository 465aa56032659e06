"""What is wanted: `torch`, `"torch>=2.4,<2.7"`, `jax`, lines of a requirements file, or a
pyproject's dependencies, parsed into Wants (planned by gpuenv) and carried lines (passed on).

Pure text in, data out. Reading files is the caller's job: `parse_requirements` takes the text and
a function that returns the text of an included file (`-r other.txt`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gpuenv.errors import GpuenvError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

MAX_TEXT = 1_000_000  # characters of one requirements file or pyproject
MAX_LINE = 4_000
MAX_DEPTH = 8  # nested -r includes

# Distribution names (canonical) -> the framework gpuenv plans for them.
FRAMEWORKS = {
    "torch": "torch",
    "pytorch": "torch",
    "torchvision": "torchvision",
    "torchaudio": "torchaudio",
    "tensorflow": "tensorflow",
    "tensorflow-gpu": "tensorflow",
    "tf": "tensorflow",
    "jax": "jax",
    "jaxlib": "jax",
    "cupy": "cupy",
    "cupy-cuda11x": "cupy",
    "cupy-cuda12x": "cupy",
    "cupy-cuda13x": "cupy",
    "onnxruntime": "onnxruntime",
    "onnxruntime-gpu": "onnxruntime",
    "djl": "djl",
    "qupath": "djl",
    # compiled torch extensions: planned against the torch chosen with them
    "flash-attn": "flash-attn",
    "xformers": "xformers",
    "torch-scatter": "torch-scatter",
    "torch-sparse": "torch-sparse",
    "mmcv": "mmcv",
    "mmcv-full": "mmcv",
    "apex": "apex",
}
# pip options that choose indexes or sources: gpuenv chooses those itself.
_SOURCE_OPTIONS = (
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--no-index",
    "--pre",
    "--trusted-host",
    "--prefer-binary",
    "--only-binary",
    "--no-binary",
)

Include = Callable[[str], tuple[str, str]]  # name -> (origin label, text)


@dataclass(frozen=True)
class Want:
    """A package gpuenv plans: its framework, the user's constraint and where it was asked for."""

    framework: str  # "torch"
    name: str  # canonical name as written: "pytorch", "cupy-cuda12x"
    specifier: str = ""  # PEP 440 specifier, "" for any version
    extras: tuple[str, ...] = ()
    marker: str | None = None
    raw: str = ""
    origin: str = "argument"


@dataclass(frozen=True)
class Request:
    wants: tuple[Want, ...]
    carried: tuple[str, ...] = ()  # other requirement lines, verbatim (without options)
    notes: tuple[str, ...] = ()

    @property
    def frameworks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(w.framework for w in self.wants))


def parse_want(text: str, origin: str = "argument", echo: bool = True) -> Want | None:
    """A requirement string -> a Want, or None when it is not a package gpuenv plans."""
    requirement = _requirement(text, origin, echo)
    name = canonicalize_name(requirement.name)
    framework = FRAMEWORKS.get(name)
    if framework is None:
        return None
    if requirement.url:
        raise GpuenvError(
            "bad-requirement",
            f"{origin}: {text.strip()!r} names a URL; gpuenv chooses where {name} comes from",
            hints=("write the package with a version constraint instead, e.g. 'torch>=2.4'",),
        )
    return Want(
        framework=framework,
        name=name,
        specifier=str(requirement.specifier),
        extras=tuple(sorted(requirement.extras)),
        marker=str(requirement.marker) if requirement.marker else None,
        raw=text.strip(),
        origin=origin,
    )


def _requirement(text: str, origin: str, echo: bool = True) -> Requirement:
    if len(text) > MAX_LINE:
        raise GpuenvError("bad-requirement", f"{origin}: a requirement of {len(text)} characters")
    try:
        return Requirement(text.strip())
    except InvalidRequirement as exc:
        if not (echo and _REQUIREMENT_LIKE.fullmatch(text.strip())):
            # a line of a file that is not a requirements file (an included -r /etc/shadow):
            # say where, never what it holds
            raise GpuenvError(
                "bad-requirement",
                f"{origin}: not a requirement (is this a requirements file?); the line is not "
                "shown",
                hints=("write requirements as pip does, e.g. torch or 'torch>=2.4,<2.7'",),
            ) from None
        raise GpuenvError(
            "bad-requirement",
            f"{origin}: cannot read {_shown(text)} as a requirement",
            cause=str(exc).splitlines()[0] if str(exc) else None,
            hints=("write it as pip does, e.g. torch or 'torch>=2.4,<2.7'",),
        ) from None


# What a mistyped requirement can look like; anything else may be content from another file.
_REQUIREMENT_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._\-\[\],<>=!~;:'\"@/+*()]{0,200}")


def _shown(text: str) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in text.strip())
    return repr(clean[:80] + ("…" if len(clean) > 80 else ""))


def request_from_arguments(arguments: Sequence[str]) -> Request:
    """Positional wants: each must be a package gpuenv plans."""
    wants = []
    for text in arguments:
        want = parse_want(text)
        if want is None:
            name = canonicalize_name(_requirement(text, "argument").name)
            raise GpuenvError(
                "unknown-package",
                f"gpuenv does not plan {name!r}",
                hints=(
                    "it plans the GPU stack: " + ", ".join(sorted(set(FRAMEWORKS.values()))),
                    "list other packages in a requirements file (-r): they are carried along "
                    "as written",
                ),
            )
        wants.append(want)
    return merge([Request(wants=tuple(wants))])


def merge(requests: Iterable[Request]) -> Request:
    """One request from several (arguments, -r files). A framework asked for twice keeps its
    first place and must meet both constraints (`torch>=2.4` and `torch<2.7`)."""
    wants: dict[str, Want] = {}
    carried: list[str] = []
    notes: list[str] = []
    for request in requests:
        for want in request.wants:
            wants[want.framework] = (
                _both(wants[want.framework], want) if want.framework in wants else want
            )
        carried.extend(c for c in request.carried if c not in carried)
        notes.extend(request.notes)
    if not wants:
        raise GpuenvError(
            "nothing-to-plan",
            "no package gpuenv plans was asked for",
            hints=("name one, e.g. `gpuenv plan torch`, or give -r requirements.txt",),
        )
    return Request(wants=tuple(wants.values()), carried=tuple(carried), notes=tuple(notes))


def _both(first: Want, second: Want) -> Want:
    specifier = ",".join(s for s in (first.specifier, second.specifier) if s)
    name = first.name if second.name in (first.name, second.framework) else second.name
    extras = tuple(sorted(set(first.extras) | set(second.extras)))
    raw = first.raw if first.raw == second.raw else f"{first.raw}, {second.raw}"
    return Want(first.framework, name, specifier, extras, first.marker, raw, first.origin)


def parse_requirements(text: str, origin: str, include: Include, depth: int = 0) -> Request:
    """A requirements file: planned wants, carried lines, and notes on what was left out."""
    if len(text) > MAX_TEXT:
        raise GpuenvError("bad-requirements-file", f"{origin} is larger than {MAX_TEXT} characters")
    wants: list[Want] = []
    carried: list[str] = []
    notes: list[str] = []
    parts: list[Request] = []
    for number, line in _logical_lines(text):
        where = f"{origin}:{number}"
        if line.startswith("-"):
            included = _option(line, where, include, depth, notes)
            if included is not None:
                parts.append(included)
            continue
        _requirement_line(line, where, wants, carried, notes, echo=depth == 0)
    parts.insert(0, Request(tuple(wants), tuple(carried), tuple(notes)))
    merged_wants = tuple(w for part in parts for w in part.wants)
    merged_carried = tuple(dict.fromkeys(c for part in parts for c in part.carried))
    return Request(merged_wants, merged_carried, tuple(n for part in parts for n in part.notes))


def _requirement_line(
    line: str,
    where: str,
    wants: list[Want],
    carried: list[str],
    notes: list[str],
    echo: bool = True,
) -> None:
    text, _, options = line.partition(" --")
    if options:
        notes.append(f"{where}: options after the requirement (--{options.split()[0]}) dropped")
    if _looks_like_path(text):
        carried.append(text.strip())
        return
    want = parse_want(text, where, echo)
    if want is None:
        # an unreadable line is an error, not a carried one; carried lines are normalised
        carried.append(str(_requirement(text, where, echo)))
    else:
        wants.append(want)


def _looks_like_path(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith((".", "/", "file:")) or stripped.endswith((".whl", ".tar.gz"))


def _option(
    line: str, where: str, include: Include, depth: int, notes: list[str]
) -> Request | None:
    flag, value = _split_option(line)
    if flag in ("-r", "--requirement"):
        if depth >= MAX_DEPTH:
            raise GpuenvError(
                "bad-requirements-file", f"{where}: -r nested deeper than {MAX_DEPTH}"
            )
        label, text = include(value)
        return parse_requirements(text, label, include, depth + 1)
    if flag in ("-e", "--editable"):
        notes.append(f"{where}: editable install {value!r} left to the installer")
    elif flag in ("-c", "--constraint"):
        notes.append(f"{where}: constraints file {value!r} not read; pass its pins as wants")
    elif flag in _SOURCE_OPTIONS:
        notes.append(f"{where}: {flag} dropped: gpuenv chooses the indexes the plan needs")
    else:
        notes.append(f"{where}: option {flag} dropped")
    return None


def _split_option(line: str) -> tuple[str, str]:
    """'--index-url=URL' and '-e git+URL#egg=name' -> (flag, value): only an '=' that ends the
    flag itself separates them."""
    head, _, rest = line.partition(" ")
    if head.startswith("--") and "=" in head:
        flag, _, inline = head.partition("=")
        return flag, f"{inline} {rest}".strip()
    return head, rest.strip()


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """(first line number, line) with comments removed and backslash continuations joined."""
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            yield start, full
    if pending.strip():
        yield start, pending.strip()


def parse_pyproject(text: str, origin: str) -> Request:
    """A pyproject.toml's [project] dependencies."""
    if len(text) > MAX_TEXT:
        raise GpuenvError("bad-pyproject", f"{origin} is larger than {MAX_TEXT} characters")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuenvError("bad-pyproject", f"{origin} is not valid TOML", cause=str(exc)) from None
    project = doc.get("project")
    deps = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise GpuenvError(
            "bad-pyproject",
            f"{origin} has no [project] dependencies list",
            hints=("gpuenv reads the PEP 621 `dependencies = [...]` of [project]",),
        )
    wants: list[Want] = []
    carried: list[str] = []
    notes: list[str] = []
    for number, dep in enumerate(deps, start=1):
        _requirement_line(dep, f"{origin} dependencies[{number}]", wants, carried, notes)
    return Request(tuple(wants), tuple(carried), tuple(notes))
