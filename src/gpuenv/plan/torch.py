"""PyTorch candidates: every release the package index has, each in every build that serves the
target (the index's default build, and PyTorch's CUDA or CPU variant indexes), ordered newest
release first and, within a release, as `variant_rank` prefers. torchvision/torchaudio follow the
torch picked: the release built for it, from the same index, with the same local label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gpuenv.diagnose.choose import variant_cuda
from gpuenv.kb import Row
from gpuenv.kb.query._frameworks_util import minor_line
from gpuenv.kb.query.binaries import INDEX, build_code
from gpuenv.kb.query.frameworks import (
    torch_arch_list,
    torch_default_variant,
    torch_find_links,
    torch_index_url,
    torch_release,
    torch_releases,
    torchvision_for,
)
from gpuenv.plan import wheels
from gpuenv.plan.candidate import Candidate, variant_rank
from gpuenv.plan.floors import cudnn_pins
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion

COMPANIONS = ("torchvision", "torchaudio")
# PyTorch's variant indexes publish these platforms (CUDA builds for Linux x86_64 and Windows;
# Linux aarch64 CUDA builds only where the arch table lists them).
_CUDA_PLATFORMS = ("linux-x86_64", "windows-x86_64")
_CPU_PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")


def torch_candidates(target: Target) -> list[Candidate]:
    out: list[Candidate] = []
    for wheel in wheels.releases(target.kb, "torch"):
        version = str(wheel["version"])
        row = torch_release(target.kb, version)
        if row is None:
            out.append(_unknown(version))
            continue
        builds = _builds(target, version, row, wheel)
        out.extend(sorted(builds, key=lambda c: variant_rank(c, target)))
    return out + _older_lines(target)


def _older_lines(target: Target) -> list[Candidate]:
    """Lines the release table describes and the wheels table does not list (1.x): their X.Y.0
    release in PyTorch's variant builds (on its indexes, or its page of links before 1.11)."""
    listed = {minor_line(str(w["version"])) for w in wheels.releases(target.kb, "torch")}
    out: list[Candidate] = []
    for row in torch_releases(target.kb):
        line = minor_line(str(row["torch"]))
        if line is None or line in listed or target.os == "macos":
            continue
        version = f"{line[0]}.{line[1]}.0"
        variants = [str(v) for v in row.get("cuda_variants", [])] if target.wants_gpu else ["cpu"]
        builds = [_index_build(target, version, v, row) for v in variants]
        out.extend(sorted(builds, key=lambda c: variant_rank(c, target)))
    return out


def _unknown(version: str) -> Candidate:
    """A release the package index has and the knowledge base does not describe yet."""
    candidate = Candidate(framework="torch", name="torch", version=version, build="")
    return candidate.blocked_by(
        "unknown",
        "its builds are not in the knowledge base yet (a newer gpuenv will know them)",
    )


def _builds(target: Target, version: str, row: Row, wheel: Row) -> list[Candidate]:
    default = torch_default_variant(target.kb, version, target.platform)
    builds = [_default_build(target, version, default, wheel)] if default else []
    if target.os == "macos":
        return builds
    variants = [str(v) for v in row.get("cuda_variants", [])] if target.wants_gpu else []
    variants += [] if target.wants_gpu else ["cpu"]
    for variant in variants:
        if variant != default:
            builds.append(_index_build(target, version, variant, row))
    return [b for b in builds if (b.cuda is not None) == target.wants_gpu]


def _archs(
    target: Target, version: str, variant: str
) -> tuple[tuple[ComputeCapability, ...] | None, tuple[ComputeCapability, ...], CudaVersion | None]:
    """(sass, ptx, the toolkit of the PTX): read from the wheel, else the curated arch list."""
    code = build_code(target.kb, "torch", version, variant, target.platform)
    if code is None:
        return None, (), None
    return tuple(sorted(code.sass)), tuple(sorted(code.ptx)), code.cuda


def _default_build(target: Target, version: str, variant: str, wheel: Row) -> Candidate:
    cuda = variant_cuda(variant)
    sass, ptx, ptx_cuda = _archs(target, version, INDEX) if cuda else ((), (), None)
    on_linux = target.platform == "linux-x86_64"
    return Candidate(
        framework="torch",
        name="torch",
        version=version,
        build=variant,
        cuda=cuda,
        cudnn=str(wheel["cudnn"]) if cuda and wheel.get("cudnn") else None,
        sass=sass,
        ptx=ptx,
        ptx_cuda=ptx_cuda,
        python_tags=wheels.tags(wheel),
        platforms=wheels.platforms(wheel),
        pins=wheels.pins(wheel) if on_linux else (),
        pins_known=(on_linux and bool(wheel.get("pins"))) or cuda is None,
        kb_pins=_release_pins(target, version, cuda) if on_linux else (),
        strict_arch=True,
        default=True,
        why=f"the package index's own build of torch {version} ({_describe(variant)})",
    )


