"""TensorFlow candidates. On Linux, from 2.14 the [and-cuda] extra brings the CUDA libraries as
wheels; older releases need CUDA and cuDNN on the system. On native Windows the last GPU release
is 2.10 (CUDA 11.2, cuDNN 8.1 from the system); later ones run on the GPU only under WSL2."""

from __future__ import annotations

from dataclasses import replace

from gpuenv.kb import Row
from gpuenv.kb.query.frameworks import tf_release, tf_runtime_codegen
from gpuenv.plan import wheels
from gpuenv.plan.candidate import Candidate
from gpuenv.plan.floors import cudnn_family, cudnn_pins, toolkit_floor, with_build_code
from gpuenv.plan.target import Target
from gpuenv.versions import CudaVersion

SUBJECT = "tensorflow"


def tensorflow_candidates(target: Target) -> list[Candidate]:
    os_name = "windows" if target.os == "windows" else "linux"
    out = []
    for version, wheel in _versions(target, os_name):
        # a line with no Windows row is described by its Linux build (what WSL2 would run)
        row = tf_release(target.kb, version, os_name) or tf_release(target.kb, version, "linux")
        if target.wants_gpu:
            out.append(_gpu_build(target, version, row, wheel, os_name))
        else:
            out.append(_cpu_build(version, row, wheel))
    return out


def _versions(target: Target, os_name: str) -> list[tuple[str, Row | None]]:
    """Releases on the package index, then older lines the tested-configuration table lists."""
    found: list[tuple[str, Row | None]] = [
        (str(w["version"]), w) for w in wheels.releases(target.kb, "tensorflow")
    ]
    lines = {_line(v) for v, _ in found}
    for row in target.kb.rows(SUBJECT, "release"):
        line = str(row["tensorflow"])
        if row["platform"] == os_name and line not in lines:
            found.append((f"{line}.0", None))
            lines.add(line)
    return found


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _base(version: str, row: Row | None, wheel: Row | None) -> Candidate:
    python = (str(row["python_min"]), str(row["python_max"])) if row and not wheel else None
    return Candidate(
        framework="tensorflow",
        name="tensorflow",
        version=version,
        build="cpu",
        python_tags=wheels.tags(wheel),
        python_range=python or (None, None),
        platforms=wheels.platforms(wheel),
        why=f"tensorflow {version} (runs on the CPU here)",
    )


def _cpu_build(version: str, row: Row | None, wheel: Row | None) -> Candidate:
    return _base(version, row, wheel)


def _gpu_build(
    target: Target, version: str, row: Row | None, wheel: Row | None, os_name: str
) -> Candidate:
    cuda = CudaVersion.parse(str(wheel["cuda"])) if wheel and wheel.get("cuda") else None
    cuda = cuda or (CudaVersion.parse(str(row["cuda"])) if row else None)
    cudnn = str(row["cudnn"]) if row else None
    and_cuda = bool(row and row.get("and_cuda")) and row is not None and row["platform"] == "linux"
    candidate = replace(
        _base(version, row, wheel),
        build="and-cuda" if and_cuda else "cuda",
        cuda=cuda,
        cudnn=str(wheel["cudnn"]) if wheel and wheel.get("cudnn") else cudnn,
        extras=("and-cuda",) if and_cuda else (),
        pins=wheels.pins(wheel) if and_cuda else (),
        pins_known=bool(wheel and wheel.get("pins")) or not and_cuda,
        kb_pins=cudnn_pins(target, cuda, cudnn_family(cudnn)) if and_cuda else (),
        min_cc=toolkit_floor(target, cuda),
        strict_ptx=True,
        compiles_for_gpu=tf_runtime_codegen(target.kb, version) is not None,
        system_needs=() if and_cuda else _system(cuda, cudnn),
        why=_why(version, and_cuda, cuda),
    )
    return _blocked(with_build_code(candidate, target, ["tensorflow"]), row, os_name)


def _blocked(candidate: Candidate, row: Row | None, os_name: str) -> Candidate:
    if os_name == "windows" and not (row and row.get("platform") == "windows"):
        return candidate.blocked_by(
            "windows",
            "no GPU support on native Windows after TensorFlow 2.10; on Windows it runs on the "
            "GPU only under WSL2",
        )
    if row is None or candidate.cuda is None:
        return candidate.blocked_by("unknown", "its CUDA build is not in the knowledge base")
    return candidate


def _system(cuda: CudaVersion | None, cudnn: str | None) -> tuple[str, ...]:
    if cuda is None:
        return ()
    return (f"CUDA {cuda.short} and cuDNN {cudnn or '?'} installed on the system",)


def _why(version: str, and_cuda: bool, cuda: CudaVersion | None) -> str:
    shown = cuda.short if cuda else "?"
    if and_cuda:
        return f"tensorflow {version} with [and-cuda]: CUDA {shown} libraries as wheels"
    return f"tensorflow {version}, tested with CUDA {shown}"
