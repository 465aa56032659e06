"""`gpuenv kb refresh --archs PACKAGE==VERSION`: the GPU code compiled into ONE wheel on the index,
read from the `.nv_fatbin` sections of its CUDA libraries, written to data/binaries.toml.

Only the members that hold the GPU code are fetched (with range requests, stored or deflated),
spooled to a temporary file and read with gpuenv's own fatbin reader; the rest of the wheel is
never downloaded. Those members are big (libtorch_cuda.so is hundreds of MB), so `plan_archs`
first says what would be fetched and the caller asks before `read_archs` fetches it.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gpuenv.edges.output import write_file
from gpuenv.errors import GpuenvError
from gpuenv.index.remote_zip import Budget, RangeFetch, RemoteZip, ZipUnreadable
from gpuenv.kb.model import DATA_DIR
from gpuenv.kb.toml_writer import toml_document
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools.buildinfo import BUILD_FILES, build_facts
from gpuenv.kbtools.refresh import PackageSpec, candidates, group_releases
from gpuenv.probe.fatbin import scan_fatbin_reader
from gpuenv.probe.objfile import FileReader

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

SOURCE_ID = "wheel-fatbins"
# the members of each package's wheels that hold its GPU code
LIBRARIES: Mapping[str, str] = {
    "torch": r"^torch/lib/libtorch_cuda(_cu|_cpp)?\.so$",
    "tensorflow": r"^tensorflow/libtensorflow_cc\.so\.\d+$",
    "jax-cuda12-plugin": r"^jax_cuda12_plugin/[^/]+\.so$",
    "jax-cuda13-plugin": r"^jax_cuda13_plugin/[^/]+\.so$",
    "cupy-cuda11x": r"^cupy/cuda/(cub|thrust)\.[^/]+\.so$",
    "cupy-cuda12x": r"^cupy/cuda/(cub|thrust)\.[^/]+\.so$",
    "cupy-cuda13x": r"^cupy/cuda/(cub|thrust)\.[^/]+\.so$",
    "onnxruntime-gpu": r"^onnxruntime/capi/libonnxruntime_providers_cuda\.so$",
}
# The CUDA release that introduced each PTX ISA version (NVIDIA PTX ISA document, "Release
# Notes"): nvcc writes its own ISA version into the PTX it embeds. 8.6 belongs to no public release.
PTX_ISA_CUDA: Mapping[str, str] = {
    **{f"7.{n}": f"11.{n}" for n in range(9)},
    **{f"8.{n}": f"12.{n}" for n in range(6)},
    "8.7": "12.8",
    "8.8": "12.9",
    **{f"9.{n}": f"13.{n}" for n in range(3)},
}
_HEADER = "\n".join(
    [
        "GPU code compiled into released framework wheels, read from the wheels themselves with",
        "gpuenv's fatbin reader (`gpuenv kb refresh --archs PACKAGE==VERSION`). Each row names the",
        "wheel it was read from. Rows are written by that command; remove a wrong row by hand.",
    ]
)


@dataclass(frozen=True)
class ArchPlan:
    """What `read_archs` would fetch: members of one wheel, with their compressed sizes."""

    package: str
    version: str
    platform: str
    wheel: ic.IndexFile
    members: tuple[tuple[str, int], ...]  # (member, bytes to fetch)
    build_member: str | None

    @property
    def fetch_bytes(self) -> int:
        return sum(size for _, size in self.members)

    def describe(self) -> str:
        total = f" of a {self.wheel.size / 1e6:.0f} MB wheel" if self.wheel.size else ""
        listed = ", ".join(f"{name} ({size / 1e6:.1f} MB)" for name, size in self.members)
        return (
            f"{self.package} {self.version} ({self.platform}): {self.fetch_bytes / 1e6:.1f} MB "
            f"to fetch{total}, {self.wheel.filename}: {listed}"
        )


def parse_target(text: str) -> tuple[str, str]:
    """ "torch==2.15.0" -> ("torch", "2.15.0"); anything else is a GpuenvError."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise GpuenvError("kb-archs-target", f"{text!r} is not PACKAGE==VERSION: {exc}") from None
    pins = [s.version for s in requirement.specifier if s.operator == "=="]
    name = canonicalize_name(requirement.name)
    if len(pins) != 1 or "*" in pins[0]:
        raise GpuenvError("kb-archs-target", f"{text!r}: give one exact version, PACKAGE==VERSION")
    if name not in LIBRARIES:
        raise GpuenvError(
            "kb-archs-target",
            f"no known GPU libraries for {name}",
            hints=(f"packages: {', '.join(LIBRARIES)}",),
        )
    return name, pins[0]


