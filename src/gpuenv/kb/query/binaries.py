"""The GPU code compiled into a framework build: which GPUs it runs on natively (SASS), which only
by JIT-compiling PTX, and the CUDA toolkit that PTX was built with.

binaries.toml (read from the released wheels' own `.nv_fatbin` sections) answers first; the
curated torch arch lists (torch.toml [[arch_list]]) second; the architectures a release's own build
file declares (wheels.toml `build_archs`/`build_cuda`, TensorFlow's build_info.py) third. Pure;
None when none knows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.kb.query.cuda import Coverage, coverage, driver_jits_ptx, ptx_isa_cuda
from gpuenv.kb.query.torch import torch_arch_row, torch_default_variant
from gpuenv.versions import ComputeCapability, CudaVersion

SUBJECT = "binaries"
WHEELS = "wheels"
INDEX = "index"  # the variant name of the package index's own build
# build_archs describe the build the build file belongs to: the Linux x86_64 wheel's
DECLARED_PLATFORM = "linux-x86_64"


@dataclass(frozen=True)
class BuildCode:
    """SASS and PTX targets of one build, the toolkit that made them, and where that is said."""

    sass: frozenset[ComputeCapability]
    ptx: frozenset[ComputeCapability]
    # the CUDA release PTX JIT needs of the driver: the toolkit that built the code (or the
    # release of the PTX ISA read from the wheel, where newer)
    cuda: CudaVersion | None
    ptx_known: bool  # False: the source lists no PTX without saying there is none
    subject: str  # the KB file the row is in: "binaries" | "torch" | "wheels"
    row: Row = field(compare=False)

    def reach(self, gpu: ComputeCapability) -> Coverage:
        return coverage(self.sass, self.ptx, gpu)

    @property
    def size(self) -> int:
        return len(self.sass) + len(self.ptx)


@dataclass(frozen=True)
class PtxNeed:
    """A GPU a build reaches only through PTX, and the CUDA the driver must have to JIT it."""

    gpu: ComputeCapability
    ptx: ComputeCapability  # the PTX target that serves it ("compute_90")
    cuda: CudaVersion  # the toolkit that built the PTX


def binary_row(
    kb: KnowledgeBase, package: str, version: str, variant: str = INDEX, platform: str = ""
) -> Row | None:
    """The binaries.toml row of exactly this release ("2.16.1"; a local label is ignored)."""
    wanted = _public(version)
    if wanted is None:
        return None
    rows = _by_build(kb).get((canonicalize_name(package), variant), ())
    return next(
        (r for v, r in rows if v == wanted and (not platform or r["platform"] == platform)), None
    )


def _by_build(kb: KnowledgeBase) -> dict[tuple[str, str], list[tuple[Version | None, Row]]]:
    """binaries.toml rows by (package, variant), each with its parsed version: read once."""

    def index() -> dict[tuple[str, str], list[tuple[Version | None, Row]]]:
        out: dict[tuple[str, str], list[tuple[Version | None, Row]]] = {}
        for row in kb.rows(SUBJECT, "build"):
            key = (canonicalize_name(str(row["package"])), str(row["variant"]))
            out.setdefault(key, []).append((_public(str(row["version"])), row))
        return out

    return kb.memo("binaries.by_build", index)


def build_code(
    kb: KnowledgeBase,
    package: str,
    version: str,
    variant: str = INDEX,
    platform: str = "linux-x86_64",
) -> BuildCode | None:
    """What one build holds: the wheel-read row, else the curated torch arch list."""
    row = binary_row(kb, package, version, variant, platform)
    if row is not None:
        return BuildCode(
            sass=_ccs(row["sass"]),
            ptx=_ccs(row["ptx"]),
            cuda=_read_ptx_cuda(kb, row),
            ptx_known=True,
            subject=SUBJECT,
            row=row,
        )
    if canonicalize_name(package) == "torch":
        return _torch_code(kb, version, variant, platform)
    if variant == INDEX and platform == DECLARED_PLATFORM:
        return _declared_code(kb, package, version)
    return None


def _read_ptx_cuda(kb: KnowledgeBase, row: Row) -> CudaVersion | None:
    """The CUDA a driver needs to JIT the build's PTX: the build's toolkit, or the release of
    the `.nv_fatbin` PTX's ISA where that is newer. Never the ISA where it is older: a build
    compiled with clang (TensorFlow) writes an older ISA there, while the PTX it makes outside
    `.nv_fatbin` (its MLIR-generated kernels, loaded with cuModuleLoadData) follows its CUDA."""
    built = CudaVersion.parse(str(row["cuda"]))
    isa = row.get("ptx_isa")
    read = ptx_isa_cuda(kb, str(isa)) if isa else None
    known = [c for c in (built, read) if c is not None]
    return max(known, key=lambda c: (c.major, c.minor)) if known else None


def _declared_code(kb: KnowledgeBase, package: str, version: str) -> BuildCode | None:
    """What the release's build file declares (wheels.toml build_archs): 'sm_80' is SASS only,
    'compute_90' PTX only (TensorFlow's TF_CUDA_COMPUTE_CAPABILITIES convention); the PTX's
    toolkit is the build's CUDA, an upper bound on its ISA."""
    wanted = _public(version)
    name = canonicalize_name(package)
    row = next(
        (
            r
            for r in kb.rows(WHEELS, "release")
            if canonicalize_name(str(r["package"])) == name
            and _public(str(r["version"])) == wanted
            and r.get("build_archs")
        ),
        None,
    )
    if row is None or wanted is None:
        return None
    archs = [str(a) for a in row["build_archs"]]
    cuda = row.get("build_cuda") or row.get("cuda")
    return BuildCode(
        sass=_ccs(a for a in archs if a.startswith("sm_")),
        ptx=_ccs(a for a in archs if a.startswith("compute_")),
        cuda=CudaVersion.parse(str(cuda)) if cuda else None,
        ptx_known=True,
        subject=WHEELS,
        row=row,
    )


def binding_code(
    kb: KnowledgeBase,
    packages: Iterable[str],
    version: str,
    variant: str = INDEX,
    platform: str = "linux-x86_64",
) -> BuildCode | None:
    """Of several libraries shipped as one build (the JAX plugin and its PJRT wheel), the one
    with the fewest targets: the GPUs it leaves out are the GPUs the build cannot serve."""
    found = [build_code(kb, p, version, variant, platform) for p in packages]
    known = [c for c in found if c is not None]
    return min(known, key=lambda c: c.size) if known else None


def ptx_needs(
    sass: Iterable[ComputeCapability],
    ptx: Iterable[ComputeCapability],
    cuda: CudaVersion | None,
    gpus: Iterable[ComputeCapability],
) -> tuple[PtxNeed, ...]:
    """Every GPU the code reaches only through PTX (no SASS runs there)."""
    if cuda is None:
        return ()
    sass_set, ptx_set = frozenset(sass), frozenset(ptx)
    out = []
    for gpu in gpus:
        cov = coverage(sass_set, ptx_set, gpu)
        if cov.kind == "ptx-jit":
            out.append(PtxNeed(gpu, max(cov.via_ptx), cuda))
    return tuple(out)


def unmet_ptx_need(needs: Iterable[PtxNeed], driver_cuda: CudaVersion | None) -> PtxNeed | None:
    """The first PTX need the driver's own CUDA cannot JIT; None when all are met or unknown."""
    if driver_cuda is None:
        return None
    return next((n for n in needs if not driver_jits_ptx(driver_cuda, n.cuda)), None)


def _torch_code(kb: KnowledgeBase, version: str, variant: str, platform: str) -> BuildCode | None:
    label = torch_default_variant(kb, version, platform) if variant == INDEX else variant
    if not label:
        return None
    row = torch_arch_row(kb, version, label, platform)
    if row is None:
        return None
    return BuildCode(
        sass=_ccs(row["sass"]),
        ptx=_ccs(row.get("ptx", ())),
        cuda=CudaVersion.parse(label) if label.startswith("cu") else None,
        ptx_known="ptx" in row,
        subject="torch",
        row=row,
    )


def _public(text: str) -> Version | None:
    try:
        return Version(text.split("+")[0].strip())
    except InvalidVersion:
        return None


def _ccs(values: Iterable[str]) -> frozenset[ComputeCapability]:
    parsed = (ComputeCapability.parse(str(v)) for v in values)
    return frozenset(cc for cc in parsed if cc is not None)
