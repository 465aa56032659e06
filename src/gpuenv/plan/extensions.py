"""Compiled torch extensions (flash-attn, xformers, torch-scatter, torch-sparse, mmcv, apex): their
candidates follow the torch picked, like torchvision's. A prebuilt wheel must match that torch's
release line, CUDA (or variant) and C++ ABI; the planner may pick an older torch to get one (the
torch candidates passed over say so). Where no prebuilt wheel fits any torch the user allows,
`source_build_candidates` gives the build from source: the command, the nvcc it needs (checked
against the toolkits in the snapshot) and the GPU architectures to build for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from gpuenv.kb import Row
from gpuenv.kb.query.extensions import (
    extension_package,
    extension_wheels,
    torch_cxx11_abi,
)
from gpuenv.kb.query.frameworks import mmcv_find_links, mmcv_wheels
from gpuenv.plan.candidate import Candidate
from gpuenv.plan.model import Plan, SourceBuild
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion, sortable

# compiled torch extensions gpuenv plans (mmcv-full is planned as mmcv); a source build where
# no prebuilt wheel fits
EXTENSIONS = ("flash-attn", "xformers", "torch-scatter", "torch-sparse", "mmcv", "apex")
MAX_JOBS = "4"  # flash-attn's setup.py: each nvcc job can take 8-9 GB of memory


def extension_candidates(
    target: Target, name: str, chosen: Mapping[str, Candidate]
) -> Sequence[Candidate]:
    """Prebuilt wheels of `name` for the torch in `chosen`, newest first; with the target's
    source builds allowed and no wheel for this torch, the build from source."""
    torch = chosen.get("torch")
    if torch is None or torch.build in ("", "jetson"):
        return ()
    found = _mmcv(target, torch) if name == "mmcv" else _wheels(target, name, torch)
    if found or not target.source_builds:
        return found
    return source_build_candidates(target, name, torch)


def _wheels(target: Target, name: str, torch: Candidate) -> list[Candidate]:
    out = []
    for row in extension_wheels(target.kb, name):
        if not _pairs(row, torch, target):
            continue
        candidate = _wheel(target, name, row, torch)
        if candidate is not None:
            out.append(candidate)
    return out


def _pairs(row: Row, torch: Candidate, target: Target) -> bool:
    try:
        spec = SpecifierSet(str(row["torch"]))
    except InvalidSpecifier:
        return False
    if not spec.contains(torch.public, prereleases=True):
        return False
    variants = row["variants"]
    if target.os == "windows" and "windows_variants" in row:
        variants = row["windows_variants"]
    return _variant_of(torch, [str(v) for v in variants]) is not None


def _variant_of(torch: Candidate, variants: Sequence[str]) -> str | None:
    """The listed variant serving this torch build: its own ("cu128"), its CUDA major ("cu12"
    serves every CUDA 12 torch) or "cpu" for a CPU torch."""
    if torch.cuda is None:
        return "cpu" if "cpu" in variants else None
    if torch.build in variants:
        return torch.build
    major = f"cu{torch.cuda.major}"
    return major if major in variants else None


def _wheel(target: Target, name: str, row: Row, torch: Candidate) -> Candidate | None:
    package = extension_package(target.kb, name)
    if package is None:
        return None
    variant = _variant_of(torch, [str(v) for v in row["variants"]]) or torch.build
    base = Candidate(
        framework=name,
        name=name,
        version=str(row["version"]),
        build=variant,
        cuda=_built_cuda(row, torch),
        sass=_ccs(row["sass"]) if "sass" in row else None,
        python_range=(_text(row.get("python_min")), _text(row.get("python_max"))),
        platforms=tuple(str(p) for p in row["platforms"]),
        why=f"{name} {row['version']}, the prebuilt wheel for torch {torch.public} ({variant})",
    )
    kind = str(package["wheels"])
    if kind == "release-asset":
        return _release_asset(target, package, row, torch, base)
    if kind == "find-links":
        return _find_links(package, row, torch, base, variant)
    if kind == "variant-index":
        return _variant_index(package, row, torch, base)
    return None


def _built_cuda(row: Row, torch: Candidate) -> CudaVersion | None:
    """The CUDA whose runtime the wheel needs: the toolkit it was built with where the row
    says (flash-attn: 12.9 for every CUDA 12 torch), else the torch's own."""
    if torch.cuda is None:
        return None
    built = CudaVersion.parse(str(row["built_with"])) if row.get("built_with") else None
    return built if built is not None and built.major == torch.cuda.major else torch.cuda