def plan_archs(
    target: str,
    platform: str = "linux-x86_64",
    index_url: str | None = None,
    *,
    fetch: ic.Fetcher | None = None,
    fetch_range: RangeFetch | None = None,
) -> ArchPlan:
    """Find the wheel and the members to read (a few small requests, nothing big)."""
    name, version = parse_target(target)
    try:
        wheel = _pick_wheel(name, version, platform, index_url, fetch or ic.urllib_fetch)
        archive = RemoteZip(wheel.url, fetch_range or ic.urllib_range, Budget()).open()
    except (ic.IndexUnavailable, ZipUnreadable) as exc:
        raise GpuenvError(
            "kb-archs-failed", f"cannot read {name} {version}", cause=str(exc)
        ) from None
    pattern = re.compile(LIBRARIES[name])
    members = tuple(
        (m.name, m.compressed_size) for m in archive.members.values() if pattern.match(m.name)
    )
    if not members:
        raise GpuenvError(
            "kb-archs-failed", f"{wheel.filename} has no member matching {pattern.pattern}"
        )
    build = BUILD_FILES.get(name)
    build_member = build.member if build and build.member in archive.members else None
    return ArchPlan(name, version, platform, wheel, members, build_member)


def _pick_wheel(
    name: str, version: str, platform: str, index_url: str | None, fetch: ic.Fetcher
) -> ic.IndexFile:
    files = ic.project_files(index_url or ic.pip_index_url(), name, fetch) or []
    releases, _ = group_releases(PackageSpec(name, f"=={version}", "cuda"), files)
    found = candidates(releases[0], platform) if releases else []
    if not found:
        raise ic.IndexUnavailable(f"no {platform} wheel of {name} {version} on the index")
    return found[0].file


