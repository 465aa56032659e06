"""`gpuenv kb refresh`: rebuild the generated table data/wheels.toml from the package index.

Per release of each watched package: the Python and platform tags of its wheels and Requires-Python,
from the project page; and, from the core metadata of ONE wheel per (release, Linux platform), what
it pins: CUDA (nvidia-cuda-runtime-cuNN or cuda-toolkit), cuDNN, NCCL, the raw nvidia-*/cuda-toolkit
lines, and torch for torchvision/torchaudio. The metadata is the index's PEP 658 file where it
serves one, else the wheel's METADATA member read with range requests (wheel_reader.py); for
frameworks the Linux x86_64 wheel's small build file is read too (buildinfo.py). The file is
written to a temporary name and renamed, so a failed refresh keeps the old one.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name
from packaging.version import InvalidVersion, Version

from gpuenv._version import __version__
from gpuenv.edges.output import write_file
from gpuenv.errors import GpuenvError
from gpuenv.index.http import unreachable
from gpuenv.index.remote_zip import Budget, RangeFetch
from gpuenv.kb.model import DATA_DIR
from gpuenv.kb.toml_writer import toml_document
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools.buildinfo import BUILD_FILES
from gpuenv.kbtools.compile import write_compiled
from gpuenv.kbtools.wheel_reader import Tally, WheelRead, WheelReader

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

SOURCE_ID = "package-index"
SOURCE_TITLE = (
    "Package index (as configured for pip): PEP 691 JSON API, core metadata (PEP 658 files or the "
    "wheels' METADATA read with range requests) and the frameworks' build files"
)
CUDA_PLATFORMS = ("linux-x86_64", "linux-aarch64")
MAX_TRIES = 3  # wheels tried per (release, platform)
_PYTHONS = ("3.11", "3.12", "3.10", "3.13", "3.9", "3.14", "3.8", "3.15")  # tried in this order
ROW_FIELDS: tuple[str, ...] = ("package", "version", "requires_python", "python_tags")
ROW_FIELDS += ("platforms", "cuda", "cuda_aarch64", "cudnn", "nccl", "requires_torch", "pins")
ROW_FIELDS += ("build_version", "build_cuda", "build_cudnn", "build_archs")
ROW_FIELDS += ("yanked", "metadata_read", "metadata_via", "source", "locator", "verified", "status")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class PackageSpec:
    name: str
    versions: str  # a specifier; pre-releases are always left out
    reads: str  # "cuda": pins per Linux platform; "torch": the torch requirement; "none"
    extras: tuple[str, ...] = ()  # extras whose CUDA pins count, e.g. tensorflow[and-cuda]


# packages users most often find no file of (explain judges their platforms and Pythons)
UNSERVED_OFTEN = (
    "faiss-gpu",
    "faiss-gpu-cu11",
    "faiss-gpu-cu12",
    "paddlepaddle-gpu",
    "mediapipe",
    "decord",
    "open3d",
    "mlx",
    "vllm",
    "paddlepaddle",
    "tensorflow-gpu",
    "tensorflow-cpu",
    "tensorflow-addons",
    "tensorflow-text",
    "tensorflow-io",
    "onnxruntime-qnn",
    "tensorflow-macos",
    "tensorflow-metal",
)
PACKAGES: tuple[PackageSpec, ...] = (
    PackageSpec("torch", ">=1.8", "cuda"),
    PackageSpec("torchvision", ">=0.15", "torch"),
    PackageSpec("torchaudio", ">=2.0", "torch"),
    PackageSpec("jax", ">=0.4.30", "none"),
    PackageSpec("jaxlib", "", "none"),
    PackageSpec("jax-cuda12-plugin", ">=0.4.30", "cuda", ("with-cuda",)),
    PackageSpec("jax-cuda13-plugin", "", "cuda", ("with-cuda",)),
    PackageSpec("cupy-cuda11x", "", "cuda", ("ctk",)),
    PackageSpec("cupy-cuda12x", "", "cuda", ("ctk",)),
    PackageSpec("cupy-cuda13x", "", "cuda", ("ctk",)),
    PackageSpec("onnxruntime-gpu", "", "cuda", ("cuda", "cudnn")),
    PackageSpec("onnxruntime", "", "none"),
    PackageSpec("triton", ">=2.0", "none"),
    PackageSpec("onnxruntime-directml", ">=1.17", "none"),
    # NVIDIA's library wheels: which platforms they exist for (explain: none for macOS)
    PackageSpec("nvidia-cublas-cu11", "", "none"),
    PackageSpec("nvidia-cublas-cu12", "", "none"),
    PackageSpec("nvidia-cudnn-cu11", "", "none"),
    PackageSpec("nvidia-cudnn-cu12", "", "none"),
    PackageSpec("tensorflow", ">=2.12", "cuda", ("and-cuda",)),
    *(PackageSpec(name, "", "none") for name in UNSERVED_OFTEN),
)


@dataclass(frozen=True)
class RefreshReport:
    out: Path
    packages: tuple[str, ...]
    rows_written: int
    rows_refreshed: int
    metadata_read: int
    requests: int
    gaps: tuple[str, ...] = ()  # what the index did not offer: a metadata file, a project
    problems: tuple[str, ...] = ()  # what looks wrong: unparseable file names or requirements
    via: Mapping[str, int] | None = None  # metadata files per way read: pep658, range
    bytes_read: int = 0  # by range requests

    def summary(self, verbose: bool = False, shown: int = 10) -> str:
        """Counts and the problems; the gaps in full only when verbose."""
        ways = ", ".join(f"{n} via {k}" for k, n in sorted((self.via or {}).items())) or "none"
        lines = [
            f"wrote {self.rows_written} release rows to {self.out}: {self.rows_refreshed} "
            f"refreshed for {', '.join(self.packages)}",
            f"core metadata read: {self.metadata_read} ({ways}); {self.requests} requests, "
            f"{self.bytes_read / 1e6:.1f} MB by range requests",
            f"{len(self.gaps)} gap(s), {len(self.problems)} problem(s)",
        ]
        lines += [f"problem: {p}" for p in self.problems]
        gaps = self.gaps if verbose else self.gaps[:shown]
        lines += [f"gap: {g}" for g in gaps]
        if len(gaps) < len(self.gaps):
            lines.append(f"... and {len(self.gaps) - len(gaps)} more gaps (-v shows them all)")
        return "\n".join(lines)


@dataclass(frozen=True)
class Release:
    package: str
    version: Version
    wheels: tuple[ic.Wheel, ...]
    advertised: bool  # the page says which files have core metadata


Read = tuple[ic.Wheel, WheelRead]


# -- releases from a project page -------------------------------------------------------------


def group_releases(
    spec: PackageSpec, files: Sequence[ic.IndexFile]
) -> tuple[list[Release], list[str]]:
    """The wanted releases (final versions in spec.versions) with their wheels, oldest first."""
    wanted = SpecifierSet(spec.versions)
    by_version: dict[Version, list[ic.Wheel]] = {}
    problems = []
    for file in files:
        try:
            wheel = ic.parse_wheel(file)
        except InvalidWheelFilename as exc:
            problems.append(f"{spec.name}: file {file.filename!r} skipped: {exc}")
            continue
        version = wheel.version if wheel else None
        if wheel and version and not (version.local or version.is_prerelease) and version in wanted:
            by_version.setdefault(version, []).append(wheel)
    advertised = any(file.metadata is not None for file in files)
    releases = [
        Release(spec.name, version, tuple(wheels), advertised)
        for version, wheels in sorted(by_version.items())
    ]
    return releases, problems


def candidates(release: Release, platform: str | None) -> list[ic.Wheel]:
    """Wheels whose metadata may be read for `platform` (None: any), best first."""
    usable = [w for w in release.wheels if not w.file.yanked] or list(release.wheels)
    if platform:
        usable = [w for w in usable if platform in w.platforms or "any" in w.platforms]

    def rank(wheel: ic.Wheel) -> tuple[int, int, int, int, int, str]:
        first = min((ic.platform_key(p)[0] for p in wheel.platforms), default=99)
        python = _PYTHONS.index(wheel.python) if wheel.python in _PYTHONS else len(_PYTHONS)
        served = 0 if wheel.file.metadata else 1  # a PEP 658 file is cheaper than ranges
        return (served, first, -wheel.build, int(wheel.free_threaded), python, wheel.file.filename)

    return sorted(usable, key=rank)[:MAX_TRIES]


def read_metadata(
    spec: PackageSpec,
    releases: Sequence[Release],
    reader: WheelReader,
    workers: int = 8,
    progress: Progress | None = None,
) -> list[dict[str, Read]]:
    """One wheel's metadata per (release, platform the spec reads): the best candidate of each;
    where it could not be read, the next candidates."""
    platforms: Sequence[str | None] = CUDA_PLATFORMS if spec.reads == "cuda" else (None,)
    jobs = [(r, p) for r in releases for p in platforms if spec.reads != "none"]
    lists = [candidates(r, p) for r, p in jobs]
    build_file = BUILD_FILES.get(spec.name)
    done = [0]

    def attempt(index: int) -> Read | None:
        platform = jobs[index][1]
        wants_build = build_file if platform in (None, CUDA_PLATFORMS[0]) else None
        for wheel in lists[index]:
            got = reader.read(wheel, wants_build)
            if got is not None:
                _tick(progress, spec.name, done, len(jobs), reader.tally)
                return (wheel, got)
        _tick(progress, spec.name, done, len(jobs), reader.tally)
        return None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        got = list(pool.map(attempt, range(len(jobs))))
    reads: dict[Version, dict[str, Read]] = {r.version: {} for r in releases}
    for (release, platform), read in zip(jobs, got):
        if read is not None:
            reads[release.version][platform or "any"] = read
        elif any(not platform or {platform, "any"} & w.platforms for w in release.wheels):
            where = f" for {platform}" if platform else ""
            reader.tally.note(
                gaps=[f"{release.package} {release.version}: no core metadata{where}"]
            )
    return [reads[r.version] for r in releases]


def _tick(progress: Progress | None, name: str, done: list[int], total: int, tally: Tally) -> None:
    with tally.lock:
        done[0] += 1
        count = done[0]
    if progress is not None and (count % 25 == 0 or count == total):
        progress(f"{name}: {count}/{total} metadata reads done")


# -- rows -------------------------------------------------------------------------------------


def release_row(
    spec: PackageSpec, release: Release, read: Mapping[str, Read], today: date
) -> tuple[dict[str, Any], list[str]]:
    """One [[release]] row and the problems met on the way."""
    wheels = [w for w in release.wheels if not w.file.yanked] or list(release.wheels)
    row: dict[str, Any] = {"package": spec.name, "version": str(release.version)}
    requires = Counter(w.file.requires_python for w in wheels if w.file.requires_python)
    if requires:
        row["requires_python"] = sorted(requires.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    elif read:
        first = next(iter(read.values()))[1].meta.requires_python
        row.update({"requires_python": first} if first else {})
    row["python_tags"] = sorted({t for w in wheels for t in w.python_tags}, key=ic.python_tag_key)
    row["platforms"] = sorted({p for w in wheels for p in w.platforms}, key=ic.platform_key)
    problems = _fill_from_metadata(row, spec, read)
    if all(w.file.yanked for w in release.wheels):
        row["yanked"] = True
    if read:
        row["metadata_read"] = sorted(read, key=ic.platform_key)
        ways = sorted({got.via for _, got in read.values()})
        row["metadata_via"] = "+".join(ways)
        for _, got in read.values():
            row.update(got.build)
    what = "files and core metadata" if read else "files"
    if any(got.build for _, got in read.values()):
        what += " and build file"
    row.update(source=SOURCE_ID, locator=f"{spec.name} {release.version} {what}")
    row.update(verified=today.isoformat(), status="official")
    return row, problems


def _fill_from_metadata(
    row: dict[str, Any], spec: PackageSpec, read: Mapping[str, Read]
) -> list[str]:
    problems: list[str] = []
    where = f"{row['package']} {row['version']}"
    for platform, (wheel, got) in sorted(read.items()):
        meta = got.meta
        env = ic.marker_environment(
            platform if platform != "any" else CUDA_PLATFORMS[0], wheel.python
        )
        lines, bad = ic.applicable_requirements(meta.requires_dist, env, spec.extras)
        problems += [f"{where}: {p}" for p in bad]
        if spec.reads == "torch":
            torch = [
                Requirement(line)
                for line in lines
                if canonicalize_name(Requirement(line).name) == "torch"
            ]
            if torch:
                row["requires_torch"] = str(torch[0].specifier)
            continue
        summary = ic.summarize_pins(lines)
        if platform == "linux-aarch64":
            row.update({"cuda_aarch64": summary["cuda"]} if "cuda" in summary else {})
        else:
            row.update({k: summary[k] for k in ("cuda", "cudnn", "nccl", "pins") if k in summary})
    return problems


def wheels_toml(rows: Iterable[Mapping[str, Any]], now: datetime) -> str:
    """The whole wheels.toml, rows sorted by package and version, fields in a fixed order."""
    ordered = sorted(rows, key=lambda r: (str(r["package"]), Version(str(r["version"]))))
    known = [{k: r[k] for k in ROW_FIELDS if k in r} for r in ordered]
    extra = [{k: v for k, v in r.items() if k not in ROW_FIELDS} for r in ordered]
    header = (
        "GENERATED by `gpuenv kb refresh` (tools/refresh_kb.py): do not edit by hand.\n"
        "One row per release; cuda/cudnn/nccl come from the core metadata of one Linux wheel."
    )
    meta = [
        ("schema_version", 1),
        ("subject", "wheels"),
        ("generated_by", f"gpuenv kb refresh {__version__}"),
        ("generated_at", now.strftime("%Y-%m-%dT%H:%M:%SZ")),
    ]
    source = {"title": SOURCE_TITLE, "url": "pip-configured index"}
    source["retrieved"] = now.date().isoformat()
    rows_out = [{**a, **b} for a, b in zip(known, extra)]
    return toml_document(header, meta, {SOURCE_ID: source}, {"release": rows_out})


# -- orchestration ----------------------------------------------------------------------------


def refresh(
    packages: Iterable[str] | None = None,
    out: Path | None = None,
    index_url: str | None = None,
    *,
    fetch: ic.Fetcher | None = None,
    fetch_range: RangeFetch | None = None,
    budget: Budget | None = None,
    now: datetime | None = None,
    workers: int = 8,
    progress: Progress | None = None,
) -> RefreshReport:
    """Rebuild wheels.toml from the index. Rows of packages not asked for are kept as they are.

    A network failure reading a page, or a garbled page, raises GpuenvError("kb-refresh-failed")
    and leaves the old file untouched; a wheel that cannot be read is a gap. `budget` caps the
    bytes of range requests (default: 16 MB a request, 512 MB in all)."""
    specs = select_packages(packages)
    target = out or DATA_DIR / "wheels.toml"
    moment = now or datetime.now(timezone.utc)
    kept = [] if packages is None else _kept_rows(target, {s.name for s in specs})
    tally = Tally(budget=budget or Budget())
    reader = WheelReader(fetch or ic.urllib_fetch, fetch_range or ic.urllib_range, tally)
    try:
        base = (index_url or ic.pip_index_url()).rstrip("/")
        rows = []
        for spec in specs:
            if progress is not None:
                progress(f"{spec.name}: reading the project page")
            rows += _refresh_package(spec, base, reader, moment, workers, progress)
    except ic.IndexUnavailable as exc:
        message = "could not read the package index; the old file was kept"
        raise unreachable("kb-refresh-failed", message, exc) from None
    try:
        write_file(target, wheels_toml(rows + kept, moment))
        if target.parent == DATA_DIR:
            write_compiled()  # keep the fast compiled copy in step with the sources
    except GpuenvError as exc:
        raise GpuenvError("kb-refresh-failed", exc.message, cause=exc.cause) from None
    return RefreshReport(
        out=target,
        packages=tuple(s.name for s in specs),
        rows_written=len(rows) + len(kept),
        rows_refreshed=len(rows),
        metadata_read=tally.metadata_read,
        requests=tally.all_requests,
        gaps=tuple(sorted(tally.gaps)),
        problems=tuple(sorted(tally.problems)),
        via=dict(tally.via),
        bytes_read=tally.budget.used,
    )


def select_packages(packages: Iterable[str] | None) -> list[PackageSpec]:
    if packages is None:
        return list(PACKAGES)
    known = {spec.name: spec for spec in PACKAGES}
    names = [canonicalize_name(name) for name in packages]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise GpuenvError(
            "kb-unknown-package",
            f"kb refresh does not watch {', '.join(unknown)}",
            hints=(f"packages: {', '.join(known)}",),
        )
    return [known[name] for name in dict.fromkeys(names)]


def _kept_rows(target: Path, refreshed: set[str]) -> list[dict[str, Any]]:
    if not target.exists():
        return []
    try:
        doc = tomllib.loads(target.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GpuenvError(
            "kb-refresh-failed",
            f"cannot keep the other packages' rows: {target} is unreadable",
            cause=str(exc),
            hints=("refresh every package (no --package) to rebuild it from scratch",),
        ) from None
    rows = [r for r in doc.get("release", []) if isinstance(r, dict)]
    return [r for r in rows if _valid_key(r) and r["package"] not in refreshed]


def _valid_key(row: Mapping[str, Any]) -> bool:
    try:
        Version(str(row.get("version")))
    except InvalidVersion:
        return False
    return isinstance(row.get("package"), str)


def _refresh_package(
    spec: PackageSpec,
    base: str,
    reader: WheelReader,
    now: datetime,
    workers: int,
    progress: Progress | None,
) -> list[dict[str, Any]]:
    tally = reader.tally
    files = ic.project_files(
        base, spec.name, lambda url, accept: tally.fetch(reader.fetch, url, accept)
    )
    if files is None:
        tally.note(gaps=[f"{spec.name}: not on the index"])
        return []
    releases, problems = group_releases(spec, files)
    tally.note(problems=problems)
    reads = read_metadata(spec, releases, reader, workers, progress)
    rows = []
    for release, read in zip(releases, reads):
        row, row_problems = release_row(spec, release, read, now.date())
        tally.note(problems=row_problems)
        rows.append(row)
    return rows
