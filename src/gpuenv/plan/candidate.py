"""A candidate build of one package and the rules that judge it alone: the user's constraint,
Python, platform, driver and GPU architectures. Joint rules (several packages in one env) live in
joint.py. Every rule that fails yields a Rejection; a candidate fits when none does."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from gpuenv.errors import GpuenvError
from gpuenv.kb.query.binaries import PtxNeed, ptx_needs
from gpuenv.kb.query.cuda import (
    FIRST_MVC_MAJOR,
    MVC,
    NATIVE,
    coverage,
    driver_jits_ptx,
    mvc_min_driver,
    toolkit_min_driver,
    toolkit_sass_targets,
)
from gpuenv.plan.model import CondaSpec, PackageChoice, Rejection, SourceBuild
from gpuenv.plan.request import Want
from gpuenv.plan.target import GpuFloor, Target
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion, sortable


@dataclass(frozen=True)
class Candidate:
    framework: str  # "torch"
    name: str  # distribution: "torch", "tensorflow", "cupy-cuda12x"
    version: str  # exact, local label included: "2.5.1+cu121"
    build: str  # "cu121" | "cpu" | "cuda12" | "and-cuda" | "jetson"
    cuda: CudaVersion | None = None
    cudnn: str | None = None
    extras: tuple[str, ...] = ()
    index_url: str | None = None
    find_links: str | None = None
    sass: tuple[ComputeCapability, ...] | None = None  # None: unknown
    ptx: tuple[ComputeCapability, ...] = ()
    ptx_cuda: CudaVersion | None = None  # the toolkit that built its PTX; None: its `cuda`
    min_cc: ComputeCapability | None = None  # lowest GPU it supports, when only that is known
    strict_arch: bool = False  # reject when the arch list is unknown (torch: lists are curated)
    # reject when the arch list is unknown and the driver could not JIT the build's PTX (a
    # framework that reaches new GPUs through PTX: TensorFlow)
    strict_ptx: bool = False
    # compiles kernels at run time for the GPU it finds with its own CUDA (TensorFlow's XLA and
    # MLIR-generated kernels): a GPU that CUDA cannot compile for does not run, PTX or not
    compiles_for_gpu: bool = False
    python_tags: tuple[str, ...] | None = None  # "cp311", "py3", "cp39-abi3"; None: unknown
    python_range: tuple[str | None, str | None] = (None, None)  # ("3.9", "3.12") inclusive
    platforms: tuple[str, ...] | None = None  # None: unknown
    pins: tuple[str, ...] = ()
    pins_known: bool = True  # the wheel's own pins were read (pins may then be empty)
    # what the knowledge base's curated rows say it pins when its wheel's pins were not read
    # ("nvidia-cudnn-cu13==9.24.0.43" from the torch release row); checked in their place
    kb_pins: tuple[str, ...] = ()
    system_needs: tuple[str, ...] = ()
    conda: CondaSpec | None = None
    url: str | None = None  # installed by its URL (a release asset)
    exclusive_index: bool = False  # the default index has this version in another build
    source_build: SourceBuild | None = None  # built from source on the target
    blocked: tuple[Rejection, ...] = ()  # rules its generator already knows it fails
    # packages pinned with it: (name, version, extras), e.g. ("jaxlib", "0.6.2", ())
    companions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    default: bool = False  # what the installer picks from the package index without a variant
    why: str = ""
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        shown = self.version.split("+")[0]
        return " ".join(part for part in (self.name, shown, self.build) if part)

    @property
    def public(self) -> Version:
        return sortable(self.version.split("+")[0])

    @property
    def public_text(self) -> str:
        """The version without its local label: '2.5.1' of '2.5.1+cu121'."""
        return self.version.split("+")[0]

    def reject(self, rule: str, reason: str, needs: str | None = None) -> Rejection:
        return Rejection(self.framework, self.label, rule, reason, needs)

    def blocked_by(self, rule: str, reason: str, needs: str | None = None) -> Candidate:
        return replace(self, blocked=(*self.blocked, self.reject(rule, reason, needs)))


def specifier_of(want: Want) -> SpecifierSet:
    try:
        return SpecifierSet(want.specifier)
    except InvalidSpecifier as exc:  # parse_want already checked; kept for direct callers
        raise GpuenvError("bad-requirement", f"{want.raw!r}: {exc}") from None


def judge(candidate: Candidate, target: Target, want: Want | None) -> tuple[Rejection, ...]:
    """Every rule this candidate fails on the target, most fixable first."""
    out: list[Rejection] = []
    if want is not None:
        out.extend(_constraint(candidate, want))
    unknown = tuple(r for r in candidate.blocked if r.rule == "unknown")
    if unknown:
        return (*out, *unknown)
    out.extend(_python(candidate, target))
    out.extend(_platform(candidate, target))
    out.extend(candidate.blocked)
    out.extend(_driver(candidate, target))
    out.extend(_ptx_jit(candidate, target))
    out.extend(_ceiling(candidate, target))
    out.extend(_arch(candidate, target))
    out.extend(_gpu_wanted(candidate, target))
    return tuple(out)


# Wants that name one distribution of a framework: only that distribution will do.
_SPECIFIC = ("cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x")


def _constraint(candidate: Candidate, want: Want) -> list[Rejection]:
    if want.name in _SPECIFIC and candidate.name != want.name and not _same_cupy(candidate, want):
        return [candidate.reject("constraint", f"you asked for {want.name}")]
    spec = specifier_of(want)
    if not str(spec):
        return []
    if spec.contains(candidate.version, prereleases=True):
        return []
    return [candidate.reject("constraint", f"outside your constraint {want.name}{spec}")]


def _same_cupy(candidate: Candidate, want: Want) -> bool:
    """conda-forge names CuPy `cupy` for every CUDA: its build for CUDA 12 is cupy-cuda12x."""
    cuda = candidate.cuda
    return (
        candidate.conda is not None and cuda is not None and want.name == f"cupy-cuda{cuda.major}x"
    )


def _python(candidate: Candidate, target: Target) -> list[Rejection]:
    python = target.python
    if python is None:
        return []
    low, high = candidate.python_range
    text = target.python_text
    if candidate.python_tags is not None and not _tags_admit(candidate.python_tags, python):
        span = _tag_span(candidate.python_tags)
        shown = f"wheels for Python {span}" if span else "wheels for other Pythons"
        return [candidate.reject("python", f"no wheel for Python {text} ({shown})", span)]
    if (low and _pv(text) < _pv(low)) or (high and _pv(text) > _pv(high)):
        span = f"{low or '3.0'}–{high or '3.99'}"
        return [candidate.reject("python", f"supports Python {span}; you have {text}", span)]
    return []


def _pv(text: str | None) -> tuple[int, ...]:
    parts = []
    for part in (text or "0").split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def _tags_admit(tags: Iterable[str], python: tuple[int, int]) -> bool:
    wanted = f"cp{python[0]}{python[1]}"
    for tag in tags:
        if tag in ("py3", f"py{python[0]}", "py2.py3", wanted):
            return True
        if tag.endswith("-abi3") and _tag_python(tag[:-5]) <= python:
            return True
    return False


def _tag_python(tag: str) -> tuple[int, int]:
    digits = tag[2:].rstrip("t")
    if len(digits) < 2 or not digits.isdigit():
        return (99, 99)
    return (int(digits[0]), int(digits[1:]))


def _tag_span(tags: Iterable[str]) -> str | None:
    """'3.9–3.12' from cp39 … cp312 (free-threaded tags count as their Python)."""
    versions = sorted({_tag_python(t.split("-")[0]) for t in tags if t.startswith("cp")})
    versions = [v for v in versions if v != (99, 99)]
    if not versions:
        return None
    low, high = versions[0], versions[-1]
    return f"{low[0]}.{low[1]}–{high[0]}.{high[1]}"


def _platform(candidate: Candidate, target: Target) -> list[Rejection]:
    platforms = candidate.platforms
    if platforms is None or "any" in platforms or target.platform in platforms:
        return []
    shown = ", ".join(platforms) or "no platform"
    return [candidate.reject("platform", f"no build for {target.platform} (has {shown})")]


def _driver(candidate: Candidate, target: Target) -> list[Rejection]:
    if candidate.cuda is None:
        return []
    support = target.driver_support(candidate.cuda)
    floor = _gpu_floor_unmet(target)
    if (support is None or support.ok is not False) and floor is None:
        return []
    reasons, needs = [], []
    if support is not None and support.ok is False:
        need = f"needs driver ≥ {support.min_driver}" if support.min_driver else "a newer driver"
        reasons.append(f"built for CUDA {candidate.cuda.short}, {need}")
        needs.append(support.min_driver)
    if floor is not None:
        reasons.append(f"{floor.reason} (≥ {floor.driver})")
        needs.append(floor.driver)
    known = [n for n in needs if n is not None]
    reason = f"{'; '.join(reasons)}; you have {target.driver}"
    return [candidate.reject("driver", reason, str(max(known)) if known else "")]


def _gpu_floor_unmet(target: Target) -> GpuFloor | None:
    """The GPUs' driver floor when the target's driver is of an older branch."""
    floor = target.gpu_floor
    if floor is None or target.driver is None or target.jetson:
        return None
    return floor if target.driver.branch < floor.driver.branch else None


def ptx_reach(candidate: Candidate, target: Target) -> tuple[PtxNeed, ...]:
    """The target's GPUs this build reaches only through PTX, with the toolkit of that PTX."""
    if candidate.sass is None or not candidate.ptx:
        return ()
    return ptx_needs(
        candidate.sass, candidate.ptx, candidate.ptx_cuda or candidate.cuda, target.ccs
    )


