"""Facts judged from other facts and the knowledge base, for the rules of patterns.toml to look at:
whether the release a text asks for has a wheel for the reporter's Python and platform (or its
package has wheels for some OSes only, for the Linux the text names, or for the Mac or Windows
on ARM it names), whether the cuDNN a program could not load is of another major version than
the one installed, whether an older cuDNN was loaded though a newer one is installed, whether
pip's list of the releases it found says the platform (offered.py), whether the ONNX Runtime
release named is built for another cuDNN major than the one installed, whether the user-space
driver and the kernel module are of different versions, whether every release pip found is newer
than the version pinned, whether the page of PyTorch's builds pip read lists the local build
asked for, whether nvcc rejected an architecture a CUDA toolkit the text names supports, whether
a build found a CUDA toolkit beside a third one the text names, whether the GPU named already has
the last driver its architecture gets (ceiling.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuenv.explain.ceiling import gpu_at_driver_ceiling, gpu_before_maxwell
from gpuenv.explain.model import Fact
from gpuenv.explain.offered import platform_from_versions
from gpuenv.explain.served import (
    arm_served,
    asked,
    linux_served,
    platform_unserved,
    platforms_few,
    python_unserved,
)
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.query._frameworks_util import parsed_version, release_tuple
from gpuenv.kb.query.cuda import toolkit_sass_targets
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion, cudnn_from_code

_CUDNN_SONAME = re.compile(r"(?:libcudnn\w*\.so\.|cudnn\w*?64_)(\d+)", re.IGNORECASE)


def judged(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> dict[str, str]:
    out = {}
    if python_unserved(facts, snapshot, kb):
        out["python_unserved"] = "true"
    if platform_from_versions(facts, snapshot, kb):
        out["platform_from_versions"] = "true"
    if "platform_from_versions" in out or platform_unserved(facts, snapshot, kb):
        out["platform_unserved"] = "true"
    if platforms_few(facts, snapshot, kb):
        out["platforms_few"] = "true"
    if linux_served(facts, snapshot, kb):
        out["linux_served"] = "true"
    if arm_served(facts, snapshot, kb):
        out["arm_served"] = "true"
    if cudnn_other_major(facts):
        out["cudnn_other_major"] = "true"
    if ort_cudnn_other_major(facts, kb):
        out["ort_cudnn_other_major"] = "true"
    if driver_versions_differ(facts):
        out["driver_versions_differ"] = "true"
    if client_driver_branch_newer(facts):
        out["client_driver_branch_newer"] = "true"
    if pin_older_than_offered(facts):
        out["pin_older_than_offered"] = "true"
    if cudnn_shadowed(facts):
        out["cudnn_shadowed"] = "true"
    if local_build_listed(facts):
        out["local_build_listed"] = "true"
    if nvcc_older_than_named(facts, kb):
        out["nvcc_older_than_named"] = "true"
    if third_cuda_named(facts):
        out["third_cuda_named"] = "true"
    if gpu_at_driver_ceiling(facts, snapshot, kb):
        out["gpu_at_driver_ceiling"] = "true"
    if gpu_before_maxwell(facts, snapshot, kb):
        out["gpu_before_maxwell"] = "true"
    if only_amd_gpu(facts):
        out["only_amd_gpu"] = "true"
    return out


# facts that only an NVIDIA GPU or driver gives
_NVIDIA_FACTS = frozenset({"gpu", "cc", "sm", "driver_version", "driver_max_cuda"})


def only_amd_gpu(facts: Sequence[Fact]) -> bool:
    """The text names an AMD GPU and nothing of an NVIDIA one (no NVIDIA GPU model, compute
    capability or driver): a laptop with a Radeon iGPU beside a named GeForce is not one."""
    names = {f.name for f in facts}
    return "amd_gpu_named" in names and not names & _NVIDIA_FACTS


def nvcc_older_than_named(facts: Sequence[Fact], kb: KnowledgeBase) -> bool:
    """nvcc says it does not support a GPU architecture that a CUDA toolkit the text names can
    compile for (compute_86 with CUDA 11.1 installed): the nvcc that ran is another, older one
    found first. A toolkit archs.toml does not cover says nothing."""
    rejected = {
        cc for f in facts if f.name == "arch_rejected" and (cc := ComputeCapability.parse(f.value))
    }
    return any(rejected & toolkit_sass_targets(kb, cuda) for cuda in _cudas(facts, "cuda_named"))


def third_cuda_named(facts: Sequence[Fact]) -> bool:
    """A build found one CUDA toolkit and torch was built for another, and the text names a
    third one (CUDA 11.4 installed, while the build found 10.1 for a torch built with 11.3): the
    toolkit the build found is not the one installed for it but another, found first. A
    driver's CUDA is not a toolkit."""

    def versions(name: str) -> set[str]:
        return {cuda.short for cuda in _cudas(facts, name)}

    found, built = versions("toolkit_cuda"), versions("torch_cuda")
    if not found or not built:
        return False
    return bool(versions("cuda_named") - found - built - versions("driver_max_cuda"))


def _cudas(facts: Sequence[Fact], name: str) -> set[CudaVersion]:
    """The CUDA versions the facts of this name give."""
    return {cuda for f in facts if f.name == name and (cuda := CudaVersion.parse(f.value))}


def local_build_listed(facts: Sequence[Fact]) -> bool:
    """The text asks for a local build (+cpu, +cu113) and pip read a page of PyTorch's builds
    that lists it: the page of every build (torch_stable.html, an LTS page) or the page of the
    builds of that label (cu113/torch_stable.html)."""
    _, _, label = asked(facts)
    if not label:
        return False
    for page in (f.value for f in facts if f.name == "torch_links"):
        folder = page.rpartition("/")[0]
        if not folder or folder.startswith("lts/") or folder.split("/")[-1] == label:
            return True
    return False


