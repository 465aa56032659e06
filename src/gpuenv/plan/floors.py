"""The GPU code of a build: read from its wheel when the knowledge base has it (binaries.toml);
otherwise lower bounds on the GPUs it can serve: a build made with CUDA X holds no code for GPUs
older than CUDA X can compile for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuenv.kb.query.binaries import INDEX, binding_code
from gpuenv.kb.query.cuda import pip_package, toolkit_sass_targets
from gpuenv.plan.candidate import Candidate
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion


def toolkit_floor(target: Target, cuda: CudaVersion | None) -> ComputeCapability | None:
    """The oldest compute capability CUDA `cuda` compiles for; None when unknown."""
    if cuda is None:
        return None
    targets = [t for t in toolkit_sass_targets(target.kb, cuda) if not t.suffix]
    return min(targets) if targets else None


def cudnn_pins(target: Target, cuda: CudaVersion | None, spec: str | None) -> tuple[str, ...]:
    """'nvidia-cudnn-cu13==9.24.0.43' for a cuDNN a curated row names (spec '==9.24.0.43' or
    '>=9.8,<10'): what the build's wheels ask of the cuDNN wheel, for the joint check."""
    if cuda is None or not spec:
        return ()
    row = pip_package(target.kb, "cudnn", cuda.major)
    return (f"{row['package']}{spec}",) if row else ()


def cudnn_family(version: object) -> str | None:
    """'>=9.8,<10': at least this cuDNN, within its major (cuDNN keeps its ABI within a major)."""
    text = str(version or "").strip()
    major = text.split(".")[0]
    return f">={text},<{int(major) + 1}" if major.isdigit() else None


def with_build_code(
    candidate: Candidate, target: Target, packages: Sequence[str], variant: str = INDEX
) -> Candidate:
    """The candidate with the SASS/PTX lists read from its wheels, when the knowledge base has
    them (for several libraries of one build, the one serving the fewest GPUs)."""
    if candidate.cuda is None:
        return candidate
    version = candidate.version.split("+")[0]
    code = binding_code(target.kb, packages, version, variant, target.platform)
    if code is None:
        return candidate
    return replace(
        candidate,
        sass=tuple(sorted(code.sass)),
        ptx=tuple(sorted(code.ptx)),
        ptx_cuda=code.cuda or candidate.cuda,
    )