def _ptx_jit(candidate: Candidate, target: Target) -> list[Rejection]:
    """PTX JIT-compiles only on a driver whose own CUDA is at least the PTX's toolkit; minor-
    version compatibility does not cover it (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)."""
    if target.jetson:
        return []
    unknown = _unknown_code(candidate, target)
    if unknown:
        return unknown
    for need in ptx_reach(candidate, target):
        if jits_ptx(target, need.cuda) is not False:
            continue
        gpu = next((g for g in target.gpus if g.cc == need.gpu), None)
        full = toolkit_min_driver(target.kb, need.cuda, target.driver_os)
        have = target.driver_max_cuda.short if target.driver_max_cuda else "an older CUDA"
        reason = (
            f"reaches {gpu.label if gpu else 'the GPU'} (sm_{need.gpu.major}{need.gpu.minor}) "
            f"only through PTX (compute_{need.ptx.major}{need.ptx.minor}) built with CUDA "
            f"{need.cuda.short}; driver {target.driver} supports CUDA {have}, and minor-version "
            "compatibility does not cover PTX"
        )
        return [candidate.reject("driver", reason, str(full) if full else "")]
    return []


def _unknown_code(candidate: Candidate, target: Target) -> list[Rejection]:
    """A build whose GPU code is unknown cannot be cleared where the driver runs its CUDA only
    under minor-version compatibility: a GPU it reaches only through PTX would not run, and
    nothing says which GPUs that is."""
    cuda = candidate.cuda
    if not candidate.strict_ptx or candidate.sass is not None or cuda is None:
        return []
    if not target.gpus or jits_ptx(target, cuda) is not False:
        return []
    full = toolkit_min_driver(target.kb, cuda, target.driver_os)
    have = target.driver_max_cuda.short if target.driver_max_cuda else "an older CUDA"
    reason = (
        f"its GPU code is not in the knowledge base, and driver {target.driver} (CUDA {have}) "
        f"runs CUDA {cuda.short} only under minor-version compatibility, which does not cover "
        "PTX: a GPU it reaches only through PTX would not run"
    )
    return [candidate.reject("driver", reason, str(full) if full else "")]


