"""A snapshot as plain text, floor by floor: host, driver, GPUs, toolkits, libraries, Python env.

Every string from the snapshot goes through `printable` first: a snapshot file is someone else's
data, and a GPU name or path holding terminal escape sequences or line breaks must not reach the
terminal as such.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuenv.facts import GpuFacts, Observation, Snapshot
from gpuenv.render.layout import Doc, blank, heading, line, printable
from gpuenv.render.terminal import Terminal, to_text

__all__ = ["printable", "render_snapshot"]


def _obs(label: str, obs: Observation[Any]) -> str:
    if obs.value is None:
        why = obs.problem or "unknown"
        return f"  {label}: - ({printable(why)})  [{printable(obs.source)}]"
    return f"  {label}: {printable(obs.value)}  [{printable(obs.source)}]"


def _section(title: str, lines: Iterable[str]) -> list[str]:
    body = list(lines)
    return [title, *(body or ["  (none found)"]), ""]


def render_snapshot(snapshot: Snapshot, terminal: Terminal | None = None) -> str:
    """The snapshot floor by floor, wrapped to the terminal's width when there is one."""
    return to_text(snapshot_doc(snapshot), terminal or Terminal())


def snapshot_doc(snapshot: Snapshot) -> Doc:
    doc: Doc = []
    for text in _snapshot_lines(snapshot).split("\n"):
        body = text.lstrip(" ")
        indent = len(text) - len(body)
        if not body:
            doc.append(blank())
        elif indent == 0 and not body.startswith("gpuenv snapshot"):
            doc.append(heading(body))
        else:
            doc.append(line(body, indent=indent, hang=4))
    return doc


def _snapshot_lines(snapshot: Snapshot) -> str:
    out: list[str] = []
    origin = printable(snapshot.origin) + (
        f"; what-if: {printable(' '.join(snapshot.overrides))}" if snapshot.overrides else ""
    )
    out.append(f"gpuenv snapshot ({origin})")
    out.append("")
    out += _section("Host", _host_lines(snapshot))
    out += _section("Driver", _driver_lines(snapshot))
    out += _section("GPUs", _gpu_lines(snapshot))
    out += _section("CUDA toolkits", _toolkit_lines(snapshot))
    out += _section("CUDA libraries", _library_lines(snapshot))
    out += _section("Python environment", _python_lines(snapshot))
    if snapshot.binaries:
        out += _section(
            "GPU code in binaries",
            (
                f"  {printable(b.package or '?')}: {printable(b.path)}\n"
                f"    sass {printable(' '.join(b.sass) or '-')}; "
                f"ptx {printable(' '.join(b.ptx) or '-')}"
                + (f"\n    problem: {printable(b.problem)}" if b.problem else "")
                for b in snapshot.binaries
            ),
        )
    if snapshot.problems:
        out += _section("Probe problems", (f"  {printable(p)}" for p in snapshot.problems))
    return "\n".join(out)


def _host_lines(snapshot: Snapshot) -> list[str]:
    host = snapshot.host
    lines = [
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
            lines.append(_obs(label, obs))
    lines += [f"  env {printable(k)}={printable(v)}" for k, v in sorted(host.env.items())]
    return lines


def _driver_lines(snapshot: Snapshot) -> list[str]:
    driver = snapshot.driver
    lines = [_obs("driver", o) for o in driver.versions]
    lines += [_obs("max CUDA", o) for o in driver.max_cuda]
    lines += [
        f"  failure: {printable(o.value)} [{printable(o.source)}]"
        + (f": {printable(o.raw.strip()[:120])}" if o.raw else "")
        for o in driver.failures
    ]
    return lines


def _gpu_lines(snapshot: Snapshot) -> list[str]:
    lines = [
        f"  [{g.index}] {printable(g.name or '?')}  cc {printable(g.compute_capability or '?')}"
        + (f"  {g.memory_mib} MiB" if g.memory_mib else "")
        + f"  [{printable(g.source)}]"
        for g in snapshot.gpus
    ]
    lines += [_pci_line(g) for g in snapshot.pci_gpus]
    scanned = snapshot.host.os.value == "linux" and snapshot.origin != "declared"
    if scanned and not snapshot.pci_gpus:
        lines.append("  PCI bus: no NVIDIA GPU  [/sys/bus/pci/devices]")
    return lines


def _pci_line(gpu: GpuFacts) -> str:
    return (
        f"  PCI bus: NVIDIA device {printable(gpu.pci_device_id or '?')}  [{printable(gpu.source)}]"
    )


def _toolkit_lines(snapshot: Snapshot) -> list[str]:
    return [
        f"  {printable(t.toolkit_cuda or '?')}  {printable(t.path or '')}  [{printable(t.source)}]"
        + ("  (nvcc on PATH)" if t.on_path else "")
        + (f"  problem: {printable(t.problem)}" if t.problem else "")
        for t in snapshot.toolkits
    ]


def _library_lines(snapshot: Snapshot) -> list[str]:
    lines = []
    for lib in snapshot.libraries:
        if lib.problem is not None or lib.load_rank < 0:
            state = f"  problem: {printable(lib.problem or 'not loadable')}"
        else:
            state = "  (shadowed)" if lib.load_rank > 0 else ""
        lines.append(
            f"  {printable(lib.soname):<24} {printable(lib.version or '?'):<12} "
            f"{printable(lib.origin):<16} {printable(lib.path)}{state}"
        )
    return lines


def _python_lines(snapshot: Snapshot) -> list[str]:
    env = snapshot.python_env
    if env is None:
        return ["  (not probed)"]
    lines = [
        f"  interpreter: {printable(env.interpreter)}",
        f"  python: {printable(env.python_version or '?')}",
        f"  kind: {printable(env.env_kind or '?')}  managed by: {printable(env.manager or '?')}",
        f"  distributions: {len(env.distributions)}",
    ]
    lines += [f"  problem: {printable(p)}" for p in env.problems]
    for fw in env.frameworks:
        build = "GPU" if fw.is_gpu_build else ("CPU" if fw.is_gpu_build is False else "?")
        cuda = f" CUDA {fw.framework_cuda}" if fw.framework_cuda else ""
        cudnn = f" cuDNN {fw.cudnn_version}" if fw.cudnn_version else ""
        detail = printable(f"{fw.variant or build}{cuda}{cudnn}")
        lines.append(
            f"  {printable(fw.name)} {printable(fw.version or '?')} ({detail})"
            + (f"  problem: {printable(fw.problem)}" if fw.problem else "")
        )
    return lines
