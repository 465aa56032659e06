"""CuPy and ONNX Runtime candidates.

CuPy ships one wheel package per CUDA major (cupy-cuda12x, cupy-cuda13x); it has no CPU build.
ONNX Runtime's GPU package is onnxruntime-gpu, built for one CUDA major per release; the CPU
package is onnxruntime. Where the wheels' extras pin NVIDIA's libraries the plan uses them;
otherwise the libraries must come from the system or another framework's wheels.
"""

from __future__ import annotations

from gpuenv.kb import Row
from gpuenv.kb.query.frameworks import onnxruntime_release
from gpuenv.plan import wheels
from gpuenv.plan.candidate import Candidate, variant_rank
from gpuenv.plan.floors import toolkit_floor, with_build_code
from gpuenv.plan.target import Target
from gpuenv.versions import CudaVersion, sortable

CUPY = "cupy"


def cupy_candidates(target: Target) -> list[Candidate]:
    found: list[Candidate] = []
    for row in target.kb.rows(CUPY, "package"):
        package = str(row["package"])
        for wheel in wheels.releases(target.kb, package):
            if _in_range(str(wheel["version"]), row):
                found.append(_cupy(target, row, wheel))
    unique = {c.name + c.version: c for c in found}
    ordered = sorted(
        unique.values(),
        key=lambda c: (wheels.newest_first(c.version), variant_rank(c, target)),
    )
    if not target.wants_gpu:
        return [c.blocked_by("gpu", "CuPy runs only on an NVIDIA GPU") for c in ordered[:1]]
    return ordered


def _in_range(version: str, row: Row) -> bool:
    key = sortable(version)
    low = sortable(str(row["cupy_min"]))
    high = sortable(str(row["cupy_max"])) if row.get("cupy_max") else None
    return low <= key and (high is None or key <= high)


def _cupy(target: Target, row: Row, wheel: Row) -> Candidate:
    cuda = CudaVersion.parse(str(row["cuda_min"]))
    major = int(row["cuda_major"])
    pins = wheels.pins(wheel)
    candidate = Candidate(
        framework="cupy",
        name=str(row["package"]),
        version=str(wheel["version"]),
        build=f"cuda{major}x",
        cuda=cuda,
        extras=("ctk",) if pins else (),
        min_cc=toolkit_floor(target, cuda),
        python_tags=wheels.tags(wheel),
        platforms=wheels.platforms(wheel),
        pins=pins,
        system_needs=()
        if pins
        else (
            f"the CUDA {major} libraries (a CUDA {major} toolkit, or "
            "the nvidia-* wheels another framework installs)",
        ),
        why=f"{row['package']} {wheel['version']}: CuPy for CUDA {major}.x",
    )
    return with_build_code(candidate, target, [candidate.name])


def onnxruntime_candidates(target: Target) -> list[Candidate]:
    out = []
    for wheel in wheels.releases(target.kb, "onnxruntime-gpu"):
        version = str(wheel["version"])
        if not target.wants_gpu:
            out.append(_ort_cpu(version))
            continue
        row = onnxruntime_release(target.kb, version)
        out.append(_ort_gpu(target, version, row, wheel))
    return out


def _ort_cpu(version: str) -> Candidate:
    return Candidate(
        framework="onnxruntime",
        name="onnxruntime",
        version=version,
        build="cpu",
        why=f"onnxruntime {version} (the CPU package)",
    )


def _ort_gpu(target: Target, version: str, row: Row | None, wheel: Row) -> Candidate:
    cuda = _built_with(_ort_cuda(row), wheel)
    pins = wheels.pins(wheel)
    cudnn = str(row["cudnn"]) if row and row.get("cudnn") else None
    candidate = Candidate(
        framework="onnxruntime",
        name="onnxruntime-gpu",
        version=version,
        build=f"cuda{cuda.major}" if cuda else "cuda",
        cuda=cuda,
        cudnn=cudnn,
        extras=("cuda", "cudnn") if pins else (),
        min_cc=toolkit_floor(target, cuda),
        python_tags=wheels.tags(wheel),
        platforms=wheels.platforms(wheel),
        pins=pins,
        system_needs=() if pins or row is None else (_ort_needs(str(row["cuda"]), cudnn),),
        why=f"onnxruntime-gpu {version}, built for CUDA {cuda.major if cuda else '?'}",
    )
    if cuda is None:
        return candidate.blocked_by("unknown", "its CUDA build is not in the knowledge base")
    return with_build_code(candidate, target, ["onnxruntime-gpu"])


def _built_with(major: CudaVersion | None, wheel: Row) -> CudaVersion | None:
    """The CUDA the wheel was built with (its build file, e.g. 12.8 for 1.26.0) where it is of
    the release's CUDA major: the driver then runs it natively or only under minor-version
    compatibility, which decides whether its PTX can be JIT-compiled."""
    built = CudaVersion.parse(str(wheel["build_cuda"])) if wheel.get("build_cuda") else None
    if major is None or built is None or built.major != major.major:
        return major
    return built


def _ort_cuda(row: Row | None) -> CudaVersion | None:
    if row is None:
        return None
    text = str(row["cuda"])
    return CudaVersion.parse(text if "." in text else f"{text}.0")


def _ort_needs(cuda: str, cudnn: str | None) -> str:
    return f"CUDA {cuda} and cuDNN {cudnn or '?'} libraries (system or nvidia-* wheels)"