def jits_ptx(target: Target, cuda: CudaVersion) -> bool | None:
    """Can the target's driver JIT PTX built with `cuda`? None when the driver is unknown."""
    if target.driver_max_cuda is not None:
        return driver_jits_ptx(target.driver_max_cuda, cuda)
    support = target.driver_support(cuda)
    if support is None or support.ok is None:
        return None
    return support.how == NATIVE


def _ceiling(candidate: Candidate, target: Target) -> list[Rejection]:
    """A GPU the driver's branch no longer drives: no GPU build runs on it."""
    ceiling = target.ceiling
    if ceiling is None or (candidate.cuda is None and candidate.build != "jetson"):
        return []
    return [candidate.reject("driver", ceiling.reason, f"R{ceiling.last_branch}")]


def _arch(candidate: Candidate, target: Target) -> list[Rejection]:
    if candidate.cuda is None or not target.wants_gpu:
        return []
    for gpu in target.gpus:
        if gpu.cc is None:
            continue
        reason = _codegen_reason(candidate, target, gpu.cc) or _arch_reason(candidate, gpu.cc)
        if reason:
            return [
                candidate.reject("arch", f"{reason} {gpu.name} (sm_{gpu.cc.major}{gpu.cc.minor})")
            ]
    return []


def _codegen_reason(candidate: Candidate, target: Target, cc: ComputeCapability) -> str | None:
    cuda = candidate.cuda
    if not candidate.compiles_for_gpu or cuda is None:
        return None
    known = {(t.major, t.minor) for t in toolkit_sass_targets(target.kb, cuda)}
    if not known or (cc.major, cc.minor) in known:
        return None
    return (
        f"compiles its kernels at run time for the GPU it finds with its own CUDA {cuda.short}, "
        "which cannot compile for"
    )


