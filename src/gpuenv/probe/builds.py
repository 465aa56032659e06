"""How each framework was built, from what the target script read: torch/version.py, TF's
build_info.py, version labels like `+cu121`, nvidia-* pins, plugin distributions. Pure."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuenv.facts import DistributionFacts, FrameworkBuild


# Tolerant readers of the JSON document: a wrong type counts as absent.
def as_mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_mappings(value: object) -> tuple[Mapping[str, Any], ...]:
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()


def get_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) else None


def as_strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


@dataclass(frozen=True)
class FrameworkRecord:
    """One framework record of the document, with the distributions it refers to."""

    name: str
    location: str | None
    dists: tuple[DistributionFacts, ...]  # the framework's own distributions in this site dir
    site_dists: tuple[DistributionFacts, ...]  # everything in this site dir
    files: Mapping[str, Mapping[str, Any]]  # "torch/version.py" -> the literal values it holds
    problems: tuple[str, ...]
    binaries: tuple[str, ...]  # every binary candidate of the environment

    @property
    def dist(self) -> DistributionFacts | None:
        return self.dists[0] if self.dists else None

    @property
    def requires(self) -> tuple[str, ...]:
        return self.dist.requires if self.dist else ()

    def site_dist(self, name: str) -> DistributionFacts | None:
        return next((d for d in self.site_dists if _normalize(d.name) == name), None)


@dataclass(frozen=True)
class _Variant:
    """What a local version label says: `+cu121`, `+cpu`, `+rocm6.2`, `+xpu`, `+pt21cu121`."""

    variant: str | None = None
    cuda: str | None = None
    hip: str | None = None
    gpu: bool | None = None
    torch: str | None = None


_LABEL = re.compile(r"(?:pt(\d+))?(cu\d+|cpu|rocm[\d.]+|xpu)", re.IGNORECASE)
_PIN = re.compile(
    r"\s*([A-Za-z0-9][\w.-]*)\s*(?:\[[^\]]*\])?\s*\(?\s*(?:===|==|~=|>=)\s*(\d[\d.]*)"
)
_NAME = re.compile(r"\s*([A-Za-z0-9][\w.-]*)")
_CUDA_PINS = ("nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime")
_CUDNN_PINS = ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11", "nvidia-cudnn")
_JAX_PLUGIN = re.compile(r"jax-(cuda|rocm)(\d+)-(plugin|pjrt)")


def interpret_build(rec: FrameworkRecord) -> FrameworkBuild:
    dist = rec.dist
    base = FrameworkBuild(
        name=rec.name,
        version=dist.version or None if dist else None,
        distribution=dist.name if dist else None,
        source=f"{dist.name} METADATA" if dist else "",
    )
    build = _READERS.get(rec.name, _generic)(rec, base)
    problems = [*rec.problems, *([build.problem] if build.problem else [])]
    names = Counter(_normalize(d.name) for d in rec.dists)
    for name in (n for n, count in names.items() if count > 1):
        versions = ", ".join(d.version for d in rec.dists if _normalize(d.name) == name)
        problems.append(f"{name} is recorded more than once ({versions}): remove the stale copy")
    return replace(build, problem="; ".join(problems) or None)


def _torch(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    values = rec.files.get("torch/version.py", {})
    file_version = get_str(values, "__version__")
    meta_label = _variant(base.version)
    label = _variant(file_version) if _variant(file_version).variant else meta_label
    runtime, cudnn = _pinned(rec.requires)
    cuda = get_str(values, "cuda")
    hip = get_str(values, "hip") or get_str(values, "rocm") or label.hip
    framework_cuda = cuda or label.cuda or _major_minor(runtime)
    if "cuda" in values:
        gpu: bool | None = bool(cuda or hip or get_str(values, "xpu"))
    else:
        gpu = label.gpu if label.gpu is not None else (True if runtime else None)
    problems = []
    if cuda and meta_label.cuda and cuda != meta_label.cuda:
        problems.append(f"torch/version.py says CUDA {cuda} but METADATA is {base.version}")
    if file_version and base.version and _public(file_version) != _public(base.version):
        problems.append(
            f"torch/version.py says {file_version} but METADATA says {base.version}: "
            "the files of two installs are mixed"
        )
    details = _details(
        version_py=file_version,
        git_version=get_str(values, "git_version"),
        xpu=get_str(values, "xpu"),
        pinned_cuda_runtime=runtime,
        pinned_cudnn=cudnn,
    )
    return replace(
        base,
        version=base.version or file_version,
        framework_cuda=framework_cuda,
        cudnn_version=cudnn,
        hip_version=hip,
        variant=label.variant or _derived_variant(framework_cuda, hip, gpu),
        is_gpu_build=gpu,
        source="torch/version.py" if values else base.source,
        details=details,
        problem="; ".join(problems) or None,
    )


def _torch_domain(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    """torchvision / torchaudio: the label and version.py, and the torch they were built for."""
    values = rec.files.get(f"{rec.name}/version.py", {})
    file_version = get_str(values, "__version__")
    label = _variant(file_version) if _variant(file_version).variant else _variant(base.version)
    cuda = get_str(values, "cuda") or label.cuda
    torch_pins = [r for r in rec.requires if _requirement_name(r) == "torch"]
    return replace(
        base,
        version=base.version or file_version,
        framework_cuda=cuda,
        hip_version=label.hip,
        variant=label.variant,
        is_gpu_build=True if cuda else label.gpu,
        source=f"{rec.name}/version.py" if values else base.source,
        details=_details(version_py=file_version, requires_torch=", ".join(torch_pins) or None),
    )


def _tensorflow(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    values = rec.files.get("tensorflow/python/platform/build_info.py", {})
    info = as_mapping(values.get("build_info")) or values  # before TF 2.3: module-level names
    cuda = _tf_number(info.get("cuda_version", info.get("cuda_version_number")), cuda=True)
    cudnn = _tf_number(info.get("cudnn_version", info.get("cudnn_version_number")), cuda=False)
    is_cuda, is_rocm = info.get("is_cuda_build"), info.get("is_rocm_build")
    if is_cuda is True or is_rocm is True:
        gpu: bool | None = True
    elif is_cuda is False:
        gpu = False
    else:
        gpu = False if (base.distribution or "").lower().endswith("-cpu") else None
    runtime, pinned_cudnn = _pinned([r for r in rec.requires if "and-cuda" in r])
    capabilities = info.get("cuda_compute_capabilities")
    details = _details(
        and_cuda_runtime=runtime,
        and_cuda_cudnn=pinned_cudnn,
        and_cuda_installed=("yes" if rec.site_dist("nvidia-cudnn-cu12") else "no")
        if runtime
        else None,
        cuda_compute_capabilities=",".join(map(str, capabilities))
        if isinstance(capabilities, list)
        else None,
        is_tensorrt_build=str(info["is_tensorrt_build"]) if "is_tensorrt_build" in info else None,
    )
    return replace(
        base,
        framework_cuda=cuda,
        cudnn_version=cudnn,
        hip_version=get_str(info, "rocm_version"),
        variant="cpu" if gpu is False else ("rocm" if is_rocm is True else None),
        is_gpu_build=gpu,
        source="tensorflow/python/platform/build_info.py" if values else base.source,
        details=details,
    )


def _jax(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    jaxlib = rec.site_dist("jaxlib")
    lib = _jaxlib(rec, replace(base, version=jaxlib.version if jaxlib else None))
    problems = [] if jaxlib else ["jaxlib is not installed"]
    for plugin in _plugins(rec):
        if jaxlib and _public(plugin.version) != _public(jaxlib.version):
            problems.append(
                f"{plugin.name} {plugin.version} does not match jaxlib {jaxlib.version}"
            )
    if lib.problem:
        problems.append(lib.problem)
    return replace(
        base,
        version=base.version or get_str(rec.files.get("jax/version.py", {}), "_version"),
        framework_cuda=lib.framework_cuda,
        cudnn_version=lib.cudnn_version,
        hip_version=lib.hip_version,
        variant=lib.variant,
        is_gpu_build=lib.is_gpu_build if jaxlib or lib.details.get("plugin") else None,
        details={**_details(jaxlib=jaxlib.version if jaxlib else None), **lib.details},
        problem="; ".join(problems) or None,
    )


def _jaxlib(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    """Old GPU jaxlib wheels carried `+cuda11.cudnn86`; since 0.4.30 jaxlib is one wheel for CPU
    and GPU, and the CUDA (or ROCm) plugin beside it is what makes JAX use the GPU."""
    found = re.search(r"cuda(\d+)[._-]?cudnn(\d+)", (base.version or "").partition("+")[2])
    if found is not None:
        cudnn = found.group(2)
        return replace(
            base,
            framework_cuda=_cuda_digits(found.group(1)),
            cudnn_version=cudnn[0] + (f".{cudnn[1:]}" if len(cudnn) > 1 else ""),
            variant=base.version.partition("+")[2] if base.version else None,
            is_gpu_build=True,
        )
    plugin = _plugin_build(rec)
    if plugin is not None:
        return replace(base, **plugin)
    return replace(base, variant="cpu" if base.version else None, is_gpu_build=False)


def _plugins(rec: FrameworkRecord) -> list[DistributionFacts]:
    """The JAX GPU plugin distributions here, the -plugin wheel before its -pjrt wheel."""
    found = [d for d in rec.site_dists if _JAX_PLUGIN.fullmatch(_normalize(d.name))]
    return sorted(found, key=lambda d: (not _normalize(d.name).endswith("-plugin"), d.name))


def _plugin_build(rec: FrameworkRecord) -> dict[str, Any] | None:
    """What the installed plugin makes of JAX: its CUDA (the runtime its wheel asks for, else the
    major in its name) or ROCm, and which plugin; two majors at once are a problem."""
    plugins = _plugins(rec)
    if not plugins:
        return None
    first = plugins[0]
    matched = _JAX_PLUGIN.fullmatch(_normalize(first.name))
    assert matched is not None
    kind, major = matched.group(1), matched.group(2)
    majors = sorted(
        {m.group(2) for d in plugins if (m := _JAX_PLUGIN.fullmatch(_normalize(d.name)))}
    )
    runtime, _cudnn = _pinned(first.requires)
    cuda = _major_minor(runtime) if runtime and runtime.split(".")[0] == major else major
    problem = (
        f"JAX plugins for several GPU stacks are installed ({', '.join(d.name for d in plugins)}); "
        "keep one"
        if len(majors) > 1
        else None
    )
    return {
        "framework_cuda": cuda if kind == "cuda" else None,
        "hip_version": major if kind == "rocm" else None,
        "variant": f"{kind}{major}",
        "is_gpu_build": True,
        "source": f"{first.name} METADATA",
        "details": {"plugin": f"{first.name} {first.version}"}
        | {_normalize(d.name): d.version for d in plugins},
        "problem": problem,
    }


def _cupy(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    name = _normalize(base.distribution or "")
    wheel_cuda = get_str(rec.files.get("cupy/.data/_wheel.json", {}), "cuda")
    cuda = wheel_cuda.split(".x")[0] if wheel_cuda else None
    hip = None
    if found := re.fullmatch(r"cupy-cuda(\d+)(x?)", name):
        cuda = found.group(1) if found.group(2) else _cuda_digits(found.group(1))
    elif found := re.fullmatch(r"cupy-rocm-(\d+)-(\d+)", name):
        hip = f"{found.group(1)}.{found.group(2)}"
    problem = None
    if len(rec.dists) > 1:
        names = ", ".join(d.name for d in rec.dists)
        problem = f"more than one CuPy package is installed ({names}); CuPy supports only one"
    return replace(
        base,
        framework_cuda=cuda,
        hip_version=hip,
        variant=name[len("cupy-") :] if name.startswith("cupy-") else None,
        is_gpu_build=True,
        source="cupy/.data/_wheel.json" if wheel_cuda else base.source,
        details=_details(wheel_cuda=wheel_cuda),
        problem=problem,
    )


def _onnxruntime(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    path = "onnxruntime/capi/build_and_package_info.py"
    values = rec.files.get(path, {})
    package = get_str(values, "package_name")
    owner = next(
        (d for d in rec.dists if package and _normalize(d.name) == _normalize(package)), None
    )
    flavour = _normalize(package or base.distribution or "").partition("-")[2]
    cuda, rocm = get_str(values, "cuda_version"), get_str(values, "rocm_version")
    problems = []
    if len(rec.dists) > 1:
        names = " and ".join(d.name for d in rec.dists)
        problems.append(f"{names} are all installed: they share onnxruntime/, the last one wins")
    if package and rec.dists and owner is None:
        problems.append(f"{path} belongs to {package}, which is not the installed distribution")
    return replace(
        base,
        version=owner.version if owner else base.version or get_str(values, "__version__"),
        distribution=owner.name if owner else base.distribution or package,
        framework_cuda=cuda,
        cudnn_version=get_str(values, "cudnn_version"),
        hip_version=rocm,
        variant=flavour or "cpu",
        is_gpu_build=bool(cuda or rocm or flavour in ("gpu", "rocm", "directml")),
        source=path if values else base.source,
        problem="; ".join(problems) or None,
    )


def _paddle(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    values = rec.files.get("paddle/version/__init__.py", {})
    raw_cuda = get_str(values, "cuda_version")
    cuda = raw_cuda if raw_cuda not in (None, "", "False") else None
    cudnn = get_str(values, "cudnn_version")
    gpu = True if cuda else (False if raw_cuda == "False" else None)
    if gpu is None and base.distribution:
        gpu = _normalize(base.distribution).endswith("-gpu")
    return replace(
        base,
        version=base.version or get_str(values, "full_version"),
        framework_cuda=cuda,
        cudnn_version=cudnn if cudnn not in (None, "", "False") else None,
        variant=None if gpu else "cpu",
        is_gpu_build=gpu,
        source="paddle/version/__init__.py" if values else base.source,
    )


def _mmcv(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    folder = f"{(rec.location or '').replace(chr(92), '/').rstrip('/')}/mmcv/_ext"
    ops = any(p.replace("\\", "/").startswith(folder) for p in rec.binaries)
    values = rec.files.get("mmcv/version.py", {})
    return replace(
        base,
        version=base.version or get_str(values, "__version__"),
        is_gpu_build=None if ops else False,  # compiled ops may be CPU-only; the fatbin tells
        details={"compiled_ops": "yes" if ops else "no"},
    )


def _xformers(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    built = as_mapping(rec.files.get("xformers/cpp_lib.json", {}).get("version"))
    number = built.get("cuda")
    cuda = f"{number // 100}.{number % 100}" if isinstance(number, int) and number else None
    label = _variant(base.version)
    hip = get_str(built, "hip")
    return replace(
        base,
        framework_cuda=cuda or label.cuda,
        hip_version=hip,
        variant=label.variant,
        is_gpu_build=True if cuda or hip else label.gpu,
        source="xformers/cpp_lib.json" if built else base.source,
        details=_details(built_with_torch=get_str(built, "torch")),
    )


def _generic(rec: FrameworkRecord, base: FrameworkBuild) -> FrameworkBuild:
    """flash-attn, apex, torch-scatter ...: only what the version label says (`+pt21cu121`)."""
    label = _variant(base.version)
    return replace(
        base,
        framework_cuda=label.cuda,
        hip_version=label.hip,
        variant=label.variant,
        is_gpu_build=label.gpu,
        details=_details(built_for_torch=label.torch),
    )


_READERS = {
    "torch": _torch,
    "torchvision": _torch_domain,
    "torchaudio": _torch_domain,
    "tensorflow": _tensorflow,
    "jax": _jax,
    "jaxlib": _jaxlib,
    "cupy": _cupy,
    "onnxruntime": _onnxruntime,
    "paddlepaddle": _paddle,
    "mmcv": _mmcv,
    "xformers": _xformers,
}


def _variant(version: str | None) -> _Variant:
    found = _LABEL.match((version or "").partition("+")[2])
    if found is None:
        return _Variant()
    torch = f"{found.group(1)[0]}.{found.group(1)[1:]}" if found.group(1) else None
    kind = found.group(2).lower()
    if kind.startswith("cu"):
        return _Variant(kind, cuda=_cuda_digits(kind[2:]), gpu=True, torch=torch)
    if kind.startswith("rocm"):
        return _Variant(kind, hip=kind[4:], gpu=True, torch=torch)
    return _Variant(kind, gpu=kind == "xpu", torch=torch)


def _cuda_digits(digits: str) -> str:
    """'121' -> '12.1', '118' -> '11.8', '92' -> '9.2', '12' -> '12' (majors 10+ start with 1)."""
    size = 2 if digits.startswith("1") and len(digits) >= 2 else 1
    return f"{digits[:size]}.{digits[size:]}" if digits[size:] else digits[:size]


def _pinned(requires: Any) -> tuple[str | None, str | None]:
    """The CUDA runtime and cuDNN versions that nvidia-* / cuda-toolkit requirements pin."""
    pins: dict[str, str] = {}
    for line in requires:
        found = _PIN.match(line)
        if found:
            pins.setdefault(_normalize(found.group(1)), found.group(2).rstrip("."))
    runtime = next((pins[n] for n in (*_CUDA_PINS, "cuda-toolkit") if n in pins), None)
    return runtime, next((pins[n] for n in _CUDNN_PINS if n in pins), None)


def _derived_variant(cuda: str | None, hip: str | None, gpu: bool | None) -> str | None:
    if hip:
        return "rocm" + ".".join(hip.split(".")[:2])
    if cuda:
        return "cu" + cuda.replace(".", "")
    return "cpu" if gpu is False else None


def _tf_number(value: object, cuda: bool) -> str | None:
    """'12.3' stays; Windows builds write '64_112' (CUDA 11.2) and '64_8' (cuDNN 8)."""
    if not isinstance(value, str) or not value:
        return None
    found = re.fullmatch(r"64_(\d+)", value)
    if found is None:
        return value
    return _cuda_digits(found.group(1)) if cuda else found.group(1)


def _major_minor(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def _public(version: str) -> str:
    return version.partition("+")[0]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(line: str) -> str | None:
    found = _NAME.match(line)
    return _normalize(found.group(1)) if found else None


def _details(**values: str | None) -> dict[str, str]:
    return {key: value for key, value in values.items() if value}
