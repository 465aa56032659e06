"""CUDA lookups over cuda_driver.toml, archs.toml and cuda_libs.toml.

Pure functions over a loaded `KnowledgeBase`. "Unknown" is an answer: a lookup the tables cannot
settle returns None (or an empty result), never a guess. Results that feed findings carry the
rows they were read from, so callers can cite them with `kb.cite(subject, row)`.

Rules implemented here (archs.toml [[rule]] states them with their sources):

* SASS for X.y runs on X.z with z >= y; an "a" target only on exactly X.y; an "f" target on the
  same family (same major so far) with z >= y.
* PTX for X.y is JIT-compiled for any GPU of equal or newer CC; "f" PTX only within the family,
  "a" PTX only for exactly X.y. The driver must also know the PTX ISA (`ptx_isa` table).
* A driver supports a CUDA release natively from the driver bundled with it (Table 3), or when
  its branch reports that CUDA version or newer (backward compatibility; a branch the table
  lacks counts as the newest listed branch below it, since reported versions only rise). From
  CUDA 11 on, any driver at or above the major's minor-version-compatibility minimum runs it
  too, with a reduced feature set.
* PTX is JIT-compiled only by a driver whose own CUDA is at least the toolkit that built the PTX:
  minor-version compatibility runs SASS, never newer PTX (CUDA compatibility guide).
* An architecture's last driver branch (archs.toml) is a ceiling: newer branches do not drive it.
* `os` is "linux" or "windows" and names the driver numbering: under WSL, nvidia-smi's
  "Driver Version" is the Windows driver, so pass it with os="windows". A Windows version maps
  to its Linux branch through `windows_branch` (566.36 -> R565 -> CUDA 12.7); a row with
  `first_driver` covers only releases from that version on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion

DRIVER = "cuda_driver"
ARCHS = "archs"
LIBS = "cuda_libs"
OSES = ("linux", "windows")
FIRST_MVC_MAJOR = 11  # minor-version compatibility exists from CUDA 11 on

NATIVE = "native"
MVC = "minor-version-compat"
TOO_OLD = "too-old"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class DriverSupport:
    """Whether a driver runs code built with a CUDA release, and why.

    ok is True/False, or None when the tables cannot tell. min_driver is the lowest driver that
    makes ok True (the MVC minimum when that applies); full_driver the one for the full feature
    set and PTX JIT (the driver bundled with the release), when known.
    """

    ok: bool | None
    how: str  # NATIVE | MVC | TOO_OLD | UNKNOWN
    min_driver: DriverVersion | None = None
    full_driver: DriverVersion | None = None
    caveat: str | None = None
    rows: tuple[Row, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Coverage:
    """How a GPU can run a binary: its own SASS, JIT from PTX, or not at all."""

    gpu: ComputeCapability
    native: tuple[ComputeCapability, ...]  # SASS targets that run as they are
    via_ptx: tuple[ComputeCapability, ...]  # PTX targets the driver can JIT for this GPU

    @property
    def kind(self) -> str:
        """'native', 'ptx-jit' (runs after a JIT compile at start-up) or 'none'."""
        if self.native:
            return "native"
        return "ptx-jit" if self.via_ptx else "none"

    @property
    def runs(self) -> bool:
        return self.kind != "none"


# ---- driver <-> toolkit -------------------------------------------------------------------


def normalise_os(os: str) -> str | None:
    """'linux' / 'windows' (also 'win32', 'Windows'); anything else is unknown."""
    value = os.strip().lower()
    if value in ("windows", "win32", "win", "nt"):
        return "windows"
    return "linux" if value == "linux" else None


def mvc_row(kb: KnowledgeBase, cuda_major: int, os: str) -> Row | None:
    wanted = normalise_os(os)
    for row in kb.rows(DRIVER, "mvc_minimum"):
        if row["cuda_major"] == cuda_major and row["os"] == wanted:
            return row
    return None


def mvc_min_driver(kb: KnowledgeBase, cuda_major: int, os: str) -> DriverVersion | None:
    """Minimum driver for minor-version compatibility across `cuda_major` on `os`."""
    row = mvc_row(kb, cuda_major, os)
    return DriverVersion.parse(row["min_driver"]) if row else None


def toolkit_row(kb: KnowledgeBase, cuda: CudaVersion) -> Row | None:
    """The Table 3 row of exactly this release, else the GA row of its major.minor."""
    rows = kb.rows(DRIVER, "toolkit_driver")
    for row in rows:
        if CudaVersion.parse(row["cuda"]) == cuda:
            return row
    for row in rows:
        release = CudaVersion.parse(row["cuda"])
        if row.get("ga") and release and (release.major, release.minor) == _mm(cuda):
            return row
    return None


def toolkit_min_driver(kb: KnowledgeBase, cuda: CudaVersion, os: str) -> DriverVersion | None:
    """The driver bundled with a release (Table 3): exact release, else the GA of its minor."""
    wanted = normalise_os(os)
    row = toolkit_row(kb, cuda)
    if row is None or wanted is None:
        return None
    return DriverVersion.parse(row.get(f"{wanted}_min_driver"))


def driver_branch_row(kb: KnowledgeBase, driver: DriverVersion, os: str = "linux") -> Row | None:
    """The driver_branch row of a driver; Windows numbers go through windows_branch first."""
    wanted = normalise_os(os)
    branch: int | None = driver.branch
    if wanted == "windows":
        windows = windows_branch_row(kb, driver)
        branch = int(windows["branch"]) if windows else None
    elif wanted is None:
        branch = None
    return branch_row(kb, branch) if branch is not None else None


def branch_row(kb: KnowledgeBase, branch: int) -> Row | None:
    """The driver_branch row of a branch in Linux numbering (its max_cuda: the CUDA version its
    drivers report)."""
    for row in kb.rows(DRIVER, "driver_branch"):
        if row["branch"] == branch:
            return row
    return None


def driver_max_cuda(
    kb: KnowledgeBase, driver: DriverVersion, os: str = "linux"
) -> CudaVersion | None:
    """The CUDA version the driver reports; a branch the table lacks gives None."""
    row = driver_branch_row(kb, driver, os)
    return CudaVersion.parse(row["max_cuda"]) if row else None


def driver_supports_cuda(
    kb: KnowledgeBase, driver: DriverVersion, cuda: CudaVersion, os: str
) -> DriverSupport:
    """Can `driver` run code built with `cuda`? Native, under MVC, too old, or unknown."""
    if normalise_os(os) is None:
        return DriverSupport(ok=None, how=UNKNOWN, caveat=f"unknown OS {os!r}")
    native_row = toolkit_row(kb, cuda)
    native = toolkit_min_driver(kb, cuda, os)
    if native is not None and driver >= native:
        return DriverSupport(True, NATIVE, native, native, rows=_rows(native_row))
    if native is None:
        by_branch = _native_by_branch(kb, driver, cuda, os)
        if by_branch is not None:
            return by_branch
    return _mvc_or_too_old(kb, driver, cuda, os, native, native_row)


def _native_by_branch(
    kb: KnowledgeBase, driver: DriverVersion, cuda: CudaVersion, os: str
) -> DriverSupport | None:
    """Backward compatibility: the driver reports a CUDA version at least as new as `cuda`.

    A branch the table lacks reports at least what the newest listed branch below it reports
    (the reported version never falls as branches rise), so that row is a safe lower bound.
    """
    row = driver_branch_row(kb, driver, os) or _branch_at_or_below(kb, driver, os)
    reported = CudaVersion.parse(row["max_cuda"]) if row else None
    if row is None or reported is None or _mm(reported) < _mm(cuda):
        return None
    return DriverSupport(True, NATIVE, rows=(row,))


def _branch_at_or_below(kb: KnowledgeBase, driver: DriverVersion, os: str) -> Row | None:
    if normalise_os(os) == "windows":
        known = [
            r
            for r in kb.rows(DRIVER, "windows_branch")
            if r["windows"] < driver.branch or _windows_covers(r, driver)
        ]
        top = max(known, key=lambda r: int(r["windows"]), default=None)
        branch = int(top["branch"]) if top else None
    else:
        branch = driver.branch
    rows = [r for r in kb.rows(DRIVER, "driver_branch") if branch and r["branch"] <= branch]
    return max(rows, key=lambda r: int(r["branch"]), default=None)


def _mvc_or_too_old(
    kb: KnowledgeBase,
    driver: DriverVersion,
    cuda: CudaVersion,
    os: str,
    native: DriverVersion | None,
    native_row: Row | None,
) -> DriverSupport:
    mvc = mvc_row(kb, cuda.major, os) if cuda.major >= FIRST_MVC_MAJOR else None
    mvc_min = DriverVersion.parse(mvc["min_driver"]) if mvc else None
    rows = _rows(mvc, native_row)
    if mvc_min is not None and driver >= mvc_min:
        return DriverSupport(True, MVC, mvc_min, native, _mvc_caveat(cuda, native), rows)
    needed = mvc_min or native
    if needed is None:
        return DriverSupport(ok=None, how=UNKNOWN, caveat=f"no driver data for CUDA {cuda}")
    return DriverSupport(False, TOO_OLD, needed, native, rows=rows)


def _mvc_caveat(cuda: CudaVersion, native: DriverVersion | None) -> str:
    full = f"driver >= {native}" if native else "a driver of that release's branch"
    return (
        f"runs under minor-version compatibility: features that need a newer driver fail at "
        f"run time, and PTX built by CUDA {cuda.short} cannot be JIT-compiled; full support "
        f"needs {full}"
    )


def windows_branch_row(kb: KnowledgeBase, driver: DriverVersion) -> Row | None:
    """The windows_branch row of a Windows driver version (566.36 -> windows 566, branch 565)."""
    for row in kb.rows(DRIVER, "windows_branch"):
        if _windows_covers(row, driver):
            return row
    return None


def _windows_covers(row: Row, driver: DriverVersion) -> bool:
    """Same leading number, and not below the row's first_driver when it has one."""
    first = DriverVersion.parse(row.get("first_driver"))
    return row["windows"] == driver.branch and (first is None or driver >= first)


