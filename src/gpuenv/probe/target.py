"""The target Python environment, read from its files by a script run inside its interpreter.

`probe_python_env` runs `_target.py` as `[interpreter, "-c", <script text>]` (standard library only,
Python 3.6+, never imports a framework) and `parse_target_output` turns the JSON it prints into
`PythonEnvFacts`: the interpreter, every installed distribution, and how each GPU framework was
built (from torch/version.py, TF's build_info.py, version labels like `+cu121`, nvidia-* pins ...).

Recorded machine fixtures answer this command under the key `<interpreter> -c {target-script}`
(the script's text is the third argv item; it starts with `# gpuenv-target-probe`).
"""

from __future__ import annotations

import json
import ntpath
import posixpath
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from gpuenv.facts import DistributionFacts, FrameworkBuild, PythonEnvFacts
from gpuenv.probe.access import CommandResult, MachineAccess

PROBE_VERSION = 1  # the document version _target.py prints
SCRIPT_MARKER = "# gpuenv-target-probe"  # the first line of the script
SCRIPT_KEY = "{target-script}"  # how recorded machines name the script in a command key


@dataclass(frozen=True)
class TargetProbe:
    env: PythonEnvFacts
    binary_candidates: tuple[tuple[str, str], ...] = ()  # (path, owning distribution or "")


@lru_cache(maxsize=1)
def script_text() -> str:
    """The text of `_target.py`, the script run inside the target interpreter."""
    return resources.files("gpuenv.probe").joinpath("_target.py").read_text(encoding="utf-8")


def default_interpreter(environ: Mapping[str, str], machine: MachineAccess) -> str:
    """The active venv's python, else the active conda env's, else python3 (python on Windows)."""
    windows = machine.system() == "Windows"
    join = ntpath.join if windows else posixpath.join
    if environ.get("VIRTUAL_ENV"):
        parts: tuple[str, ...] = ("Scripts", "python.exe") if windows else ("bin", "python")
        return join(environ["VIRTUAL_ENV"], *parts)
    if environ.get("CONDA_PREFIX"):
        parts = ("python.exe",) if windows else ("bin", "python")
        return join(environ["CONDA_PREFIX"], *parts)
    return "python" if windows else "python3"


def probe_python_env(
    machine: MachineAccess, interpreter: str, timeout: float = 30.0
) -> TargetProbe:
    """Run the target script in `interpreter`; every failure becomes a problem, never an error."""
    try:
        script = script_text()
    except OSError as exc:
        return _failed(interpreter, f"the target probe script is missing: {exc}")
    try:
        result = machine.run([interpreter, "-c", script], timeout=timeout)
    except Exception as exc:  # a MachineAccess should not raise; the probe must not either
        return _failed(interpreter, f"running {interpreter} failed: {exc}")
    problem = _run_problem(result, interpreter, timeout)
    if problem is not None:
        return _failed(interpreter, problem)
    return parse_target_output(result.stdout, interpreter)


def _run_problem(result: CommandResult, interpreter: str, timeout: float) -> str | None:
    if result.not_found:
        return f"interpreter {interpreter} not found"
    if result.timed_out:
        return f"{interpreter} timed out after {timeout:g} s"
    if result.error:
        return f"{interpreter} could not start: {result.error}"
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        last = f": {lines[-1].strip()[:300]}" if lines else ""
        hint = " (the probe needs Python 3.6 or newer)" if "SyntaxError" in last else ""
        return f"{interpreter} exited with {result.returncode}{last}{hint}"
    return None


def _failed(interpreter: str, problem: str) -> TargetProbe:
    return TargetProbe(
        PythonEnvFacts(interpreter=interpreter, python_version=None, problems=(problem,))
    )