def pin_older_than_offered(facts: Sequence[Fact]) -> bool:
    """pip found releases of the package, every one newer than the version pinned: the old
    release has no wheel for the (newer) Python pip runs on. A pinned nightly (.devN) is not
    judged: the index keeps only recent nightlies."""
    offered = [
        version
        for f in facts
        if f.name == "versions_offered"
        for item in f.value.split(",")
        if (version := parsed_version(item.strip())) is not None
    ]
    pins = {
        version
        for f in facts
        if f.name == "package_version" and (version := parsed_version(f.value)) is not None
    }
    if not offered or len(pins) != 1:
        return False
    pin = pins.pop()
    if pin.is_devrelease:
        return False
    return all(version.release > pin.release for version in offered)


def driver_versions_differ(facts: Sequence[Fact]) -> bool:
    """The text names a user-space driver (libcuda, NVML) and a kernel module of different
    versions (compared as major.minor: 384.130 and 384.130.0 are one version)."""
    client, kernel = (
        {DriverVersion(v.parts[:2]) for v in _drivers(facts, name)}
        for name in ("client_driver_version", "kernel_module_version")
    )
    return bool(client and kernel and client != kernel)


def client_driver_branch_newer(facts: Sequence[Fact]) -> bool:
    """The user-space driver named (libcuda, the DSO) is of a newer branch than every kernel
    module named (460.73 over 455.32): a CUDA forward-compat libcuda, not a driver's own
    library of another build (440.33 beside 440.36)."""
    client, kernel = (
        {v.branch for v in _drivers(facts, name)}
        for name in ("client_driver_version", "kernel_module_version")
    )
    return bool(client and kernel) and min(client) > max(kernel)


def _drivers(facts: Sequence[Fact], name: str) -> set[DriverVersion]:
    """The driver versions the text names as `name` (client_driver_version, ...)."""
    return {v for f in facts if f.name == name and (v := DriverVersion.parse(f.value)) is not None}


def cudnn_other_major(facts: Sequence[Fact]) -> bool:
    """A cuDNN library of major N could not be loaded (or a program says it requires cuDNN N)
    while the text says cuDNN M (M != N) is installed: the wrong major, not a missing cuDNN."""
    wanted = {
        m.group(1)
        for f in facts
        if f.name == "missing_library" and (m := _CUDNN_SONAME.search(f.value))
    } | {f.value for f in facts if f.name == "cudnn_wanted"}
    installed = _cudnn_majors(facts)
    return bool(wanted and installed and not wanted & installed)


def ort_cudnn_other_major(facts: Sequence[Fact], kb: KnowledgeBase) -> bool:
    """Every build of the ONNX Runtime release the text names (of the CUDA major it names, where
    it names one: its package's name, else the CUDA toolkit or runtime; else the build the
    package index serves) is built for another cuDNN major than the one the text says is
    installed."""
    installed = _cudnn_majors(facts)
    versions = {f.value for f in facts if f.name == "onnxruntime_version"}
    if not installed or len(versions) != 1:
        return False
    release = ".".join(versions.pop().split(".")[:2])
    cuda = {f.value for f in facts if f.name == "onnxruntime_cuda"} or {
        f.value.split(".")[0] for f in facts if f.name in ("toolkit_cuda", "cuda_runtime")
    }
    builds = [
        row
        for row in kb.rows("onnxruntime", "release")
        if row["onnxruntime"] == release and (not cuda or str(row.get("cuda_major")) in cuda)
    ]
    if not cuda and any(row.get("pypi_default") for row in builds):
        builds = [row for row in builds if row.get("pypi_default")]  # what pip installs
    # a build whose cuDNN depends on the patch release (1.18 for CUDA 12) is not judged
    if not builds or any(not row.get("cudnn") for row in builds):
        return False
    wanted = {str(row["cudnn"]).split(".")[0] for row in builds}
    return not wanted & installed


def cudnn_shadowed(facts: Sequence[Fact]) -> bool:
    """The cuDNN loaded is older than the one the build was compiled with, and the text names a
    newer cuDNN of the same major than that one (7.6.5 for a build of 7.6.0: installed, since
    a build names only its own version): another, older copy is found first. TF 1.x writes
    versions as 7103 (7.1.3)."""

    def versions(name: str) -> set[tuple[int, ...]]:
        return {v for f in facts if f.name == name and (v := _cudnn_tuple(f.value))}

    loaded, compiled = versions("cudnn_loaded"), versions("cudnn_compiled")
    if len(loaded) != 1 or len(compiled) != 1:
        return False
    built, found = _padded(compiled.pop()), _padded(loaded.pop())
    return found < built and any(
        len(v) >= 2 and v[0] == built[0] and _padded(v) > built for v in versions("cudnn_version")
    )


def _padded(version: tuple[int, ...]) -> tuple[int, ...]:
    return (*version, 0, 0, 0)[:3]


def _cudnn_tuple(text: str) -> tuple[int, ...] | None:
    """7.6.5 -> (7, 6, 5); an integer version (TF 1.x's 7103, JAX's 90100) as cuDNN counts it;
    None when it is no version."""
    if re.fullmatch(r"\d{4,6}", text):
        return release_tuple(cudnn_from_code(int(text)))
    return release_tuple(text)


def _cudnn_majors(facts: Sequence[Fact]) -> set[str]:
    return {
        f.value.split(".")[0] for f in facts if f.name == "cudnn_version" and f.value[:1].isdigit()
    }