def linux_branch(kb: KnowledgeBase, driver: DriverVersion, os: str = "linux") -> int | None:
    """The branch a driver belongs to in Linux numbering (Windows 581.42 is R580); None for a
    Windows number the table does not map."""
    wanted = normalise_os(os)
    if wanted == "windows":
        row = windows_branch_row(kb, driver)
        return int(row["branch"]) if row else None
    return driver.branch if wanted == "linux" else None


def last_driver_branch(kb: KnowledgeBase, cc: ComputeCapability) -> tuple[int, Row] | None:
    """The last driver branch that supports a GPU architecture (Kepler: R470; Maxwell, Pascal
    and Volta: R580), with its row; None while the architecture is supported by new branches."""
    row = architecture(kb, cc)
    if row is None or "last_driver_branch" not in row:
        return None
    return int(row["last_driver_branch"]), row


def driver_jits_ptx(driver_cuda: CudaVersion, ptx_cuda: CudaVersion) -> bool:
    """Can a driver whose own CUDA is `driver_cuda` JIT-compile PTX built by CUDA `ptx_cuda`?
    Only when its CUDA is at least the PTX's toolkit: minor-version compatibility does not cover
    PTX (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)."""
    return _mm(driver_cuda) >= _mm(ptx_cuda)


def datacenter_branch(kb: KnowledgeBase, branch: int) -> Row | None:
    """Lifecycle row (designation, end of life, CUDA major) of a data-center driver branch."""
    return _first(kb.rows(DRIVER, "datacenter_branch"), branch=branch)


