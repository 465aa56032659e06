"""Exact fix commands for this machine and the installer that manages the env.

Pure string building: the interpreter path, the installer (pip, uv, conda) and the package pins
come from the snapshot and the knowledge base. Index URLs of the package index itself are never
written: a command that needs no special index names none, so the installer uses its own config.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from gpuenv.diagnose.context import Context
from gpuenv.plan.model import PackageChoice

COMPANIONS = ("torchvision", "torchaudio")


def _q(text: str) -> str:
    return shlex.quote(text)


def python_of(ctx: Context) -> str:
    env = ctx.snapshot.python_env
    if env and env.interpreter and not env.interpreter.startswith("("):
        return env.interpreter
    return "python" if ctx.os == "windows" else "python3"


def pip_install(
    ctx: Context,
    installer: str,
    requirements: Sequence[str],
    extra_index_urls: Sequence[str] = (),
    reinstall: bool = False,
) -> str:
    """One install command in the installer's own idiom. Pins of other indexes carry their local
    label (torch==2.13.0+cu126), so those indexes are extra ones: everything else still comes
    from the installer's own configured index."""
    reqs = " ".join(_q(r) for r in requirements)
    index = "".join(f" --extra-index-url {url}" for url in extra_index_urls)
    python = _q(python_of(ctx))
    if installer == "uv":
        again = " --reinstall" if reinstall else ""
        return f"uv pip install --python {python}{again} {reqs}{index}"
    again = " --force-reinstall" if reinstall else ""
    return f"{python} -m pip install{again} {reqs}{index}"


def pip_uninstall(ctx: Context, installer: str, names: Sequence[str]) -> str:
    python = _q(python_of(ctx))
    if installer == "uv":
        return f"uv pip uninstall --python {python} {' '.join(names)}"
    return f"{python} -m pip uninstall -y {' '.join(names)}"


def installed_version(ctx: Context, name: str) -> str | None:
    env = ctx.snapshot.python_env
    if env is None:
        return None
    wanted = name.lower().replace("_", "-")
    for dist in env.distributions:
        if dist.name.lower().replace("_", "-") == wanted:
            return dist.version
    return None


def torch_install(ctx: Context, wants: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """Plan `wants` (e.g. "torch==2.13.0") for this machine and give (summary, commands) that
    install the chosen CUDA build with its installed companions; None when no CUDA build fits.

    The plan engine decides (driver, every GPU's architecture, Python, platform), so the doctor's
    fixes and `gpuenv plan` never disagree about which build fits."""
    from gpuenv.errors import GpuenvError
    from gpuenv.plan.request import request_from_arguments
    from gpuenv.plan.resolve import make_plan

    installer = ctx.installer_for("torch")
    companions = [c for c in COMPANIONS if installed_version(ctx, c) is not None]
    try:
        request = request_from_arguments([*wants, *companions])
        plan = make_plan(request, ctx.snapshot, ctx.kb, "conda" if installer == "conda" else "pip")
    except GpuenvError:
        return None
    if plan.unplaced or len(plan.envs) != 1:
        return None
    packages = plan.envs[0].packages
    torch = next((p for p in packages if p.framework == "torch"), None)
    if torch is None or torch.cuda is None:
        return None
    summary = f"torch {torch.public_version} built for CUDA {torch.cuda} ({torch.build})"
    if installer == "conda":
        return summary, (_conda_install(ctx, packages),)
    requirements = [p.requirement for p in packages]
    indexes = tuple(dict.fromkeys(p.index_url for p in packages if p.index_url))
    return summary, (pip_install(ctx, installer, requirements, extra_index_urls=indexes),)


def _conda_install(ctx: Context, packages: Sequence[PackageChoice]) -> str:
    prefix = ctx.snapshot.python_env.prefix if ctx.snapshot.python_env else None
    where = f" --prefix {_q(prefix)}" if prefix else ""
    specs = [
        f"{p.conda.name}={p.conda.version}" + (f"={p.conda.build}" if p.conda.build else "")
        for p in packages
        if p.conda
    ]
    return f"conda install{where} -c conda-forge {' '.join(_q(s) for s in specs)}"


def driver_install(ctx: Context, branch: int) -> tuple[str, ...]:
    """Install an NVIDIA driver of at least `branch` in the way this OS does it."""
    distro = (ctx.snapshot.host.distro.value or "").lower()
    if ctx.wsl or ctx.os == "windows":
        return ()
    if "ubuntu" in distro:
        return (f"sudo apt install nvidia-driver-{branch}", "sudo reboot")
    return ()
