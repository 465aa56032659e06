"""Fixes for compiled torch extensions built for another torch: what `gpuenv plan` picks for the
installed torch build (a prebuilt wheel from where it is published, or the build from source with
its nvcc, GPU architectures and MAX_JOBS), as one command for this env. Pure string building."""

from __future__ import annotations

from dataclasses import dataclass

from gpuenv.diagnose.context import Context
from gpuenv.diagnose.fixes import pip_install, program, python_of, quote
from gpuenv.plan.model import PackageChoice


@dataclass(frozen=True)
class ExtensionFix:
    """What `gpuenv plan` picks for an extension against the torch installed: the command
    installing it into this env, and what it is (a prebuilt wheel or a source build)."""

    summary: str
    command: str
    choice: PackageChoice


def planned_extension(ctx: Context, name: str, torch_pin: str) -> ExtensionFix | None:
    """The extension `name` for this env's torch (`torch_pin` names its build: '==2.4.1+cu118'),
    as the plan engine chooses it: a prebuilt wheel from where it is published, else the build
    from source with the nvcc and GPU architectures it needs. None when nothing fits."""
    from gpuenv.errors import GpuenvError
    from gpuenv.plan.request import request_from_arguments
    from gpuenv.plan.resolve import make_plan

    base = "==" + torch_pin.lstrip("=").split("+")[0]
    plan = None
    for pin in dict.fromkeys((torch_pin, base)):  # the exact build, else the release
        try:
            request = request_from_arguments([f"torch{pin}", name])
            plan = make_plan(request, ctx.snapshot, ctx.kb, "pip")
        except GpuenvError:
            continue
        if not plan.unplaced and len(plan.envs) == 1:
            break
    if plan is None or plan.unplaced or len(plan.envs) != 1:
        return None
    choice = next((p for p in plan.envs[0].packages if p.framework != "torch"), None)
    if choice is None:
        return None
    installer = "uv" if ctx.installer_for(name) == "uv" else "pip"
    return ExtensionFix(
        _extension_summary(choice), _extension_command(ctx, choice, installer), choice
    )


def _extension_summary(choice: PackageChoice) -> str:
    build = choice.source_build
    if build is None:
        where = choice.url or choice.find_links or choice.index_url or "the package index"
        return f"{choice.name} {choice.public_version} built for this torch (from {where})"
    toolkit = f"the toolkit at {build.toolkit}" if build.toolkit else "none was found"
    return (
        f"{choice.name} {choice.version or ''} built from source against this torch: no prebuilt "
        f"wheel fits it; the build needs nvcc of CUDA {build.nvcc} ({toolkit})"
    ).replace("  ", " ")


def _extension_command(ctx: Context, choice: PackageChoice, installer: str) -> str:
    python = python_of(ctx)
    head = (
        f"uv pip install --python {quote(ctx, python)}"
        if installer == "uv"
        else f"{program(ctx, python)} -m pip install"
    )
    build = choice.source_build
    if build is not None:
        command = build.command.replace("pip install", head, 1)
        if build.clone:
            folder = build.clone.rstrip("/").rsplit("/", 1)[-1]
            command = f"git clone {quote(ctx, build.clone)} && {command[:-2]} ./{folder}"
        if ctx.os == "windows":
            return "; ".join([*(f'$env:{k}="{v}"' for k, v in build.env), command])
        return " ".join([*(f"{k}={quote(ctx, v)}" for k, v in build.env), command])
    again = "--reinstall" if installer == "uv" else "--force-reinstall"
    if choice.exclusive_index and choice.index_url:
        index = f"--index-url {quote(ctx, choice.index_url)}"
        return f"{head} {again} --no-deps {index} {quote(ctx, choice.requirement)}"
    reinstall = pip_install(
        ctx,
        installer,
        [choice.requirement],
        extra_index_urls=(choice.index_url,) if choice.index_url else (),
        reinstall=True,
        find_links=(choice.find_links,) if choice.find_links else (),
    )
    return f"{reinstall} --no-deps"