def forward_compat(kb: KnowledgeBase, segment: str) -> Row | None:
    """Forward-compatibility rule for 'datacenter', 'ngc-ready-rtx', 'jetson' or 'other'."""
    return _first(kb.rows(DRIVER, "forward_compat"), segment=segment)


def ptx_isa_cuda(kb: KnowledgeBase, ptx_isa: str) -> CudaVersion | None:
    """The CUDA release that introduced a PTX ISA version ('8.7' -> 12.8)."""
    wanted = _dotted(ptx_isa)
    for row in kb.rows(DRIVER, "ptx_isa"):
        if wanted is not None and _dotted(row["ptx_isa"]) == wanted:
            return CudaVersion.parse(row["cuda"])
    return None


def min_driver_branch_for_ptx_isa(kb: KnowledgeBase, ptx_isa: str) -> int | None:
    """The oldest Linux driver branch that reports a CUDA version able to JIT this PTX ISA."""
    needed = ptx_isa_cuda(kb, ptx_isa)
    if needed is None:
        return None
    branches = [
        int(row["branch"])
        for row in kb.rows(DRIVER, "driver_branch")
        if (reported := CudaVersion.parse(row["max_cuda"])) and _mm(reported) >= _mm(needed)
    ]
    return min(branches, default=None)


# ---- SASS / PTX compatibility -------------------------------------------------------------


def sass_runs_on(target: ComputeCapability, gpu: ComputeCapability) -> bool:
    """Does SASS compiled for `target` run on a GPU of compute capability `gpu`?"""
    if target.suffix == "a":
        return (gpu.major, gpu.minor) == (target.major, target.minor)
    return gpu.major == target.major and gpu.minor >= target.minor


def ptx_runs_on(ptx: ComputeCapability, gpu: ComputeCapability) -> bool:
    """Can PTX built for `ptx` be JIT-compiled for `gpu` (ignoring the driver's PTX ISA)?"""
    if ptx.suffix == "a":
        return (gpu.major, gpu.minor) == (ptx.major, ptx.minor)
    if ptx.suffix == "f":
        return gpu.major == ptx.major and gpu.minor >= ptx.minor
    return (gpu.major, gpu.minor) >= (ptx.major, ptx.minor)


