"""Exact fix commands for this machine and the installer that manages the env.

Pure string building: the interpreter path, the installer (pip, uv, conda) and the package pins
come from the snapshot and the knowledge base. Index URLs of the package index itself are never
written: a command that needs no special index names none, so the installer uses its own config.
Words are quoted for the shell of the machine: POSIX quoting on Linux and macOS; on Windows,
double quotes only where cmd or PowerShell would split or redirect (a POSIX-quoted
'C:\\...\\python.exe' runs in neither).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

from packaging.version import InvalidVersion, Version

from gpuenv.diagnose.context import Context
from gpuenv.facts import FrameworkBuild
from gpuenv.plan.model import PackageChoice

COMPANIONS = ("torchvision", "torchaudio")
# Characters cmd and PowerShell both pass through unquoted in an argument.
_WINDOWS_SAFE = re.compile(r"^[A-Za-z0-9_.+=:/\\\[\]~-]+$")


def quote(ctx: Context, text: str) -> str:
    """One word for this machine's shell."""
    if ctx.os != "windows":
        return shlex.quote(text)
    if _WINDOWS_SAFE.match(text):
        return text
    return '"' + text.replace('"', '\\"') + '"'


def _q(ctx: Context, text: str) -> str:
    return quote(ctx, text)


def python_of(ctx: Context) -> str:
    env = ctx.snapshot.python_env
    if env and env.interpreter and not env.interpreter.startswith("("):
        return env.interpreter
    return "python" if ctx.os == "windows" else "python3"


def program(ctx: Context, path: str) -> str:
    """The interpreter as the first word of a command: PowerShell runs a quoted path only
    through its call operator."""
    word = quote(ctx, path)
    return f"& {word}" if ctx.os == "windows" and word.startswith('"') else word


def pip_install(
    ctx: Context,
    installer: str,
    requirements: Sequence[str],
    extra_index_urls: Sequence[str] = (),
    reinstall: bool = False,
    find_links: Sequence[str] = (),
    python: str | None = None,
) -> str:
    """One install command in the installer's own idiom. Pins of other indexes carry their local
    label (torch==2.13.0+cu126), so those indexes are extra ones: everything else still comes
    from the installer's own configured index. `python`: another env's interpreter."""
    reqs = " ".join(_q(ctx, r) for r in requirements)
    index = "".join(f" --extra-index-url {_q(ctx, url)}" for url in extra_index_urls)
    index += "".join(f" --find-links {_q(ctx, url)}" for url in find_links)
    interpreter = python or python_of(ctx)
    if installer == "uv":
        again = " --reinstall" if reinstall else ""
        return f"uv pip install --python {_q(ctx, interpreter)}{again} {reqs}{index}"
    again = " --force-reinstall" if reinstall else ""
    return f"{program(ctx, interpreter)} -m pip install{again} {reqs}{index}"


def pip_uninstall(ctx: Context, installer: str, names: Sequence[str]) -> str:
    shown = " ".join(_q(ctx, n) for n in names)
    if installer == "uv":
        return f"uv pip uninstall --python {_q(ctx, python_of(ctx))} {shown}"
    return f"{program(ctx, python_of(ctx))} -m pip uninstall -y {shown}"


def installed_version(ctx: Context, name: str) -> str | None:
    env = ctx.snapshot.python_env
    if env is None:
        return None
    wanted = name.lower().replace("_", "-")
    for dist in env.distributions:
        if dist.name.lower().replace("_", "-") == wanted:
            return dist.version
    return None


def release_of(version: str | None, parts: int = 3) -> str | None:
    """The release a framework version names, for a `==` pin: '2.5.1+cpu' -> '2.5.1',
    '2.5.1a0+git1f2e3d' -> '2.5.1' (a source build of that release); None for text that names no
    full release ('2.x', '', '+cu121', '2'), so no fix pins a release nobody installed."""
    text = (version or "").strip()
    try:
        parsed = Version(text)
    except InvalidVersion:
        return None
    release = parsed.release
    if len(release) < parts:
        return None
    return ".".join(str(p) for p in release)


@dataclass(frozen=True)
class PlannedFix:
    """What `gpuenv plan` chose for a framework on this machine, and the command installing it."""

    summary: str  # "torch 2.13.0 built for CUDA 12.6 (cu126)"
    commands: tuple[str, ...]
    choice: PackageChoice
    installer: str
    packages: tuple[PackageChoice, ...] = ()


