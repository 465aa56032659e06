"""The stack floor by floor (GPU → driver → CUDA libraries → frameworks → extensions), each with a
verdict taken from the worst finding on that floor."""

from __future__ import annotations

from collections.abc import Sequence

from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Finding, Layer
from gpuenv.facts import LibraryFacts

_VERDICT = {"error": "error", "warning": "warning", "info": "ok"}


def _verdict(key: str, findings: Sequence[Finding], default: str) -> str:
    severities = [f.severity for f in findings if f.layer == key]
    for severity in ("error", "warning"):
        if severity in severities:
            return severity
    return default


def _gpu_layer(ctx: Context, findings: Sequence[Finding]) -> Layer:
    gpus = ctx.gpus or ctx.pci_only_gpus
    details = tuple(
        f"[{g.index}] {g.name}, compute capability {g.cc or '?'} ({g.source})" for g in gpus
    )
    if not gpus:
        return Layer("GPU", "gpu", _verdict("gpu", findings, "absent"), "no NVIDIA GPU found")
    summary = ", ".join(sorted({g.name for g in gpus}))
    return Layer("GPU", "gpu", _verdict("gpu", findings, "ok"), summary, details)


def _driver_layer(ctx: Context, findings: Sequence[Finding]) -> Layer:
    versions = tuple(f"{o.value} ({o.source})" for o in ctx.snapshot.driver.versions if o.value)
    if ctx.driver is None:
        default = "absent" if not ctx.pci_only_gpus else "error"
        return Layer(
            "Driver", "driver", _verdict("driver", findings, default), "no driver answers", versions
        )
    max_cuda = f", supports CUDA ≤ {ctx.driver_max_cuda.short}" if ctx.driver_max_cuda else ""
    return Layer(
        "Driver",
        "driver",
        _verdict("driver", findings, "ok"),
        f"{ctx.driver}{max_cuda}",
        versions,
        compact=(),
    )


def _libraries_layer(ctx: Context, findings: Sequence[Finding]) -> Layer:
    libs = ctx.snapshot.libraries
    first = [lib for lib in libs if lib.load_rank == 0]
    details = tuple(f"{lib.soname} {lib.version or ''} ← {lib.origin} {lib.path}" for lib in first)
    summary = f"{len(first)} found" if first else "none found"
    default = "ok" if libs else "absent"
    return Layer(
        "CUDA libraries",
        "cuda-libraries",
        _verdict("cuda-libraries", findings, default),
        summary,
        details,
        compact=_grouped(first),
    )


def _grouped(libraries: Sequence[LibraryFacts]) -> tuple[str, ...]:
    """One line per place the libraries come from: "pip: libcudart.so.12 12.4.127, ..."."""
    groups: dict[str, list[str]] = {}
    for lib in libraries:
        name = f"{lib.soname} {lib.version}" if lib.version else lib.soname
        groups.setdefault(lib.origin, []).append(name)
    return tuple(f"{origin}: {', '.join(names)}" for origin, names in groups.items())


def _toolkit_layer(ctx: Context, findings: Sequence[Finding]) -> Layer:
    toolkits = ctx.snapshot.toolkits
    details = tuple(
        f"{t.toolkit_cuda or '?'} {t.path or ''} ({t.source})"
        + (" nvcc on PATH" if t.on_path else "")
        for t in toolkits
    )
    nvcc = next((t for t in toolkits if t.on_path), None)
    if not toolkits:
        summary = "none (needed only to build CUDA extensions)"
    elif nvcc:
        summary = f"nvcc {nvcc.toolkit_cuda or '?'}" + (
            f" (+{len(toolkits) - 1} more)" if len(toolkits) > 1 else ""
        )
    else:
        summary = f"{len(toolkits)} found, no nvcc on PATH"
    default = "ok" if toolkits else "absent"
    return Layer(
        "CUDA toolkit", "toolkit", _verdict("toolkit", findings, default), summary, details
    )


def _python_layer(ctx: Context, findings: Sequence[Finding]) -> Layer:
    env = ctx.snapshot.python_env
    if env is None:
        return Layer("Python env", "python", "unknown", "not probed")
    if env.python_version is None:
        problem = "; ".join(env.problems) or "could not be read"
        return Layer("Python env", "python", "unknown", f"{env.interpreter}: {problem}")
    gpu_frameworks = [f.name for f in env.frameworks]
    summary = (
        f"Python {env.python_version}, {env.env_kind or '?'} managed by {env.manager or '?'}; "
        + (f"frameworks: {', '.join(gpu_frameworks)}" if gpu_frameworks else "no GPU framework")
    )
    where = f"{env.interpreter} (prefix {env.prefix})" if env.prefix else env.interpreter
    details = (where, *env.problems)
    # a document with problems and nothing read (Python 2) is not an environment that is fine
    default = "unknown" if env.problems and not env.distributions else "ok"
    return Layer("Python env", "python", _verdict("python", findings, default), summary, details)


def _framework_layers(ctx: Context, findings: Sequence[Finding]) -> list[Layer]:
    layers = []
    for fw in ctx.frameworks():
        key = f"framework:{fw.name}"
        if fw.is_gpu_build:
            build = (
                f"CUDA {fw.framework_cuda}" if fw.framework_cuda else (fw.variant or "GPU build")
            )
        elif fw.hip_version:
            build = f"ROCm {fw.hip_version}"
        elif fw.is_gpu_build is False:
            build = "CPU-only build"
        else:
            build = "build unknown"
        if fw.details.get("plugin"):
            build += f" through {fw.details['plugin']}"
        cudnn = f", cuDNN {fw.cudnn_version}" if fw.cudnn_version else ""
        default = "unknown" if fw.is_gpu_build is None else "ok"
        layers.append(
            Layer(
                fw.name,
                key,
                _verdict(key, findings, default),
                f"{fw.version or '?'} ({build}{cudnn})",
            )
        )
    return layers


def build_layers(ctx: Context, findings: Sequence[Finding]) -> tuple[Layer, ...]:
    layers = [
        _gpu_layer(ctx, findings),
        _driver_layer(ctx, findings),
        _libraries_layer(ctx, findings),
        _toolkit_layer(ctx, findings),
        _python_layer(ctx, findings),
    ]
    layers += _framework_layers(ctx, findings)
    for key in sorted({f.layer for f in findings if f.layer.startswith("extension:")}):
        layers.append(
            Layer(key.split(":", 1)[1], key, _verdict(key, findings, "ok"), "compiled extension")
        )
    # every finding is shown on a floor: one whose floor the stack lacks gets its own
    shown = {layer.key for layer in layers}
    for key in dict.fromkeys(f.layer for f in findings if f.layer not in shown):
        name = key.split(":", 1)[-1]
        layers.append(Layer(name, key, _verdict(key, findings, "unknown"), "see the findings"))
    return tuple(layers)
