"""Where candidates come from, per framework and installer: wheels (pip, uv, docker), conda-forge
(conda, mamba, pixi), NVIDIA's Jetson wheels on a Jetson. Each list is in preference order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from gpuenv.plan.candidate import Candidate
from gpuenv.plan.extensions import EXTENSIONS
from gpuenv.plan.model import CONDA_LIKE
from gpuenv.plan.target import Target

Generator = Callable[[Target], list[Candidate]]
DependentGenerator = Callable[[Target, Mapping[str, Candidate]], Sequence[Candidate]]


def _companion(name: str, target: Target, chosen: Mapping[str, Candidate]) -> Sequence[Candidate]:
    torch = chosen.get("torch")
    if torch is not None and torch.conda is not None:
        from gpuenv.plan.conda import conda_companions

        return conda_companions(target, name, torch)
    if torch is not None and torch.build == "jetson":
        from gpuenv.plan.jetson import jetson_companions

        return jetson_companions(target, name, torch)
    from gpuenv.plan.torch import companion_candidates

    return companion_candidates(target, name, chosen)


def _extension(name: str, target: Target, chosen: Mapping[str, Candidate]) -> Sequence[Candidate]:
    from gpuenv.plan.extensions import extension_candidates

    return extension_candidates(target, name, chosen)


# Frameworks whose candidates depend on the torch picked before them.
DEPENDENTS: Mapping[str, DependentGenerator] = {
    "torchvision": partial(_companion, "torchvision"),
    "torchaudio": partial(_companion, "torchaudio"),
    **{name: partial(_extension, name) for name in EXTENSIONS},
}


def candidates_for(framework: str, target: Target, installer: str) -> list[Candidate]:
    if installer in CONDA_LIKE:
        from gpuenv.plan.conda import FORGE_PACKAGES, conda_candidates

        builds = conda_candidates(target, framework)
        if builds is not None and framework in FORGE_PACKAGES:
            # conda-forge's builds first; the package index's wheels (a pip section) only where
            # none of them fits (a Python or a driver conda-forge does not build for)
            return [*builds, *wheel_candidates(framework, target)]
        if builds is not None:
            return builds
    return wheel_candidates(framework, target)


def wheel_candidates(framework: str, target: Target) -> list[Candidate]:
    """Wheels: NVIDIA's Jetson builds on a Jetson, the package index's (and PyTorch's) else."""
    if target.jetson:
        from gpuenv.plan.jetson import jetson_candidates

        return jetson_candidates(target, framework)
    return _wheel_generators()[framework](target)


def _wheel_generators() -> dict[str, Generator]:
    from gpuenv.plan.jax import jax_candidates
    from gpuenv.plan.others import cupy_candidates, onnxruntime_candidates
    from gpuenv.plan.tensorflow import tensorflow_candidates
    from gpuenv.plan.torch import torch_candidates

    return {
        "torch": torch_candidates,
        "tensorflow": tensorflow_candidates,
        "jax": jax_candidates,
        "cupy": cupy_candidates,
        "onnxruntime": onnxruntime_candidates,
    }