def _arch_reason(candidate: Candidate, cc: ComputeCapability) -> str | None:
    if candidate.sass is None:
        floor = candidate.min_cc
        if floor is not None and (cc.major, cc.minor) < (floor.major, floor.minor):
            return f"supports compute capability ≥ {floor} only, not"
        if floor is None and candidate.strict_arch:
            return "its GPU architectures are unknown, so it may not run on"
        return None
    cov = coverage(candidate.sass, candidate.ptx, cc)
    if cov.runs:
        return None
    listed = ", ".join(c.sm for c in sorted(candidate.sass)) or "none"
    return f"has code for {listed} only, none for"


def _gpu_wanted(candidate: Candidate, target: Target) -> list[Rejection]:
    gpu_build = candidate.cuda is not None or candidate.build == "jetson"
    if target.wants_gpu and not gpu_build:
        return [candidate.reject("gpu", "a CPU-only build, and the target has an NVIDIA GPU")]
    if not target.wants_gpu and gpu_build:
        return [candidate.reject("gpu", "a CUDA build, and the target has no NVIDIA GPU")]
    return []


def driver_how(candidate: Candidate, target: Target) -> str | None:
    if candidate.cuda is None:
        return None
    support = target.driver_support(candidate.cuda)
    return support.how if support is not None else None


def variant_rank(candidate: Candidate, target: Target) -> tuple[int, int]:
    """Order of the variants of one version: CUDA the driver runs natively first, then CUDA it
    runs under minor-version compatibility, each highest first; CPU builds last. With no driver
    known, the build the package index serves by default comes first."""
    cuda = candidate.cuda
    if cuda is None:
        return (9, 0)
    minor = cuda.major * 100 + cuda.minor
    if target.driver is None or target.jetson:
        return (0 if candidate.default else 1, -minor)
    tier = {NATIVE: 0, MVC: 1}.get(driver_how(candidate, target) or "", 2)
    return (tier, -minor)


def min_driver_for(target: Target, cuda: CudaVersion) -> str | None:
    """The lowest driver that runs code built with `cuda` on the target's OS, driver or not."""
    os_name = target.driver_os
    if cuda.major >= FIRST_MVC_MAJOR:
        found = mvc_min_driver(target.kb, cuda.major, os_name)
    else:
        found = toolkit_min_driver(target.kb, cuda, os_name)
    return str(found) if found else None


def _ptx_cuda(candidate: Candidate) -> str | None:
    cuda = candidate.ptx_cuda or candidate.cuda
    return cuda.short if candidate.ptx and cuda else None


def _with_ptx_driver(candidate: Candidate, target: Target, min_driver: str | None) -> str | None:
    """A GPU reached only through PTX needs the driver of the PTX's own CUDA release."""
    found = [DriverVersion.parse(min_driver)] if min_driver else []
    for need in ptx_reach(candidate, target):
        found.append(toolkit_min_driver(target.kb, need.cuda, target.driver_os))
    known = [d for d in found if d is not None]
    return str(max(known)) if known else min_driver


def to_choice(
    candidate: Candidate, target: Target, rejected: tuple[Rejection, ...]
) -> PackageChoice:
    support = target.driver_support(candidate.cuda) if candidate.cuda else None
    min_driver = min_driver_for(target, candidate.cuda) if candidate.cuda else None
    floor = target.gpu_floor
    if min_driver and floor and floor.driver > (DriverVersion.parse(min_driver) or floor.driver):
        min_driver = str(floor.driver)  # an older driver does not know the GPU
    min_driver = _with_ptx_driver(candidate, target, min_driver)
    return PackageChoice(
        name=candidate.name,
        version=candidate.version,
        framework=candidate.framework,
        build=candidate.build,
        extras=candidate.extras,
        cuda=candidate.cuda.short if candidate.cuda else None,
        cudnn=candidate.cudnn,
        index_url=candidate.index_url,
        find_links=candidate.find_links,
        min_driver=None if target.jetson else min_driver,
        driver_how=support.how if support else None,
        sass=tuple(c.sm for c in candidate.sass or ()),
        ptx=tuple(f"compute_{c.major}{c.minor}{c.suffix}" for c in candidate.ptx),
        ptx_cuda=_ptx_cuda(candidate),
        pins=candidate.pins,
        system_needs=candidate.system_needs,
        conda=candidate.conda,
        url=candidate.url,
        exclusive_index=candidate.exclusive_index,
        source_build=candidate.source_build,
        why=candidate.why,
        notes=candidate.notes,
        rejected=rejected,
    )
