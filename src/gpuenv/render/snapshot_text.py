"""A snapshot as plain text, floor by floor: host, driver, GPUs, toolkits, libraries, Python env."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuenv.facts import Observation, Snapshot


def _obs(label: str, obs: Observation[Any]) -> str:
    if obs.value is None:
        why = obs.problem or "unknown"
        return f"  {label}: - ({why})"
    return f"  {label}: {obs.value}  [{obs.source}]"


def _section(title: str, lines: Iterable[str]) -> list[str]:
    body = list(lines)
    return [title, *(body or ["  (none found)"]), ""]


def render_snapshot(snapshot: Snapshot) -> str:
    host = snapshot.host
    out: list[str] = []
    origin = snapshot.origin + (
        f"; what-if: {' '.join(snapshot.overrides)}" if snapshot.overrides else ""
    )
    out.append(f"gpuenv snapshot ({origin})")
    out.append("")
    host_lines = [
        _obs("os", host.os),
        _obs("arch", host.arch),
        _obs("distro", host.distro),
        _obs("kernel", host.kernel),
        _obs("libc", host.libc),
    ]
    for label, obs in (
        ("wsl", host.wsl),
        ("container", host.container),
        ("jetson", host.jetson),
        ("apple mps", host.apple_mps),
        ("rocm", host.rocm),
    ):
        if obs.value:
            host_lines.append(_obs(label, obs))
    host_lines += [f"  env {k}={v}" for k, v in sorted(host.env.items())]
    out += _section("Host", host_lines)
    driver = snapshot.driver
    driver_lines = [_obs("driver", o) for o in driver.versions]
    driver_lines += [_obs("max CUDA", o) for o in driver.max_cuda]
    driver_lines += [
        f"  failure: {o.value} [{o.source}]" + (f": {o.raw.strip()[:120]}" if o.raw else "")
        for o in driver.failures
    ]
    out += _section("Driver", driver_lines)
    out += _section(
        "GPUs",
        (
            f"  [{g.index}] {g.name or '?'}  cc {g.compute_capability or '?'}"
            + (f"  {g.memory_mib} MiB" if g.memory_mib else "")
            + f"  [{g.source}]"
            for g in snapshot.gpus
        ),
    )
    out += _section(
        "CUDA toolkits",
        (
            f"  {t.toolkit_cuda or '?'}  {t.path or ''}  [{t.source}]"
            + ("  (nvcc on PATH)" if t.on_path else "")
            + (f"  problem: {t.problem}" if t.problem else "")
            for t in snapshot.toolkits
        ),
    )
    out += _section(
        "CUDA libraries",
        (
            f"  {lib.soname:<24} {lib.version or '?':<12} {lib.origin:<16} {lib.path}"
            + ("  (shadowed)" if lib.load_rank else "")
            for lib in snapshot.libraries
        ),
    )
    env = snapshot.python_env
    if env is None:
        out += _section("Python environment", ["  (not probed)"])
    else:
        lines = [
            f"  interpreter: {env.interpreter}",
            f"  python: {env.python_version or '?'}",
            f"  kind: {env.env_kind or '?'}  managed by: {env.manager or '?'}",
            f"  distributions: {len(env.distributions)}",
        ]
        lines += [f"  problem: {p}" for p in env.problems]
        for fw in env.frameworks:
            build = "GPU" if fw.is_gpu_build else ("CPU" if fw.is_gpu_build is False else "?")
            cuda = f" CUDA {fw.framework_cuda}" if fw.framework_cuda else ""
            cudnn = f" cuDNN {fw.cudnn_version}" if fw.cudnn_version else ""
            lines.append(
                f"  {fw.name} {fw.version or '?'} ({fw.variant or build}{cuda}{cudnn})"
                + (f"  problem: {fw.problem}" if fw.problem else "")
            )
        out += _section("Python environment", lines)
    if snapshot.binaries:
        out += _section(
            "GPU code in binaries",
            (
                f"  {b.package or '?'}: {b.path}\n"
                f"    sass {' '.join(b.sass) or '-'}; ptx {' '.join(b.ptx) or '-'}"
                + (f"\n    problem: {b.problem}" if b.problem else "")
                for b in snapshot.binaries
            ),
        )
    if snapshot.problems:
        out += _section("Probe problems", (f"  {p}" for p in snapshot.problems))
    return "\n".join(out)
