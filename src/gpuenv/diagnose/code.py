"""The GPU code a framework build in the env holds, for the rules that judge it: read from its own
libraries (the snapshot's fatbin scans, TensorFlow's build_info) first, the knowledge base second
(binaries.toml read from the released wheels, the curated torch arch lists). Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from gpuenv.diagnose.choose import platform_of
from gpuenv.diagnose.context import Context
from gpuenv.facts import FrameworkBuild
from gpuenv.kb.query.binaries import INDEX, BuildCode, binary_row, binding_code, build_code
from gpuenv.versions import ComputeCapability, CudaVersion

_JAX_PLUGIN = re.compile(r"jax-(cuda|rocm)(\d+)-(plugin|pjrt)")
_CUDA_MAJOR = re.compile(r"^\s*(\d{1,2})\s*$")


@dataclass(frozen=True)
class Compiled:
    """SASS and PTX targets of an installed build, the toolkit of its PTX, and who says so."""

    sass: frozenset[ComputeCapability]
    ptx: frozenset[ComputeCapability]
    cuda: CudaVersion | None  # the toolkit that built the PTX, when known
    where: str  # "fatbin of /…/libtorch_cuda.so", "kb: …"


def framework_cuda(fw: FrameworkBuild) -> CudaVersion | None:
    """The CUDA a build was made for; a bare major ("13" from a JAX plugin's name) counts as
    its .0 release, the lowest that major's runtime needs of the driver."""
    text = fw.framework_cuda
    if text is None:
        return None
    bare = _CUDA_MAJOR.match(text)
    return CudaVersion(int(bare.group(1)), 0) if bare else CudaVersion.parse(text)


def gpu_builds(ctx: Context) -> Iterator[FrameworkBuild]:
    """The env's CUDA builds, each once: jaxlib is left out where jax reports its plugin."""
    frameworks = ctx.frameworks()
    jax_gpu = any(f.name == "jax" and f.is_gpu_build for f in frameworks)
    for fw in frameworks:
        if not fw.is_gpu_build or fw.hip_version:
            continue
        if fw.name == "jaxlib" and jax_gpu and fw.details.get("plugin"):
            continue
        yield fw


def label(fw: FrameworkBuild) -> str:
    """'torch 2.13.0+cu126', 'jax 0.7.2 (jax-cuda13-plugin 0.7.2)'."""
    plugin = fw.details.get("plugin")
    return f"{fw.name} {fw.version or '?'}" + (f" ({plugin})" if plugin else "")


def packages_of(ctx: Context, fw: FrameworkBuild) -> tuple[str, ...]:
    """The distributions whose libraries carry the build's GPU code."""
    if fw.name in ("jax", "jaxlib") and fw.details.get("plugin"):
        env = ctx.snapshot.python_env
        names = [d.name for d in (env.distributions if env else ())]
        return tuple(n for n in names if _JAX_PLUGIN.fullmatch(canonicalize_name(n)))
    return (fw.distribution or fw.name,)


def compiled_code(ctx: Context, fw: FrameworkBuild) -> Compiled | None:
    """What the build's libraries hold: scanned, declared by the build, or in the KB."""
    packages = packages_of(ctx, fw)
    kb_code = _kb_code(ctx, fw, packages)
    kb_cuda = kb_code.cuda if kb_code else None
    cuda = kb_cuda or framework_cuda(fw)
    wanted = {canonicalize_name(p) for p in packages}
    scans = [
        b
        for b in ctx.snapshot.binaries
        if b.package and canonicalize_name(b.package) in wanted and (b.sass or b.ptx)
    ]
    if scans:
        # the library with the fewest targets is the binding limit
        main = min(scans, key=lambda b: len(b.sass) + len(b.ptx))
        return Compiled(_ccs(main.sass), _ccs(main.ptx), cuda, f"fatbin of {main.path}")
    declared = fw.details.get("cuda_compute_capabilities")
    if declared:
        targets = declared.split(",")
        sass = _ccs(t for t in targets if not t.startswith("compute_"))
        ptx = _ccs(t for t in targets if t.startswith("compute_"))
        return Compiled(sass, ptx, cuda, f"{fw.source}: cuda_compute_capabilities")
    if kb_code is not None:
        where = ctx.kb.cite(kb_code.subject, kb_code.row)
        return Compiled(kb_code.sass, kb_code.ptx, cuda, f"kb: {where}")
    return None


def _kb_code(ctx: Context, fw: FrameworkBuild, packages: tuple[str, ...]) -> BuildCode | None:
    version = (fw.version or "").split("+")[0]
    if not version:
        return None
    platform = platform_of(ctx)
    if fw.name == "torch":
        # read from the wheel first: its variant's, or (no local label) the package index's
        tries = [v for v in (fw.variant, INDEX if "+" not in (fw.version or "") else None) if v]
        read = next((v for v in tries if binary_row(ctx.kb, "torch", version, v, platform)), None)
        return build_code(ctx.kb, "torch", version, read or fw.variant or INDEX, platform)
    version = fw.details.get(canonicalize_name(packages[0]), version) if packages else version
    return binding_code(ctx.kb, packages, version, INDEX, platform)


def _ccs(values: Iterable[str]) -> frozenset[ComputeCapability]:
    parsed = (ComputeCapability.parse(v) for v in values)
    return frozenset(cc for cc in parsed if cc is not None)
