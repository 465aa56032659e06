"""JAX candidates: `jax[cudaNN]` pinned with jaxlib and the CUDA plugin of the same release (the
plugin's [with-cuda] extra brings the CUDA libraries as wheels). JAX has CUDA builds for Linux only;
on Windows it runs on the GPU under WSL2."""

from __future__ import annotations

from gpuenv.kb import Row
from gpuenv.kb.query.frameworks import jax_rows
from gpuenv.plan import wheels
from gpuenv.plan.candidate import Candidate, variant_rank
from gpuenv.plan.floors import cudnn_family, cudnn_pins, toolkit_floor, with_build_code
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion, sortable


def jax_candidates(target: Target) -> list[Candidate]:
    out: list[Candidate] = []
    for wheel in wheels.releases(target.kb, "jax"):
        version = str(wheel["version"])
        if not target.wants_gpu:
            out.append(_cpu_build(target, version))
            continue
        builds = [_gpu_build(target, version, row) for row in jax_rows(target.kb, version)]
        found = [b for b in builds if b is not None]
        out.extend(sorted(found, key=lambda c: variant_rank(c, target)))
    return out


def _cpu_build(target: Target, version: str) -> Candidate:
    jaxlib = _jaxlib_for(target, version)
    jaxlib_version = str(jaxlib["version"]) if jaxlib else version
    return Candidate(
        framework="jax",
        name="jax",
        version=version,
        build="cpu",
        python_tags=wheels.tags(jaxlib),
        platforms=wheels.platforms(jaxlib),
        companions=(("jaxlib", jaxlib_version, ()),) if jaxlib else (),
        why=f"jax {version} with jaxlib {jaxlib_version} (CPU)",
    )


def _jaxlib_for(target: Target, version: str) -> Row | None:
    """The jaxlib of a jax release: the one of the same version, else (a release of jax alone,
    such as 0.5.2) the newest jaxlib of its line before it, which is what it runs with: its
    files, not jax's pure-Python wheel, say which platforms and Pythons the pair serves."""
    line = sortable(version).release[:2]
    older = (
        row
        for row in wheels.releases(target.kb, "jaxlib")
        if sortable(str(row["version"])).release[:2] == line
        and sortable(str(row["version"])) <= sortable(version)
    )
    return next(older, None)


def _extra(row: Row) -> str | None:
    major = int(row["cuda_major"])
    extras = [str(e) for e in row.get("extras", [])]
    preferred = f"cuda{major}"
    if preferred in extras:
        return preferred
    return next((e for e in extras if "local" not in e), None)


def _gpu_build(target: Target, version: str, row: Row) -> Candidate | None:
    extra = _extra(row)
    major = int(row["cuda_major"])
    plugin_name = f"jax-cuda{major}-plugin"
    plugin = wheels.release(target.kb, plugin_name, version)
    if extra is None or plugin is None:
        return None
    cuda = CudaVersion.parse(str(row["cuda_min"]))
    candidate = Candidate(
        framework="jax",
        name="jax",
        version=version,
        build=extra,
        extras=(extra,),
        cuda=cuda,
        cudnn=str(row["cudnn_min"]) if row.get("cudnn_min") else None,
        min_cc=_min_cc(target, row, cuda),
        python_tags=wheels.tags(plugin),
        platforms=wheels.platforms(plugin),
        pins=wheels.pins(plugin),
        pins_known=bool(plugin.get("pins")),
        kb_pins=cudnn_pins(target, cuda, cudnn_family(row.get("cudnn_min"))),
        companions=_companions(target, version, plugin_name),
        why=f"jax {version} with the CUDA {major} plugin (CUDA ≥ {row['cuda_min']})",
    )
    candidate = with_build_code(candidate, target, [plugin_name, f"jax-cuda{major}-pjrt"])
    if target.os == "windows":
        return candidate.blocked_by(
            "windows", "JAX has no CUDA build for native Windows; it runs on the GPU under WSL2"
        )
    return candidate


def _min_cc(target: Target, row: Row, cuda: CudaVersion | None) -> ComputeCapability | None:
    listed = ComputeCapability.parse(str(row["min_cc"])) if row.get("min_cc") else None
    return listed or toolkit_floor(target, cuda)


def _companions(
    target: Target, version: str, plugin_name: str
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    out: list[tuple[str, str, tuple[str, ...]]] = []
    if wheels.release(target.kb, "jaxlib", version):
        out.append(("jaxlib", version, ()))
    out.append((plugin_name, version, ("with-cuda",)))
    return tuple(out)
