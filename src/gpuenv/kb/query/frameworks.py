"""Lookups over the curated framework tables: TensorFlow, JAX, CuPy, ONNX Runtime, mmcv, DJL, conda.

The PyTorch lookups live in `gpuenv.kb.query.torch` and are re-exported here. Every function is
pure and answers None (or an empty tuple) for what the knowledge base does not know.
"""

from __future__ import annotations

from gpuenv.kb.model import KnowledgeBase, Row
from gpuenv.kb.query._frameworks_util import in_range, minor_line, release_tuple
from gpuenv.kb.query.torch import (
    torch_arch_list,
    torch_arch_row,
    torch_default_variant,
    torch_find_links,
    torch_index_url,
    torch_release,
    torch_releases,
    torch_variants,
    torchaudio_for,
    torchvision_for,
)
from gpuenv.versions import CudaVersion

__all__ = [
    "conda_forge_builds",
    "conda_pytorch_builds",
    "conda_virtual_package",
    "cupy_package_for_cuda",
    "cupy_packages_for_cuda",
    "djl_default_pytorch",
    "djl_releases",
    "djl_setting",
    "jax_row",
    "jax_rows",
    "mmcv_find_links",
    "mmcv_wheels",
    "onnxruntime_builds",
    "onnxruntime_release",
    "tf_native_windows_gpu",
    "tf_release",
    "torch_arch_list",
    "torch_arch_row",
    "torch_default_variant",
    "torch_find_links",
    "torch_index_url",
    "torch_release",
    "torch_releases",
    "torch_variants",
    "torchaudio_for",
    "torchvision_for",
]

_TF_PLATFORMS = {
    "linux": "linux",
    "linux-x86_64": "linux",
    "linux-64": "linux",
    "windows": "windows",
    "windows-x86_64": "windows",
    "win32": "windows",
    "win-64": "windows",
}
_MMCV_PLATFORMS = {**_TF_PLATFORMS, "macos": "macos", "darwin": "macos", "osx-arm64": "macos"}
_UNBOUNDED = (10**9,)


# TensorFlow ---------------------------------------------------------------------------------


def tf_release(kb: KnowledgeBase, tf_version: str, platform: str = "linux") -> Row | None:
    """The tested GPU build configuration of a TensorFlow line ("2.15.1" -> the 2.15 row)."""
    line = minor_line(tf_version)
    plat = _TF_PLATFORMS.get(platform.lower())
    if line is None or plat is None:
        return None
    for row in kb.rows("tensorflow", "release"):
        if row["platform"] == plat and release_tuple(row["tensorflow"]) == line:
            return row
    return None


def tf_native_windows_gpu(kb: KnowledgeBase, tf_version: str) -> bool | None:
    """Whether this TensorFlow line has CUDA support on native Windows (2.10 was the last)."""
    line = minor_line(tf_version)
    rows = kb.rows("tensorflow", "windows_gpu")
    if line is None or not rows:
        return None
    last = release_tuple(rows[0]["last_native"])
    return last is not None and line <= last


def tf_runtime_codegen(kb: KnowledgeBase, tf_version: str) -> Row | None:
    """The row saying this TensorFlow line compiles its kernels at run time for the GPU it finds
    with its own CUDA (so a GPU that CUDA cannot compile for does not run), or None."""
    line = minor_line(tf_version)
    if line is None:
        return None
    for row in kb.rows("tensorflow", "runtime_codegen"):
        first = release_tuple(row["tensorflow_min"])
        if first is not None and line >= first:
            return row
    return None


# JAX ----------------------------------------------------------------------------------------


def jax_rows(kb: KnowledgeBase, jax_version: str) -> tuple[Row, ...]:
    """The rows covering this jax version, one per CUDA major, CUDA 12 first."""
    version = release_tuple(jax_version)
    if version is None:
        return ()
    rows = [
        row
        for row in kb.rows("jax", "release")
        if in_range(version, row["jax_min"], row.get("jax_max"))
    ]
    return tuple(sorted(rows, key=lambda row: int(row["cuda_major"])))


def jax_row(kb: KnowledgeBase, jax_version: str, cuda_major: int) -> Row | None:
    for row in jax_rows(kb, jax_version):
        if row["cuda_major"] == cuda_major:
            return row
    return None


# CuPy ---------------------------------------------------------------------------------------


def cupy_packages_for_cuda(
    kb: KnowledgeBase, cuda: CudaVersion, cupy_version: str | None = None
) -> tuple[Row, ...]:
    """Every CuPy wheel package built for this CUDA toolkit, newest CuPy support first; given a
    CuPy version ("11.5.0"), only the packages that release published."""
    rows = [row for row in kb.rows("cupy", "package") if _cupy_serves(row, cuda)]
    if cupy_version is not None:
        wanted = release_tuple(cupy_version)
        rows = [r for r in rows if wanted and in_range(wanted, r["cupy_min"], r.get("cupy_max"))]
    return tuple(sorted(rows, key=_cupy_recency, reverse=True))


