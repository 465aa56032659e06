"""Exact fix commands for this machine and the installer that manages the env.

Pure string building: the interpreter path, the installer (pip, uv, conda) and the package pins
come from the snapshot and the knowledge base. Index URLs of the package index itself are never
written: a command that needs no special index names none, so the installer uses its own config.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from gpuenv.diagnose.context import Context
from gpuenv.kb.query.frameworks import torch_index_url, torchvision_for

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
    index_url: str | None = None,
    reinstall: bool = False,
) -> str:
    """One install command in the installer's own idiom."""
    reqs = " ".join(_q(r) for r in requirements)
    index = f" --index-url {index_url}" if index_url else ""
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


def torch_variant_install(ctx: Context, torch_version: str, variant: str) -> tuple[str, ...]:
    """Install torch `torch_version` (and its installed companions) built for `variant` (cu126)."""
    base = torch_version.split("+")[0]
    installer = ctx.installer_for("torch")
    if installer == "conda":
        return (conda_torch(ctx, base, variant),)
    requirements = [f"torch=={base}+{variant}"]
    for companion in COMPANIONS:
        if installed_version(ctx, companion) is None:
            continue
        paired = _companion_version(ctx, companion, base)
        if paired:
            requirements.append(f"{companion}=={paired}+{variant}")
    return (pip_install(ctx, installer, requirements, torch_index_url(ctx.kb, variant)),)


def _companion_version(ctx: Context, companion: str, torch_version: str) -> str | None:
    if companion == "torchvision":
        line = torchvision_for(ctx.kb, torch_version)
        if line is None:
            return None
        # the patch release of torchvision follows torch's patch release
        patch = torch_version.split(".")[2] if torch_version.count(".") >= 2 else "0"
        return f"{line}.{patch}" if line.count(".") == 1 else line
    return None


def conda_torch(ctx: Context, torch_version: str, variant: str) -> str:
    prefix = ctx.snapshot.python_env.prefix if ctx.snapshot.python_env else None
    where = f" --prefix {_q(prefix)}" if prefix else ""
    cuda = variant.removeprefix("cu")
    cuda_version = f"{cuda[:-1]}.{cuda[-1]}" if cuda.isdigit() else None
    pins = [f"pytorch={torch_version}=cuda*"]
    if cuda_version:
        pins.append(f"cuda-version={cuda_version}")
    return f"conda install{where} -c conda-forge {' '.join(_q(p) for p in pins)}"


def driver_install(ctx: Context, branch: int) -> tuple[str, ...]:
    """Install an NVIDIA driver of at least `branch` in the way this OS does it."""
    distro = (ctx.snapshot.host.distro.value or "").lower()
    if ctx.wsl or ctx.os == "windows":
        return ()
    if "ubuntu" in distro:
        return (f"sudo apt install nvidia-driver-{branch}", "sudo reboot")
    return ()