def _release_asset(
    target: Target, package: Row, row: Row, torch: Candidate, base: Candidate
) -> Candidate | None:
    """flash-attn: one asset per Python, torch line, CUDA major and C++ ABI, installed by URL."""
    abi = torch_cxx11_abi(target.kb, torch.public_text, torch.build)
    if torch.cuda is None or abi is None:
        return None  # no CPU wheels; an ABI gpuenv does not know is not guessed
    if target.python is None:
        return base.blocked_by(
            "unknown", "its wheel is chosen by Python version; give --python-version to pick it"
        )
    major, minor = target.python
    url = str(package["url_template"]).format(
        version=row["version"],
        cuda_major=torch.cuda.major,
        torch_line=_line(torch.public_text),
        abi="TRUE" if abi else "FALSE",
        py=f"{major}{minor}",
    )
    return _with(base, url=url, why=f"{base.why}; the release asset for Python {major}.{minor}")


def _find_links(
    package: Row, row: Row, torch: Candidate, base: Candidate, variant: str
) -> Candidate:
    """torch-scatter/torch-sparse: PyG's page of links for the torch line and variant; the
    version carries the build's local label (2.1.2+pt28cu128), so the pin picks it exactly."""
    line = _line(torch.public_text)
    page = str(package["url_template"]).format(torch_line=line, variant=variant)
    local = str(row.get("local", "")).format(tv=line.replace(".", ""), variant=variant)
    version = f"{base.version}+{local}" if local else base.version
    return _with(base, version=version, find_links=page)


def _variant_index(package: Row, row: Row, torch: Candidate, base: Candidate) -> Candidate:
    """xformers: the build for torch's variant on PyTorch's index of that variant; the package
    index holds the build of one variant (`default_variant`), the one a plain pin gets."""
    default = str(row.get("default_variant", ""))
    if torch.build == default and torch.index_url is None:
        return _with(base, why=f"{base.why}, from the package index")
    index = str(package["url_template"]).format(variant=torch.build)
    return _with(
        base,
        index_url=index,
        exclusive_index=bool(default),
        why=f"{base.why}, from PyTorch's {torch.build} index",
    )


def _mmcv(target: Target, torch: Candidate) -> list[Candidate]:
    """mmcv 2.x (mmcv-full 1.x is not planned): OpenMMLab's find-links folder per CUDA variant
    and torch line, the torch's own variant first, then others of its CUDA major."""
    platform = "windows" if target.os == "windows" else target.os
    out = []
    for row in mmcv_wheels(target.kb, torch.public_text, platform):
        variants = [str(v) for v in row["cuda_variants"]] + (["cpu"] if row.get("cpu") else [])
        for variant in _mmcv_variants(torch, variants):
            page = mmcv_find_links(target.kb, variant, torch.public_text)
            cuda = CudaVersion.parse(variant) if variant != "cpu" else None
            out.append(
                Candidate(
                    framework="mmcv",
                    name="mmcv",
                    version=str(row["mmcv"]),
                    build=variant,
                    cuda=cuda,
                    find_links=page,
                    platforms=(target.platform,),
                    why=f"mmcv {row['mmcv']}, OpenMMLab's {variant} wheel for torch "
                    f"{_line(torch.public_text)}",
                )
            )
    return out


def _mmcv_variants(torch: Candidate, variants: Sequence[str]) -> list[str]:
    if torch.cuda is None:
        return ["cpu"] if "cpu" in variants else []
    same = [v for v in variants if v == torch.build]
    major = [
        v
        for v in sorted(variants, reverse=True)
        if v != torch.build and v.startswith(f"cu{torch.cuda.major}") and len(v) >= 5
    ]
    return same + major


# ---- source builds ----------------------------------------------------------------------------


def source_build_candidates(target: Target, name: str, torch: Candidate) -> list[Candidate]:
    """The build from source of `name` against this torch, when the KB says how."""
    package = extension_package(target.kb, name)
    if package is None or torch.cuda is None:
        return []
    version = _source_version(target, name, package)
    min_torch = str(package["min_torch"]) if package.get("min_torch") else None
    candidate = Candidate(
        framework=name,
        name=name,
        version=version or "",
        build="source",
        cuda=torch.cuda,
        min_cc=ComputeCapability.parse(str(package["min_cc"])) if package.get("min_cc") else None,
        source_build=_recipe(target, name, package, torch, version),
        why=f"no prebuilt {name} wheel fits torch {torch.public_text} ({torch.build}): built "
        "from source against it",
    )
    if min_torch and sortable(torch.public_text) < sortable(min_torch):
        return [candidate.blocked_by("pairing", f"needs torch {min_torch} or newer to build")]
    return [candidate]