def read_archs(
    plan: ArchPlan,
    *,
    fetch_range: RangeFetch | None = None,
    today: date | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fetch the planned members, read their fatbins; one binaries.toml [[build]] row."""
    budget = Budget(per_request=16 * 1024 * 1024, total=plan.fetch_bytes + 1024 * 1024 * 8)
    archive = RemoteZip(plan.wheel.url, fetch_range or ic.urllib_range, budget)
    sass: set[str] = set()
    ptx: set[str] = set()
    isa: set[str] = set()
    problems: list[str] = []
    try:
        archive.open()
        build = _build(archive, plan)
        for member, size in plan.members:
            if progress is not None:
                progress(f"reading {member} ({size / 1e6:.1f} MB)")
            scan = _scan_member(archive, member, _Meter(member, size, progress))
            sass |= set(scan.sass)
            ptx |= set(scan.ptx)
            isa |= set(scan.ptx_isa)
            problems += [f"{member}: {scan.problem}"] if scan.problem else []
    except (ic.IndexUnavailable, ZipUnreadable) as exc:
        raise GpuenvError(
            "kb-archs-failed", f"cannot read {plan.wheel.filename}", cause=str(exc)
        ) from None
    if not sass and not ptx:
        raise GpuenvError(
            "kb-archs-failed",
            f"no GPU code found in {', '.join(m for m, _ in plan.members)}",
            cause="; ".join(problems) or None,
        )
    return _row(plan, build, sass, ptx, isa, problems, today or date.today())


def _build(archive: RemoteZip, plan: ArchPlan) -> dict[str, Any]:
    build = BUILD_FILES.get(plan.package)
    if build is None or plan.build_member is None:
        return {}
    return build_facts(build.kind, archive.read(plan.build_member))


class _Meter:
    """Says how much of a big member has come in, every 64 MB of its compressed size or so."""

    def __init__(self, member: str, size: int, progress: Callable[[str], None] | None) -> None:
        self.member, self.size, self.progress = member, max(size, 1), progress
        self.seen, self.said = 0, 0

    def __call__(self, compressed: int) -> None:
        self.seen += compressed
        if self.progress is not None and self.seen - self.said >= 64 * 1024 * 1024:
            self.said = self.seen
            self.progress(f"{self.member}: {100 * self.seen // self.size}% fetched")


def _scan_member(archive: RemoteZip, member: str, meter: _Meter | None = None) -> Any:
    """Spool the member to a temporary file (it can be a GB unpacked), then read its fatbins."""
    with tempfile.TemporaryFile(prefix="gpuenv-archs-") as spool:
        archive.stream(member, lambda block: _write(spool, block), on_chunk=meter)
        spool.flush()
        return scan_fatbin_reader(FileReader(spool.fileno()), member)


def _write(spool: Any, block: bytes) -> None:
    spool.write(block)


def cc_of(arch: str) -> str:
    """ "sm_90a" -> "9.0a", "compute_100f" -> "10.0f", "sm_120" -> "12.0"."""
    rest = arch.split("_", 1)[1]
    digits = rest.rstrip("abcdefghijklmnopqrstuvwxyz")
    number = int(digits)
    return f"{number // 10}.{number % 10}{rest[len(digits) :]}"


def _row(
    plan: ArchPlan,
    build: Mapping[str, Any],
    sass: Iterable[str],
    ptx: Iterable[str],
    isa: Iterable[str],
    problems: Sequence[str],
    today: date,
) -> dict[str, Any]:
    isa_sorted = sorted(isa, key=_isa_key)
    cuda, how = _cuda(plan, build, isa_sorted)
    members = [m for m, _ in plan.members]
    row: dict[str, Any] = {
        "package": plan.package,
        "version": plan.version,
        "variant": "index",
        "platform": plan.platform,
        "cuda": cuda,
        "sass": [cc for cc in _ccs(sass) if cc in _declared(build, _ccs(sass))],
        "ptx": _ccs(ptx),
        **({"ptx_isa": isa_sorted[-1]} if isa_sorted else {}),
        "wheel": plan.wheel.filename,
        "libraries": members,
        "source": SOURCE_ID,
        "locator": f"{plan.wheel.filename}: .nv_fatbin of {', '.join(members)}; cuda {how}",
        "verified": today.isoformat(),
        "status": "observed",
    }
    notes = _declared_note(build, _ccs(sass)) + _isa_note(cuda, isa_sorted)
    if problems:
        notes.append("the fatbin reader reported: " + "; ".join(problems)[:400])
    if notes:
        row["note"] = " ".join(notes)
    return row


def _isa_note(cuda: str, isa: Sequence[str]) -> list[str]:
    """The PTX's own ISA when it belongs to another CUDA release than the build's (TensorFlow
    compiles CUDA with clang, which writes an older ISA): PTX JIT needs a driver of that one."""
    if not isa or isa[-1] not in PTX_ISA_CUDA:
        return []
    ptx_cuda = PTX_ISA_CUDA[isa[-1]]
    if _isa_key(ptx_cuda) == _isa_key(cuda)[:2]:
        return []
    return [
        f"Its PTX is ISA {isa[-1]}, the ISA of CUDA {ptx_cuda}: JIT-compiling it needs a driver "
        f"of CUDA {ptx_cuda} or newer."
    ]


def _declared(build: Mapping[str, Any], sass: Sequence[str]) -> set[str]:
    """The SASS every kernel has: what the build file lists for the build's own kernels
    (TensorFlow's cuda_compute_capabilities), else all that was found."""
    declared = [str(a) for a in build.get("build_archs", ()) if str(a).startswith("sm_")]
    return {cc_of(a) for a in declared} if build.get("build_archs") else set(sass)


def _declared_note(build: Mapping[str, Any], sass: Sequence[str]) -> list[str]:
    """SASS beyond the build file's list comes from code built apart from the build's own
    kernels: not every kernel has it, so it stays out of `sass` and is said here."""
    declared = [str(a) for a in build.get("build_archs", ())]
    if not declared:
        return []
    extra = [cc for cc in sass if cc not in _declared(build, sass)]
    note = f"The build file lists {', '.join(declared)} for the build's own kernels."
    if extra:
        note += (
            f" SASS for {', '.join(extra)} is in the library too but not in that list: it "
            "belongs to code built apart from those kernels, so it is left out of sass (the "
            "kernels reach such a GPU through their PTX)."
        )
    return [note]


def _isa_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _cuda(plan: ArchPlan, build: Mapping[str, Any], isa: Sequence[str]) -> tuple[str, str]:
    """The build's CUDA: its build file's word, else the CUDA of its newest PTX ISA."""
    shown = f" (PTX ISA {', '.join(isa)})" if isa else ""
    if build.get("build_cuda"):
        return str(build["build_cuda"]), f"from {plan.build_member}{shown}"
    if isa and isa[-1] in PTX_ISA_CUDA:
        return PTX_ISA_CUDA[isa[-1]], f"the CUDA release of PTX ISA {isa[-1]}, the newest here"
    raise GpuenvError(
        "kb-archs-failed",
        f"{plan.wheel.filename} does not say which CUDA toolkit built it",
        cause=f"no build file with a CUDA version and no known PTX ISA{shown}",
        hints=("the row needs the build's CUDA: a wrong one would mislead the PTX rules",),
    )


def _ccs(archs: Iterable[str]) -> list[str]:
    def key(cc: str) -> tuple[int, int, str]:
        major, _, rest = cc.partition(".")
        digits = rest.rstrip("af")
        return (int(major), int(digits), rest[len(digits) :])

    return sorted({cc_of(a) for a in archs}, key=key)


# -- binaries.toml ------------------------------------------------------------------------------

_KEY = ("package", "version", "variant", "platform")


def write_rows(rows: Iterable[Mapping[str, Any]], path: Path | None = None) -> Path:
    """Merge rows into binaries.toml (a row with the same key is replaced), sorted."""
    target = path or DATA_DIR / "binaries.toml"
    doc = tomllib.loads(target.read_text(encoding="utf-8")) if target.exists() else {}
    merged = {tuple(str(r[k]) for k in _KEY): dict(r) for r in doc.get("build", [])}
    merged.update({tuple(str(r[k]) for k in _KEY): dict(r) for r in rows})
    meta = [(k, v) for k, v in doc.items() if k not in ("sources", "build")] or [
        ("schema_version", 1),
        ("subject", "binaries"),
        ("description", "SASS/PTX architectures in framework wheels, read from their .nv_fatbin"),
    ]
    sources = doc.get("sources") or {
        SOURCE_ID: {
            "title": "The wheels' own shared libraries (.nv_fatbin sections), read with gpuenv's "
            "fatbin reader",
            "url": "{PYPI}/simple/",
            "retrieved": date.today().isoformat(),
        }
    }
    ordered = [merged[k] for k in sorted(merged, key=_sort_key)]
    write_file(target, toml_document(_HEADER, meta, sources, {"build": ordered}))
    return target


def _sort_key(key: tuple[str, ...]) -> tuple[Any, ...]:
    from packaging.version import Version

    return (key[0], Version(key[1]), key[2], key[3])