def planned_install(
    ctx: Context, wants: Sequence[str], framework: str = "torch", installer: str | None = None
) -> PlannedFix | None:
    """Plan `wants` (e.g. "torch==2.13.0") for this machine and give the command that installs
    the chosen CUDA build (torch with its installed companions); None when no CUDA build fits.

    The plan engine decides (driver, every GPU's architecture, Python, platform), so the doctor's
    fixes and `gpuenv plan` never disagree about which build fits."""
    from gpuenv.errors import GpuenvError
    from gpuenv.plan.request import request_from_arguments
    from gpuenv.plan.resolve import make_plan

    installer = installer or ctx.installer_for(framework)
    companions = [c for c in COMPANIONS if installed_version(ctx, c) is not None]
    extra = companions if framework == "torch" else []
    try:
        request = request_from_arguments([*wants, *extra])
        plan = make_plan(request, ctx.snapshot, ctx.kb, "conda" if installer == "conda" else "pip")
    except GpuenvError:
        return None
    if plan.unplaced or len(plan.envs) != 1:
        return None
    packages = plan.envs[0].packages
    main = next((p for p in packages if p.framework == framework and not p.companion_of), None)
    if main is None or main.cuda is None:
        return None
    summary = f"{framework} {main.public_version} built for CUDA {main.cuda} ({main.build})"
    if all(p.conda for p in packages) and installer == "conda":
        return PlannedFix(summary, (_conda_install(ctx, packages),), main, "conda", packages)
    pip_like = "uv" if installer == "uv" else "pip"
    found = PlannedFix(summary, (), main, pip_like, packages)
    return replace(found, commands=(planned_command(ctx, found),))


def planned_command(ctx: Context, planned: PlannedFix, python: str | None = None) -> str:
    """The pip (or uv) command installing a plan's packages into this env, or `python`'s."""
    packages = [p for p in planned.packages if p.conda is None] or list(planned.packages)
    return pip_install(
        ctx,
        planned.installer if planned.installer in ("pip", "uv") else "pip",
        [p.requirement for p in packages],
        extra_index_urls=tuple(dict.fromkeys(p.index_url for p in packages if p.index_url)),
        find_links=tuple(dict.fromkeys(p.find_links for p in packages if p.find_links)),
        python=python,
    )


def _conda_install(ctx: Context, packages: Sequence[PackageChoice]) -> str:
    prefix = ctx.snapshot.python_env.prefix if ctx.snapshot.python_env else None
    where = f" --prefix {_q(ctx, prefix)}" if prefix else ""
    specs = [
        f"{p.conda.name}={p.conda.version}" + (f"={p.conda.build}" if p.conda.build else "")
        for p in packages
        if p.conda
    ]
    cudas = sorted({p.cuda for p in packages if p.conda and p.cuda}, key=_cuda_key)
    if cudas:  # the CUDA builds agree on one cuda-version: the highest they were built with
        specs.insert(0, f"cuda-version={cudas[-1]}")
    return f"conda install{where} -c conda-forge {' '.join(_q(ctx, s) for s in specs)}"


def _cuda_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def driver_install(ctx: Context, branch: int) -> tuple[str, ...]:
    """Install an NVIDIA driver of at least `branch` in the way this OS does it."""
    distro = (ctx.snapshot.host.distro.value or "").lower()
    if ctx.wsl or ctx.os == "windows":
        return ()
    if "ubuntu" in distro:
        return (f"sudo apt install nvidia-driver-{branch}", "sudo reboot")
    return ()


# frameworks in the env -> the name `gpuenv plan` plans them by
_PLANNED = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax", "jaxlib": "jax"}


def same_release_fix(ctx: Context, fw: FrameworkBuild) -> PlannedFix | None:
    """The build of the installed release that `gpuenv plan` picks for this machine."""
    framework = _PLANNED.get(fw.name)
    base = release_of(_planned_version(ctx, fw))
    if framework is None or base is None:
        return None
    return _replacing(ctx, fw, planned_install(ctx, [f"{framework}=={base}"], framework))


def newest_fix(ctx: Context, fw: FrameworkBuild) -> PlannedFix | None:
    """The newest release `gpuenv plan` picks for this machine."""
    framework = _PLANNED.get(fw.name)
    if framework is None:
        return None
    return _replacing(ctx, fw, planned_install(ctx, [framework], framework))


def _planned_version(ctx: Context, fw: FrameworkBuild) -> str | None:
    if fw.name == "jaxlib":
        return installed_version(ctx, "jax") or fw.version
    return fw.version


def _replacing(ctx: Context, fw: FrameworkBuild, planned: PlannedFix | None) -> PlannedFix | None:
    """JAX loads every GPU plugin installed: the plugin of another CUDA major goes first."""
    if planned is None or fw.name not in ("jax", "jaxlib"):
        return planned
    keep = {p.name for p in planned.packages}
    env = ctx.snapshot.python_env
    stale = [
        d.name
        for d in (env.distributions if env else ())
        if _JAX_PLUGIN.fullmatch(_norm(d.name))
        and _norm(d.name) not in keep
        and _norm(d.name).replace("-pjrt", "-plugin") not in keep
    ]
    if not stale:
        return planned
    remove = pip_uninstall(ctx, planned.installer, stale)
    return replace(planned, commands=(remove, *planned.commands))


_JAX_PLUGIN = re.compile(r"jax-(cuda|rocm)\d+-(plugin|pjrt)")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