def _source_version(target: Target, name: str, package: Row) -> str | None:
    if package.get("source_version"):
        return str(package["source_version"])
    rows = extension_wheels(target.kb, name)
    if rows:
        return str(rows[0]["version"])
    if name == "mmcv":
        found = sorted({str(r["mmcv"]) for r in target.kb.rows("mmcv", "wheel")}, key=_vkey)
        return found[-1] if found else None
    return None


def _recipe(
    target: Target, name: str, package: Row, torch: Candidate, version: str | None
) -> SourceBuild:
    assert torch.cuda is not None
    requirement = f"{name}=={version}" if version else name
    command = str(package["build_command"]).format(requirement=requirement)
    clone = str(package["clone"]) if package.get("clone") else None
    env: list[tuple[str, str]] = [
        (k, v) for k, _, v in (str(e).partition("=") for e in package.get("build_env", ()))
    ]
    env += _arch_env(target, [str(e) for e in package["arch_env"]])
    env.append(("MAX_JOBS", MAX_JOBS))
    match = str(package["nvcc_match"])
    return SourceBuild(
        command=command,
        env=tuple(env),
        nvcc=torch.cuda.short,
        nvcc_match=match,
        toolkit=_toolkit(target, torch.cuda, match),
        toolkits_known=target.ctx.snapshot.origin != "declared",
        clone=clone,
        why=f"no prebuilt {name} wheel for torch {torch.public_text} ({torch.build})",
    )


def _arch_env(target: Target, names: Sequence[str]) -> list[tuple[str, str]]:
    """TORCH_CUDA_ARCH_LIST "8.6;9.0" and flash-attn's FLASH_ATTN_CUDA_ARCHS "86;90" for the
    target's GPUs (nothing when none is known: the build then targets the GPU it sees)."""
    ccs = target.ccs
    if not ccs:
        return []
    out = []
    for name in names:
        if name == "FLASH_ATTN_CUDA_ARCHS":
            out.append((name, ";".join(f"{c.major}{c.minor}" for c in ccs)))
        else:
            out.append((name, ";".join(f"{c.major}.{c.minor}" for c in ccs)))
    return out


def _toolkit(target: Target, cuda: CudaVersion, match: str) -> str | None:
    """The path of a toolkit in the snapshot the build can use (same major.minor first)."""
    found = []
    for toolkit in target.ctx.snapshot.toolkits:
        have = CudaVersion.parse(toolkit.toolkit_cuda or "")
        if have is None or have.major != cuda.major:
            continue
        exact = have.minor == cuda.minor
        if exact or match == "major":
            found.append((not exact, not toolkit.on_path, toolkit.path or have.short))
    return sorted(found)[0][2] if found else None


# ---- small helpers ----------------------------------------------------------------------------


def _with(base: Candidate, **changes: object) -> Candidate:
    from dataclasses import replace

    return replace(base, **changes)  # type: ignore[arg-type]


def _ccs(values: Sequence[object]) -> tuple[ComputeCapability, ...]:
    return tuple(c for c in (ComputeCapability.parse(str(v)) for v in values) if c)


def _text(value: object) -> str | None:
    return str(value) if value else None


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def extension_notes(plan: Plan) -> list[str]:
    """Say so where torch was moved back to get an extension's prebuilt wheel."""
    out = []
    for env in plan.envs:
        torch = env.package("torch")
        if torch is None:
            continue
        for package in env.packages:
            if package.companion_of != "torch" or package.framework not in EXTENSIONS:
                continue
            reason = f"no {package.framework} release pairs with it"
            newer = [r.candidate for r in torch.rejected if r.reason == reason]
            if newer and package.source_build is None:
                out.append(
                    f"torch {torch.public_version} was chosen, not {newer[0]}: "
                    f"{package.framework} has prebuilt wheels for this torch and none for the "
                    "newer ones. Ask for the newer torch (e.g. 'torch>="
                    f"{newer[0].split()[1]}') to build {package.framework} from source instead."
                )
    return out
