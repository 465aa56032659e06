"""Docker plans: the base image is NVIDIA's CUDA image of the newest release whose
NVIDIA_REQUIRE_CUDA the host driver satisfies (nvidia-container-cli refuses the container
otherwise), on the Ubuntu release whose Python the env uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuenv.errors import GpuenvError
from gpuenv.kb import Row
from gpuenv.kb.query.containers import image_cudnn, image_tag, parse_require_cuda
from gpuenv.plan.model import Container, EnvPlan, PackageChoice, Rejection
from gpuenv.plan.target import Target, python_tuple
from gpuenv.versions import CudaVersion

IMAGE = "nvidia/cuda"
_ARCH = {"linux-x86_64": "x86_64", "linux-aarch64": "sbsa"}


@dataclass(frozen=True)
class ImageChoice:
    cuda: CudaVersion
    distro: str  # "ubuntu2204" (the folder name); tags write "ubuntu22.04"
    python: str | None
    require_cuda: str
    why: str
    rejected: tuple[Rejection, ...]


def plan_container(target: Target) -> tuple[ImageChoice, Target]:
    """The image for the host, and the target as seen inside it (its Python)."""
    if target.jetson:
        raise GpuenvError(
            "unsupported",
            "a Docker plan for Jetson needs an L4T image, which the knowledge base does not list",
            hints=("plan with --installer pip for NVIDIA's Jetson wheels",),
        )
    arch = _ARCH.get(target.platform)
    if arch is None:
        raise GpuenvError(
            "unsupported",
            f"NVIDIA's CUDA images run on Linux hosts; the target is {target.platform}",
            hints=("use --platform linux-x86_64 (or run Docker under WSL2 on Windows)",),
        )
    choice = _choose(target, arch)
    python = python_tuple(choice.python)
    inside = target.with_python(python) if python else target
    return choice, inside


def _choose(target: Target, arch: str) -> ImageChoice:
    rejected: list[Rejection] = []
    for row in _image_rows(target, arch):
        cuda = CudaVersion.parse(str(row["cuda"]))
        if cuda is None:
            continue
        reason = _refused(target, str(row["require_cuda"]), cuda)
        label = f"{IMAGE}:{cuda}"
        if reason:
            rejected.append(Rejection("docker", label, "driver", reason))
            continue
        distro, python = _distro(target, row)
        why = _why(target, cuda)
        return ImageChoice(cuda, distro, python, str(row["require_cuda"]), why, tuple(rejected))
    raise GpuenvError(
        "no-image",
        f"no NVIDIA CUDA image in the knowledge base runs on driver {target.driver}",
        hints=("upgrade the driver, or plan with --installer pip",),
    )


def _image_rows(target: Target, arch: str) -> list[Row]:
    rows = [r for r in target.kb.rows("containers", "cuda_image") if r["arch"] in (arch, "any")]
    return sorted(
        rows, key=lambda r: CudaVersion.parse(str(r["cuda"])) or CudaVersion(0, 0), reverse=True
    )


def _refused(target: Target, require: str, cuda: CudaVersion) -> str | None:
    if target.driver is None:
        return None
    parsed = parse_require_cuda(require)
    allowed = parsed.allows(driver_cuda=target.driver_max_cuda, driver=target.driver)
    if allowed is True:
        return None
    shown = target.driver_max_cuda.short if target.driver_max_cuda else "?"
    how = "refuses it" if allowed is False else "may refuse it (depends on the GPU brand)"
    return (
        f"NVIDIA_REQUIRE_CUDA wants cuda>={cuda.short}; driver {target.driver} reports CUDA "
        f"{shown}, so nvidia-container-cli {how}"
    )


def _why(target: Target, cuda: CudaVersion) -> str:
    if target.driver is None:
        return f"the newest CUDA image ({cuda}); no host driver given to check it against"
    return f"the newest CUDA image whose NVIDIA_REQUIRE_CUDA driver {target.driver} satisfies"


def ubuntu_pythons(target: Target) -> dict[str, str]:
    """Ubuntu release -> its python3, as the Jetson table records them ("22.04" -> "3.10")."""
    return {str(r["ubuntu"]): str(r["python"]) for r in target.kb.rows("jetson", "jetpack")}


def _distro(target: Target, row: Row) -> tuple[str, str | None]:
    pythons = ubuntu_pythons(target)
    distros = sorted((str(d) for d in row["distros"]), reverse=True)
    for distro in distros:
        python = pythons.get(_dotted(distro))
        if target.python_text and python == target.python_text:
            return distro, python
    newest = distros[0]
    return newest, pythons.get(_dotted(newest))


def _dotted(distro: str) -> str:
    """'ubuntu2204' -> '22.04'."""
    digits = distro.removeprefix("ubuntu")
    return f"{digits[:2]}.{digits[2:]}" if len(digits) == 4 and digits.isdigit() else digits


def finish_container(target: Target, choice: ImageChoice, envs: Sequence[EnvPlan]) -> Container:
    """The image tag: 'base' when the wheels bring their CUDA libraries; when a package needs
    CUDA and cuDNN from the system, an image that carries the ones it was built for (TensorFlow
    2.13 needs CUDA 11.x with cuDNN 8: a CUDA 12 image does not load it)."""
    needs = [p for env in envs[:1] for p in env.packages if p.system_needs and p.cuda]
    cuda, require, flavor, why = choice.cuda, choice.require_cuda, "base", choice.why
    if needs:
        found = _system_image(target, choice.distro, needs)
        if found is not None:
            cuda, require, flavor = found
            shown = ", ".join(f"{p.name} (CUDA {p.cuda}, cuDNN {p.cudnn or '?'})" for p in needs)
            why = f"{why}, with the CUDA and cuDNN that {shown} needs from the system"
        else:
            why = (
                f"{why}; no NVIDIA CUDA image this driver runs carries the CUDA and cuDNN that "
                + ", ".join(p.name for p in needs)
                + " needs: install them in the image yourself"
            )
    os_tag = "ubuntu" + _dotted(choice.distro)
    tag = image_tag(target.kb, str(cuda), flavor, os_tag)
    image = f"{IMAGE}:{tag}" if tag else f"{IMAGE}:{cuda}-{flavor}-{os_tag}"
    return Container(
        image=image,
        cuda=cuda.short,
        distro=os_tag,
        python=choice.python,
        require_cuda=require,
        why=why,
        rejected=choice.rejected,
    )


def _system_image(
    target: Target, distro: str, needs: Sequence[PackageChoice]
) -> tuple[CudaVersion, str, str] | None:
    """The newest image the driver runs, on the env's distro, whose CUDA is of each package's
    major (and not older) and whose cuDNN major is the one each package was built with:
    (its CUDA, its NVIDIA_REQUIRE_CUDA, the flavor part of its tag)."""
    arch = _ARCH.get(target.platform, "x86_64")
    for row in _image_rows(target, arch):
        cuda = CudaVersion.parse(str(row["cuda"]))
        found = image_cudnn(target.kb, str(row["cuda"]), arch, distro) if cuda else None
        major = _major(found[0]) if found else None
        if cuda is None or major is None or distro not in [str(d) for d in row["distros"]]:
            continue
        if _refused(target, str(row["require_cuda"]), cuda) or not all(
            _serves(cuda, major, p) for p in needs
        ):
            continue
        return cuda, str(row["require_cuda"]), "cudnn-runtime"
    return None


def _major(version: str) -> int | None:
    head = version.split(".")[0]
    return int(head) if head.isdigit() else None


def _serves(cuda: CudaVersion, cudnn_major: int, package: PackageChoice) -> bool:
    wanted = CudaVersion.parse(package.cuda)
    if wanted is None or cuda.major != wanted.major or cuda.minor < wanted.minor:
        return False
    return not package.cudnn or package.cudnn.split(".")[0] == str(cudnn_major)


def with_python_note(container: Container, wanted: str | None) -> tuple[str, ...]:
    if wanted and container.python and wanted != container.python:
        return (
            f"The image's Python is {container.python} ({container.distro}); no NVIDIA CUDA "
            f"image of that release ships Python {wanted}.",
        )
    return ()
