"""The stack floor by floor (GPU → driver → CUDA libraries → frameworks → extensions), each with a
verdict taken from the worst finding on that floor."""

from __future__ import annotations

from collections.abc import Sequence

from gpuenv.diagnose.context import Context
from gpuenv.diagnose.findings import Finding, Layer

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
        "Driver", "driver", _verdict("driver", findings, "ok"), f"{ctx.driver}{max_cuda}", versions
    )


def _libraries_layer(ctx: Context, findings: Sequence[Finding]) -> Layer:
    libs = ctx.snapshot.libraries
    first = [lib for lib in libs if lib.load_rank == 0]
    details = tuple(f"{lib.soname} {lib.version or ''} ← {lib.origin} {lib.path}" for lib in first)
    toolkits = [t.toolkit_cuda for t in ctx.snapshot.toolkits if t.toolkit_cuda]
    summary = f"{len(first)} libraries found" + (
        f"; toolkits {', '.join(toolkits)}" if toolkits else ""
    )
    default = "ok" if libs else "absent"
    return Layer(
        "CUDA libraries",
        "cuda-libraries",
        _verdict("cuda-libraries", findings, default),
        summary,
        details,
    )


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
    ]
    layers += _framework_layers(ctx, findings)
    for key in sorted({f.layer for f in findings if f.layer.startswith("extension:")}):
        layers.append(
            Layer(key.split(":", 1)[1], key, _verdict(key, findings, "ok"), "compiled extension")
        )
    if ctx.snapshot.python_env is None:
        layers.append(Layer("Python env", "python", "unknown", "not probed"))
    return tuple(layers)