def parse_target_output(text: str, interpreter: str) -> TargetProbe:
    """The facts in the document `_target.py` printed; garbled output gives a problem instead."""
    doc, problem = _load(text)
    if doc is None:
        return _failed(interpreter, problem)
    info = _mapping(doc.get("interpreter"))
    problems = list(_strs(doc.get("problems")))
    if doc.get("probe_version") != PROBE_VERSION:
        problems.append(
            f"probe document version {doc.get('probe_version')!r} is not {PROBE_VERSION}"
        )
    if not info:
        problems.append("the probe document has no interpreter section")
    dists = tuple(_distribution(raw) for raw in _mappings(doc.get("distributions")))
    candidates = tuple(
        (str(raw["path"]), str(raw.get("distribution") or ""))
        for raw in _mappings(doc.get("binary_candidates"))
        if isinstance(raw.get("path"), str)
    )
    frameworks = tuple(
        _interpret(_record(raw, dists, candidates))
        for raw in _mappings(doc.get("frameworks"))
        if isinstance(raw.get("name"), str)
    )
    env = PythonEnvFacts(
        interpreter=interpreter,
        python_version=_str(info, "version"),
        implementation=_str(info, "implementation"),
        prefix=_str(info, "prefix"),
        env_kind=_env_kind(info),
        manager=_manager(info, dists),
        platform_machine=_str(info, "machine"),
        sys_platform=_str(info, "sys_platform"),
        libc=_str(info, "libc"),
        site_packages=_strs(info.get("site_packages")),
        distributions=dists,
        frameworks=frameworks,
        problems=tuple(problems),
    )
    return TargetProbe(env, candidates)


def _load(text: str) -> tuple[dict[str, Any], str] | tuple[None, str]:
    body = text.strip()
    if not body:
        return None, "the target interpreter printed nothing"
    start = max(body.find('{"probe_version"'), 0)  # tolerate a banner printed before it
    try:
        doc, _ = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as exc:
        return None, f"could not read the target probe's output ({exc.msg}): {body[:80]!r}"
    except RecursionError:
        return None, f"could not read the target probe's output (nested too deep): {body[:80]!r}"
    if not isinstance(doc, dict) or "probe_version" not in doc:
        return None, f"the target interpreter printed no probe document: {body[:80]!r}"
    return doc, ""


def _distribution(raw: Mapping[str, Any]) -> DistributionFacts:
    return DistributionFacts(
        name=_str(raw, "name") or "",
        version=_str(raw, "version") or "",
        installer=_str(raw, "installer"),
        requires=_strs(raw.get("requires")),
        location=_str(raw, "location"),
        problem=_str(raw, "problem"),
    )


def _record(
    raw: Mapping[str, Any],
    dists: tuple[DistributionFacts, ...],
    candidates: tuple[tuple[str, str], ...],
) -> _Record:
    location = _str(raw, "location")
    here = tuple(d for d in dists if d.location == location)
    names = {_str(d, "name") for d in _mappings(raw.get("distributions"))}
    files: dict[str, Mapping[str, Any]] = {}
    problems = list(_strs(raw.get("problems")))
    for path, found in _mapping(raw.get("files")).items():
        entry = _mapping(found)
        files[str(path)] = _mapping(entry.get("values"))
        if _str(entry, "problem"):
            problems.append(f"{path}: {entry['problem']}")
    return _Record(
        name=str(raw["name"]),
        location=location,
        dists=tuple(d for d in here if d.name in names),
        site_dists=here,
        files=files,
        problems=tuple(problems),
        binaries=tuple(path for path, _ in candidates),
    )


def _env_kind(info: Mapping[str, Any]) -> str | None:
    if "is_venv" not in info:
        return None
    if info.get("is_venv") is True:
        return "venv"
    return "conda" if info.get("conda_meta") is True else "system"


