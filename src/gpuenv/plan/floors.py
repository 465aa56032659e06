"""Lower bounds on the GPUs a build can serve when its architecture list is unknown: a build made
with CUDA X holds no code for GPUs older than CUDA X can compile for."""

from __future__ import annotations

from gpuenv.kb.query.cuda import toolkit_sass_targets
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion


def toolkit_floor(target: Target, cuda: CudaVersion | None) -> ComputeCapability | None:
    """The oldest compute capability CUDA `cuda` compiles for; None when unknown."""
    if cuda is None:
        return None
    targets = [t for t in toolkit_sass_targets(target.kb, cuda) if not t.suffix]
    return min(targets) if targets else None