def _release_pins(target: Target, version: str, cuda: CudaVersion | None) -> tuple[str, ...]:
    """The cuDNN the release row says the package index's wheel pins (its CUDA major's)."""
    row = torch_release(target.kb, version)
    cudnn = row.get("cudnn") if row else None
    return cudnn_pins(target, cuda, f"=={cudnn}" if cudnn else None)


def _index_build(target: Target, version: str, variant: str, row: Row | None) -> Candidate:
    cuda = variant_cuda(variant)
    sass, ptx, ptx_cuda = _archs(target, version, variant) if cuda else ((), (), None)
    platforms = _CUDA_PLATFORMS if cuda else _CPU_PLATFORMS
    if cuda and sass is not None and torch_arch_list(target.kb, version, variant, "linux-aarch64"):
        platforms = (*platforms, "linux-aarch64")
    # before 1.11 PyTorch published the variant wheels on one page of links, not on indexes
    find_links = torch_find_links(target.kb, version, variant)
    index_url = None if find_links else torch_index_url(target.kb, variant)
    cudnn = _variant_cudnn(row, variant) if cuda else None
    candidate = Candidate(
        framework="torch",
        name="torch",
        version=f"{version}+{variant}",
        build=variant,
        cuda=cuda,
        index_url=index_url,
        find_links=find_links,
        sass=sass,
        ptx=ptx,
        ptx_cuda=ptx_cuda,
        cudnn=cudnn,
        python_range=_python_range(row),
        platforms=platforms,
        pins_known=cuda is None,
        # Linux wheels pin NVIDIA's cuDNN wheel; Windows wheels carry the DLLs themselves
        kb_pins=cudnn_pins(target, cuda, f"=={cudnn}" if cudnn else None)
        if target.platform.startswith("linux")
        else (),
        strict_arch=True,
        why=f"PyTorch's {variant} build of torch {version} ({_describe(variant)})",
    )
    if index_url is None and find_links is None:
        return candidate.blocked_by(
            "unknown", f"PyTorch's {variant} index is not in the knowledge base"
        )
    return candidate


def _variant_cudnn(row: Row | None, variant: str) -> str | None:
    """The cuDNN PyTorch's `variant` build of this line pins (RELEASE.md's matrix)."""
    table = row.get("variant_cudnn") if row else None
    found = table.get(variant) if isinstance(table, dict) else None
    return str(found) if found else None


def _python_range(row: Row | None) -> tuple[str | None, str | None]:
    if row is None:
        return (None, None)
    low, high = row.get("python_min"), row.get("python_max")
    return (str(low) if low else None, str(high) if high else None)


def _describe(variant: str) -> str:
    cuda = variant_cuda(variant)
    return f"CUDA {cuda.short}" if cuda else "CPU only"


# ---- torchvision / torchaudio ---------------------------------------------------------------


def companion_candidates(
    target: Target, companion: str, chosen: Mapping[str, Candidate]
) -> Sequence[Candidate]:
    """Releases of a companion built for the torch in `chosen`, in that torch's build."""
    torch = chosen.get("torch")
    if torch is None:
        return ()
    public = torch.version.split("+")[0]
    out = []
    for row in wheels.releases(target.kb, companion):
        if _pairs(target, companion, row, public):
            out.append(_companion(companion, row, torch))
    return out


def _pairs(target: Target, companion: str, row: Row, torch_version: str) -> bool:
    required = row.get("requires_torch")
    if required:
        try:
            return SpecifierSet(str(required)).contains(torch_version, prereleases=True)
        except InvalidSpecifier:
            return False
    version = str(row["version"])
    if companion == "torchaudio":
        return version == torch_version
    line = torchvision_for(target.kb, torch_version)
    return bool(line) and _same_line(version, str(line), torch_version)


def _same_line(version: str, line: str, torch_version: str) -> bool:
    """torchvision 0.20.x pairs with torch 2.5.x, patch for patch."""
    if line.count(".") >= 2:
        return version == line
    torch_patch = torch_version.split(".")[2] if torch_version.count(".") >= 2 else "0"
    return version == f"{line}.{torch_patch}"


def _companion(companion: str, row: Row, torch: Candidate) -> Candidate:
    version = str(row["version"])
    label = torch.version.split("+", 1)[1] if "+" in torch.version else None
    return Candidate(
        framework=companion,
        name=companion,
        version=f"{version}+{label}" if label else version,
        build=torch.build,
        cuda=torch.cuda,
        index_url=torch.index_url,
        find_links=torch.find_links,
        python_tags=wheels.tags(row) if not label else None,
        platforms=wheels.platforms(row) if not label else None,
        sass=torch.sass,
        ptx=torch.ptx,
        ptx_cuda=torch.ptx_cuda,
        pins_known=True,
        default=torch.default,
        why=f"the {companion} release built for torch {torch.version}",
    )