def _manager(info: Mapping[str, Any], dists: tuple[DistributionFacts, ...]) -> str | None:
    raw_prefix = _str(info, "prefix")
    if raw_prefix is None:
        return None
    prefix = raw_prefix.replace("\\", "/") + "/"
    if "/.pixi/envs/" in prefix:
        return "pixi"
    if info.get("is_venv") is not True and info.get("conda_meta") is True:
        return "conda"
    if "uv" in _mapping(info.get("pyvenv_cfg")):
        return "uv"
    installers = Counter((d.installer or "").lower() for d in dists if d.installer)
    if installers and installers.most_common(1)[0][0] == "uv":
        return "uv"
    return "poetry" if "/pypoetry/virtualenvs/" in prefix else "pip"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _mappings(value: object) -> tuple[Mapping[str, Any], ...]:
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()


def _str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) else None


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


# ------------------------------------------------------------------ how each framework was built


@dataclass(frozen=True)
class _Record:
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


def _interpret(rec: _Record) -> FrameworkBuild:
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


def _torch(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    values = rec.files.get("torch/version.py", {})
    file_version = _str(values, "__version__")
    meta_label = _variant(base.version)
    label = _variant(file_version) if _variant(file_version).variant else meta_label
    runtime, cudnn = _pinned(rec.requires)
    cuda = _str(values, "cuda")
    hip = _str(values, "hip") or _str(values, "rocm") or label.hip
    framework_cuda = cuda or label.cuda or _major_minor(runtime)
    if "cuda" in values:
        gpu: bool | None = bool(cuda or hip or _str(values, "xpu"))
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
        git_version=_str(values, "git_version"),
        xpu=_str(values, "xpu"),
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


def _torch_domain(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    """torchvision / torchaudio: the label and version.py, and the torch they were built for."""
    values = rec.files.get(f"{rec.name}/version.py", {})
    file_version = _str(values, "__version__")
    label = _variant(file_version) if _variant(file_version).variant else _variant(base.version)
    cuda = _str(values, "cuda") or label.cuda
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


def _tensorflow(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    values = rec.files.get("tensorflow/python/platform/build_info.py", {})
    info = _mapping(values.get("build_info")) or values  # before TF 2.3: module-level names
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
        hip_version=_str(info, "rocm_version"),
        variant="cpu" if gpu is False else ("rocm" if is_rocm is True else None),
        is_gpu_build=gpu,
        source="tensorflow/python/platform/build_info.py" if values else base.source,
        details=details,
    )


def _jax(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    plugins = [d for d in rec.site_dists if _JAX_PLUGIN.fullmatch(_normalize(d.name))]
    jaxlib = rec.site_dist("jaxlib")
    lib = _jaxlib(rec, replace(base, version=jaxlib.version if jaxlib else None))
    problems = [] if jaxlib else ["jaxlib is not installed"]
    for plugin in plugins:
        if jaxlib and _public(plugin.version) != _public(jaxlib.version):
            problems.append(
                f"{plugin.name} {plugin.version} does not match jaxlib {jaxlib.version}"
            )
    build = replace(
        base,
        version=base.version or _str(rec.files.get("jax/version.py", {}), "_version"),
        framework_cuda=lib.framework_cuda,
        cudnn_version=lib.cudnn_version,
        variant=lib.variant,
        is_gpu_build=lib.is_gpu_build if jaxlib else None,
        details=_details(jaxlib=jaxlib.version if jaxlib else None)
        | {_normalize(p.name): p.version for p in plugins},
        problem="; ".join(problems) or None,
    )
    found = _JAX_PLUGIN.fullmatch(_normalize(plugins[0].name)) if plugins else None
    if found is None:
        return build
    kind, major = found.group(1), found.group(2)
    return replace(
        build,
        framework_cuda=major if kind == "cuda" else None,
        hip_version=major if kind == "rocm" else None,
        variant=f"{kind}{major}",
        is_gpu_build=True,
    )


def _jaxlib(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    """Old GPU jaxlib wheels carried `+cuda11.cudnn86`; since 0.4.30 CUDA comes from plugins."""
    found = re.search(r"cuda(\d+)[._-]?cudnn(\d+)", (base.version or "").partition("+")[2])
    if found is None:
        return replace(base, variant="cpu" if base.version else None, is_gpu_build=False)
    cudnn = found.group(2)
    return replace(
        base,
        framework_cuda=_cuda_digits(found.group(1)),
        cudnn_version=cudnn[0] + (f".{cudnn[1:]}" if len(cudnn) > 1 else ""),
        variant=base.version.partition("+")[2] if base.version else None,
        is_gpu_build=True,
    )


def _cupy(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    name = _normalize(base.distribution or "")
    wheel_cuda = _str(rec.files.get("cupy/.data/_wheel.json", {}), "cuda")
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


def _onnxruntime(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    path = "onnxruntime/capi/build_and_package_info.py"
    values = rec.files.get(path, {})
    package = _str(values, "package_name")
    owner = next(
        (d for d in rec.dists if package and _normalize(d.name) == _normalize(package)), None
    )
    flavour = _normalize(package or base.distribution or "").partition("-")[2]
    cuda, rocm = _str(values, "cuda_version"), _str(values, "rocm_version")
    problems = []
    if len(rec.dists) > 1:
        names = " and ".join(d.name for d in rec.dists)
        problems.append(f"{names} are all installed: they share onnxruntime/, the last one wins")
    if package and rec.dists and owner is None:
        problems.append(f"{path} belongs to {package}, which is not the installed distribution")
    return replace(
        base,
        version=owner.version if owner else base.version or _str(values, "__version__"),
        distribution=owner.name if owner else base.distribution or package,
        framework_cuda=cuda,
        cudnn_version=_str(values, "cudnn_version"),
        hip_version=rocm,
        variant=flavour or "cpu",
        is_gpu_build=bool(cuda or rocm or flavour in ("gpu", "rocm", "directml")),
        source=path if values else base.source,
        problem="; ".join(problems) or None,
    )


def _paddle(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    values = rec.files.get("paddle/version/__init__.py", {})
    raw_cuda = _str(values, "cuda_version")
    cuda = raw_cuda if raw_cuda not in (None, "", "False") else None
    cudnn = _str(values, "cudnn_version")
    gpu = True if cuda else (False if raw_cuda == "False" else None)
    if gpu is None and base.distribution:
        gpu = _normalize(base.distribution).endswith("-gpu")
    return replace(
        base,
        version=base.version or _str(values, "full_version"),
        framework_cuda=cuda,
        cudnn_version=cudnn if cudnn not in (None, "", "False") else None,
        variant=None if gpu else "cpu",
        is_gpu_build=gpu,
        source="paddle/version/__init__.py" if values else base.source,
    )


def _mmcv(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    folder = f"{(rec.location or '').replace(chr(92), '/').rstrip('/')}/mmcv/_ext"
    ops = any(p.replace("\\", "/").startswith(folder) for p in rec.binaries)
    values = rec.files.get("mmcv/version.py", {})
    return replace(
        base,
        version=base.version or _str(values, "__version__"),
        is_gpu_build=None if ops else False,  # compiled ops may be CPU-only; the fatbin tells
        details={"compiled_ops": "yes" if ops else "no"},
    )


def _xformers(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
    built = _mapping(rec.files.get("xformers/cpp_lib.json", {}).get("version"))
    number = built.get("cuda")
    cuda = f"{number // 100}.{number % 100}" if isinstance(number, int) and number else None
    label = _variant(base.version)
    hip = _str(built, "hip")
    return replace(
        base,
        framework_cuda=cuda or label.cuda,
        hip_version=hip,
        variant=label.variant,
        is_gpu_build=True if cuda or hip else label.gpu,
        source="xformers/cpp_lib.json" if built else base.source,
        details=_details(built_with_torch=_str(built, "torch")),
    )


def _generic(rec: _Record, base: FrameworkBuild) -> FrameworkBuild:
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
