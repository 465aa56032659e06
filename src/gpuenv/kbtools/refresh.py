"""`gpuenv kb refresh`: rebuild the generated table data/wheels.toml from the package index.

Per release of each watched package: the Python and platform tags of its wheels and Requires-Python,
from the project page; and, from ONE core-metadata file per (release, Linux platform), what it pins:
CUDA (nvidia-cuda-runtime-cuNN or cuda-toolkit), cuDNN, NCCL, the raw nvidia-*/cuda-toolkit lines,
and torch for torchvision/torchaudio. The file is written to a temporary name and renamed, so a
failed refresh keeps the old one.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
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
from gpuenv.kb.model import DATA_DIR
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools.compile import write_compiled
from gpuenv.kbtools.toml_writer import toml_document

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

SOURCE_ID = "package-index"
SOURCE_TITLE = "Package index (as configured for pip), PEP 691 JSON API and core metadata"
CUDA_PLATFORMS = ("linux-x86_64", "linux-aarch64")
MAX_TRIES = 3  # metadata files tried per (release, platform); one when the index advertises them
_PYTHONS = ("3.11", "3.12", "3.10", "3.13", "3.9", "3.14", "3.8", "3.15")  # tried in this order
ROW_FIELDS: tuple[str, ...] = ("package", "version", "requires_python", "python_tags")
ROW_FIELDS += ("platforms", "cuda", "cuda_aarch64", "cudnn", "nccl", "requires_torch", "pins")
ROW_FIELDS += ("yanked", "metadata_read", "source", "locator", "verified", "status")


@dataclass(frozen=True)
class PackageSpec:
    name: str
    versions: str  # a specifier; pre-releases are always left out
    reads: str  # "cuda": pins per Linux platform; "torch": the torch requirement; "none"
    extras: tuple[str, ...] = ()  # extras whose CUDA pins count, e.g. tensorflow[and-cuda]


PACKAGES: tuple[PackageSpec, ...] = (
    PackageSpec("torch", ">=2.0", "cuda"),
    PackageSpec("torchvision", ">=0.15", "torch"),
    PackageSpec("torchaudio", ">=2.0", "torch"),
    PackageSpec("jax", ">=0.4.30", "none"),
    PackageSpec("jaxlib", ">=0.4.30", "none"),
    PackageSpec("jax-cuda12-plugin", ">=0.4.30", "cuda", ("with-cuda",)),
    PackageSpec("jax-cuda13-plugin", "", "cuda", ("with-cuda",)),
    PackageSpec("cupy-cuda12x", "", "cuda", ("ctk",)),
    PackageSpec("cupy-cuda13x", "", "cuda", ("ctk",)),
    PackageSpec("onnxruntime-gpu", ">=1.17", "cuda", ("cuda", "cudnn")),
    PackageSpec("tensorflow", ">=2.12", "cuda", ("and-cuda",)),
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

    def summary(self) -> str:
        lines = [
            f"wrote {self.rows_written} release rows to {self.out}: {self.rows_refreshed} "
            f"refreshed for {', '.join(self.packages)} from {self.metadata_read} core-metadata "
            f"files and {self.requests} requests in all; {len(self.gaps)} gap(s), "
            f"{len(self.problems)} problem(s)"
        ]
        lines += [f"problem: {p}" for p in self.problems]
        lines += [f"gap: {g}" for g in self.gaps[:40]]
        if len(self.gaps) > 40:
            lines.append(f"... and {len(self.gaps) - 40} more gaps")
        return "\n".join(lines)


@dataclass(frozen=True)
class Release:
    package: str
    version: Version
    wheels: tuple[ic.Wheel, ...]
    advertised: bool  # the page says which files have core metadata


Read = tuple[ic.Wheel, ic.CoreMetadata]


@dataclass
class _Tally:
    requests: int = 0
    metadata_read: int = 0
    gaps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fetch(self, fetcher: ic.Fetcher, url: str, accept: str) -> ic.Response:
        with self.lock:
            self.requests += 1
        return fetcher(url, accept)

    def note(self, gaps: Iterable[str] = (), problems: Iterable[str] = ()) -> None:
        with self.lock:
            self.gaps.extend(gaps)
            self.problems.extend(problems)


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
    if release.advertised:
        usable = [w for w in usable if w.file.metadata]

    def rank(wheel: ic.Wheel) -> tuple[int, int, int, int, str]:
        first = min((ic.platform_key(p)[0] for p in wheel.platforms), default=99)
        python = _PYTHONS.index(wheel.python) if wheel.python in _PYTHONS else len(_PYTHONS)
        return (first, -wheel.build, int(wheel.free_threaded), python, wheel.file.filename)

    return sorted(usable, key=rank)[:MAX_TRIES]


def read_metadata(
    spec: PackageSpec,
    releases: Sequence[Release],
    fetcher: ic.Fetcher,
    tally: _Tally,
    workers: int = 8,
) -> list[dict[str, Read]]:
    """One core-metadata file per (release, platform the spec reads), in two passes: the best
    candidate of each; then, where the index did not serve it, the next candidates, but only for
    platforms where the first pass found some metadata of this package (or the page advertised
    which files have it). So an index without metadata costs one request per release and platform.
    """
    platforms: Sequence[str | None] = CUDA_PLATFORMS if spec.reads == "cuda" else (None,)
    jobs = [(r, p) for r in releases for p in platforms if spec.reads != "none"]
    lists = [candidates(r, p) for r, p in jobs]
    cache: dict[str, ic.CoreMetadata | None] = {}

    def attempt(index: int, tries: slice) -> Read | None:
        for wheel in lists[index][tries]:
            url = ic.metadata_url(wheel.file)
            if url not in cache:
                cache[url] = _fetch_metadata(wheel, url, fetcher, tally)
            meta = cache[url]
            if meta is not None:
                return (wheel, meta)
        return None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        got = list(pool.map(lambda i: attempt(i, slice(0, 1)), range(len(jobs))))
        served = {p for (r, p), g in zip(jobs, got) if g or r.advertised}
        again = [i for i, g in enumerate(got) if g is None and jobs[i][1] in served]
        for i, g in zip(again, pool.map(lambda i: attempt(i, slice(1, MAX_TRIES)), again)):
            got[i] = g
    reads: dict[Version, dict[str, Read]] = {r.version: {} for r in releases}
    for (release, platform), read in zip(jobs, got):
        if read is not None:
            reads[release.version][platform or "any"] = read
        elif any(not platform or {platform, "any"} & w.platforms for w in release.wheels):
            where = f" for {platform}" if platform else ""
            tally.note(gaps=[f"{release.package} {release.version}: no core metadata{where}"])
    return [reads[r.version] for r in releases]


def _fetch_metadata(
    wheel: ic.Wheel, url: str, fetcher: ic.Fetcher, tally: _Tally
) -> ic.CoreMetadata | None:
    answer = tally.fetch(fetcher, url, "*/*")
    if answer.status != 200:
        return None
    if not ic.check_metadata_hash(wheel.file, answer.body):
        tally.note(problems=[f"{wheel.file.filename}: core metadata does not match its hash"])
        return None
    with tally.lock:
        tally.metadata_read += 1
    return ic.parse_core_metadata(answer.body)


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
        first = next(iter(read.values()))[1].requires_python
        row.update({"requires_python": first} if first else {})
    row["python_tags"] = sorted({t for w in wheels for t in w.python_tags}, key=ic.python_tag_key)
    row["platforms"] = sorted({p for w in wheels for p in w.platforms}, key=ic.platform_key)
    problems = _fill_from_metadata(row, spec, read)
    if all(w.file.yanked for w in release.wheels):
        row["yanked"] = True
    if read:
        row["metadata_read"] = sorted(read, key=ic.platform_key)
    what = "files and core metadata" if read else "files"
    row.update(source=SOURCE_ID, locator=f"{spec.name} {release.version} {what}")
    row.update(verified=today.isoformat(), status="official")
    return row, problems


def _fill_from_metadata(
    row: dict[str, Any], spec: PackageSpec, read: Mapping[str, Read]
) -> list[str]:
    problems: list[str] = []
    where = f"{row['package']} {row['version']}"
    for platform, (wheel, meta) in sorted(read.items()):
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
    now: datetime | None = None,
    workers: int = 8,
) -> RefreshReport:
    """Rebuild wheels.toml from the index. Rows of packages not asked for are kept as they are.

    A network failure or a garbled page raises GpuenvError("kb-refresh-failed") and leaves the
    old file untouched."""
    specs = select_packages(packages)
    target = out or DATA_DIR / "wheels.toml"
    moment = now or datetime.now(timezone.utc)
    kept = [] if packages is None else _kept_rows(target, {s.name for s in specs})
    tally = _Tally()
    try:
        base = (index_url or ic.pip_index_url()).rstrip("/")
        rows = []
        for spec in specs:
            rows += _refresh_package(spec, base, fetch or ic.urllib_fetch, tally, moment, workers)
    except ic.IndexUnavailable as exc:
        raise GpuenvError(
            "kb-refresh-failed",
            "could not read the package index; the old file was kept",
            cause=str(exc),
            hints=("check the network and pip's index-url (`pip config list`)",),
        ) from None
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
        requests=tally.requests,
        gaps=tuple(sorted(tally.gaps)),
        problems=tuple(sorted(tally.problems)),
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
    fetcher: ic.Fetcher,
    tally: _Tally,
    now: datetime,
    workers: int,
) -> list[dict[str, Any]]:
    page_url = f"{base}/{canonicalize_name(spec.name)}/"
    answer = tally.fetch(fetcher, page_url, ic.JSON_ACCEPT)
    if answer.status == 404:
        tally.note(gaps=[f"{spec.name}: not on the index"])
        return []
    if answer.status != 200:
        raise ic.IndexUnavailable(f"{page_url}: HTTP {answer.status}")
    files = ic.parse_project_page(answer.body, answer.content_type, answer.url or page_url)
    releases, problems = group_releases(spec, files)
    tally.note(problems=problems)
    reads = read_metadata(spec, releases, fetcher, tally, workers)
    rows = []
    for release, read in zip(releases, reads):
        row, row_problems = release_row(spec, release, read, now.date())
        tally.note(problems=row_problems)
        rows.append(row)
    return rows