def cupy_package_for_cuda(kb: KnowledgeBase, cuda: CudaVersion) -> str | None:
    """The package current CuPy releases ship for this CUDA (12.4 -> "cupy-cuda12x")."""
    rows = cupy_packages_for_cuda(kb, cuda)
    return str(rows[0]["package"]) if rows else None


def _cupy_serves(row: Row, cuda: CudaVersion) -> bool:
    if row["cuda_major"] != cuda.major:
        return False
    return in_range((cuda.major, cuda.minor), row["cuda_min"], row.get("cuda_max"))


def _cupy_recency(row: Row) -> tuple[tuple[int, ...], tuple[int, ...]]:
    newest = release_tuple(row.get("cupy_max")) or _UNBOUNDED
    return newest, release_tuple(row["cupy_min"]) or ()


# ONNX Runtime -------------------------------------------------------------------------------


def onnxruntime_builds(kb: KnowledgeBase, version: str) -> tuple[Row, ...]:
    """All onnxruntime-gpu builds of a minor line, the package-index build first."""
    line = minor_line(version)
    if line is None:
        return ()
    rows = [r for r in kb.rows("onnxruntime", "release") if release_tuple(r["onnxruntime"]) == line]
    return tuple(sorted(rows, key=lambda row: not row["pypi_default"]))


def onnxruntime_release(kb: KnowledgeBase, version: str) -> Row | None:
    """The onnxruntime-gpu build the package index serves for this version ("1.18.1")."""
    for row in onnxruntime_builds(kb, version):
        if row["pypi_default"]:
            return row
    return None


# mmcv ---------------------------------------------------------------------------------------


def mmcv_wheels(
    kb: KnowledgeBase, torch_version: str, platform: str = "linux", package: str = "mmcv"
) -> tuple[Row, ...]:
    """Prebuilt mmcv wheels for a torch line, newest mmcv first."""
    line = minor_line(torch_version)
    plat = _MMCV_PLATFORMS.get(platform.lower())
    if line is None or plat is None:
        return ()
    rows = [
        row
        for row in kb.rows("mmcv", "wheel")
        if row["package"] == package
        and row["platform"] == plat
        and release_tuple(row["torch"]) == line
    ]
    return tuple(sorted(rows, key=lambda row: release_tuple(row["mmcv"]) or (), reverse=True))


def mmcv_find_links(kb: KnowledgeBase, variant: str, torch_version: str) -> str | None:
    """The -f URL of OpenMMLab's wheel folder for a variant ("cu121" or "cpu") and torch line."""
    kb_file = kb.files.get("mmcv")
    line = minor_line(torch_version)
    template = kb_file.meta.get("find_links_template") if kb_file else None
    if not isinstance(template, str) or line is None:
        return None
    return template.format(variant=variant, torch=f"{line[0]}.{line[1]}")


# DJL ----------------------------------------------------------------------------------------


def djl_releases(kb: KnowledgeBase, djl_version: str) -> tuple[Row, ...]:
    """The PyTorch native versions a DJL pytorch-engine version can load."""
    version = release_tuple(djl_version)
    if version is None:
        return ()
    return tuple(r for r in kb.rows("djl", "release") if release_tuple(r["djl"]) == version)


def djl_default_pytorch(kb: KnowledgeBase, djl_version: str) -> str | None:
    for row in djl_releases(kb, djl_version):
        if row.get("default"):
            return str(row["pytorch"])
    return None


def djl_setting(kb: KnowledgeBase, name: str) -> Row | None:
    for row in kb.rows("djl", "setting"):
        if row["name"] == name:
            return row
    return None


# conda --------------------------------------------------------------------------------------


def conda_virtual_package(kb: KnowledgeBase, name: str) -> Row | None:
    for row in kb.rows("conda", "virtual_package"):
        if row["name"] == name:
            return row
    return None


def conda_pytorch_builds(kb: KnowledgeBase, platform: str | None = None) -> tuple[Row, ...]:
    """The conda-forge pytorch CUDA builds recorded, optionally for one conda platform."""
    rows = kb.rows("conda", "pytorch_build")
    return tuple(row for row in rows if platform is None or row["platform"] == platform)


def conda_forge_builds(
    kb: KnowledgeBase, package: str, platform: str | None = None
) -> tuple[Row, ...]:
    """conda-forge builds of tensorflow, jaxlib or cupy recorded (CUDA and CPU), newest first,
    optionally for one conda platform ("linux-64")."""
    rows = [
        row
        for row in kb.rows("conda", "forge_build")
        if row["package"] == package and (platform is None or row["platform"] == platform)
    ]
    return tuple(sorted(rows, key=lambda row: release_tuple(row["version"]) or (), reverse=True))