def coverage(
    sass: Iterable[ComputeCapability], ptx: Iterable[ComputeCapability], gpu: ComputeCapability
) -> Coverage:
    """Which of a binary's SASS and PTX targets can serve `gpu`."""
    native = tuple(sorted({t for t in sass if sass_runs_on(t, gpu)}))
    via_ptx = tuple(sorted({t for t in ptx if ptx_runs_on(t, gpu)}))
    return Coverage(gpu=gpu, native=native, via_ptx=via_ptx)


def toolkit_targets_row(kb: KnowledgeBase, cuda: CudaVersion) -> Row | None:
    """The toolkit_targets row whose cuda..cuda_until range holds cuda's major.minor."""
    for row in kb.rows(ARCHS, "toolkit_targets"):
        first = CudaVersion.parse(row["cuda"])
        last = CudaVersion.parse(row.get("cuda_until") or row["cuda"])
        if first and last and _mm(first) <= _mm(cuda) <= _mm(last):
            return row
    return None


def toolkit_sass_targets(kb: KnowledgeBase, cuda: CudaVersion) -> frozenset[ComputeCapability]:
    """SASS targets a toolkit can compile for; empty when the table does not cover it."""
    row = toolkit_targets_row(kb, cuda)
    if row is None:
        return frozenset()
    parsed = (ComputeCapability.parse(text) for text in row["sass"])
    return frozenset(cc for cc in parsed if cc is not None)


def architecture(kb: KnowledgeBase, cc: ComputeCapability) -> Row | None:
    """The architecture row listing this compute capability (suffix ignored)."""
    for row in kb.rows(ARCHS, "architecture"):
        for text in row["ccs"]:
            listed = ComputeCapability.parse(text)
            if listed and (listed.major, listed.minor) == (cc.major, cc.minor):
                return row
    return None


# ---- libraries ----------------------------------------------------------------------------


def soname_rows(kb: KnowledgeBase, library: str, cuda_major: int) -> tuple[Row, ...]:
    """Every soname row of a library and CUDA major, newest library major first."""
    rows = [
        row
        for row in kb.rows(LIBS, "soname")
        if row["library"] == library and row["cuda_major"] == cuda_major
    ]
    return tuple(sorted(rows, key=lambda row: -int(row.get("library_major") or 0)))


def soname(kb: KnowledgeBase, library: str, cuda_major: int) -> str | None:
    """The Linux SONAME ('libcudart.so.12'); for cuDNN the newest major (libcudnn.so.9)."""
    rows = soname_rows(kb, library, cuda_major)
    return str(rows[0]["soname"]) if rows else None


def pip_package(kb: KnowledgeBase, library: str, cuda_major: int) -> Row | None:
    """NVIDIA's wheel for a library and CUDA major: package name and lib_dir."""
    return _first(kb.rows(LIBS, "pip_package"), library=library, cuda_major=cuda_major)


def cudnn_rows(kb: KnowledgeBase, cuda_major: int) -> tuple[Row, ...]:
    """cuDNN builds for a CUDA major, as the support matrices list them."""
    return tuple(row for row in kb.rows(LIBS, "cudnn") if row["cuda_major"] == cuda_major)


def cudnn_releases(kb: KnowledgeBase, cuda_major: int) -> tuple[Row, ...]:
    """cuDNN releases NVIDIA builds for a CUDA major (cudnn_release table), newest first."""
    rows = [r for r in kb.rows(LIBS, "cudnn_release") if cuda_major in r["cuda_majors"]]
    return tuple(sorted(rows, key=lambda r: _dotted(str(r["cudnn"])) or (), reverse=True))


def nccl_row(kb: KnowledgeBase, cuda_major: int) -> Row | None:
    """NCCL pip builds for a CUDA major (first and newest version seen)."""
    return _first(kb.rows(LIBS, "nccl"), cuda_major=cuda_major)


# ---- helpers ------------------------------------------------------------------------------


def _mm(cuda: CudaVersion) -> tuple[int, int]:
    return (cuda.major, cuda.minor)


def _dotted(text: str) -> tuple[int, ...] | None:
    version = DriverVersion.parse(text)
    if version is None:
        return None
    parts = version.parts
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts


def _rows(*rows: Row | None) -> tuple[Row, ...]:
    return tuple(row for row in rows if row is not None)


def _first(rows: Iterable[Row], **wanted: object) -> Row | None:
    for row in rows:
        if all(row.get(name) == value for name, value in wanted.items()):
            return row
    return None
