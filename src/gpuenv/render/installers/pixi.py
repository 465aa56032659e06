"""pixi: pixi.toml with [system-requirements] cuda (the CUDA the target's driver provides, so
the solver picks CUDA builds), conda-forge dependencies, and wheels in [pypi-dependencies]."""

from __future__ import annotations

import json

from packaging.utils import canonicalize_name

from gpuenv.plan.model import EnvPlan, Plan
from gpuenv.render.installers.builds import build_notes
from gpuenv.render.installers.common import (
    Rendered,
    Where,
    carried,
    header,
    marker_holds,
    q,
    with_env,
)
from gpuenv.render.installers.conda import cuda_version_pin

PIXI_PLATFORMS = {
    "linux-x86_64": "linux-64",
    "linux-aarch64": "linux-aarch64",
    "windows-x86_64": "win-64",
    "macos-arm64": "osx-arm64",
    "macos-x86_64": "osx-64",
}


def pixi_toml(plan: Plan, env: EnvPlan) -> str:
    platform = PIXI_PLATFORMS.get(plan.target.platform, plan.target.platform)
    lines = [header(plan).rstrip("\n"), "[workspace]", f"name = {_s(_name(plan, env))}"]
    lines += ['channels = ["conda-forge"]', f"platforms = [{_s(platform)}]"]
    system_cuda = plan.conda_override_cuda
    if system_cuda:
        lines += ["", "[system-requirements]", f"cuda = {_s(system_cuda)}"]
    lines += ["", "[dependencies]"]
    if env.python:
        lines.append(f"python = {_s(env.python + '.*')}")
    pin = cuda_version_pin(env)
    if pin:
        lines.append(f"cuda-version = {_s(pin + '.*')}")
    for package in env.packages:
        if package.conda:
            spec = package.conda
            build = f", build = {_s(spec.build)}" if spec.build else ""
            lines.append(f"{spec.name} = {{ version = {_s('==' + spec.version)}{build} }}")
    lines += _pypi(plan, env)
    return "\n".join(lines) + "\n"


def _pypi(plan: Plan, env: EnvPlan) -> list[str]:
    wheels = [p for p in env.packages if p.conda is None and p.source_build is None]
    others = _carried(plan, env)
    if not wheels and not others:
        return []
    out = ["", "[pypi-dependencies]"]
    for package in wheels:
        extras = (
            f", extras = [{', '.join(_s(e) for e in package.extras)}]" if package.extras else ""
        )
        index = f", index = {_s(package.index_url)}" if package.index_url else ""
        source = (
            f"url = {_s(package.url)}"
            if package.url
            else f"version = {_s('==' + package.version)}{index}"
        )
        out.append(f"{package.name} = {{ {source}{extras} }}")
    out += others
    if env.find_links:
        out += ["", "[pypi-options]", f"find-links = [{', '.join(_fl(u) for u in env.find_links)}]"]
    return out


def _carried(plan: Plan, env: EnvPlan) -> list[str]:
    """The user's other requirements as pixi writes them: markers are evaluated for the target
    (pixi.toml has none); a folder gpuenv cannot name is left as a comment to fill in."""
    out = []
    planned = {canonicalize_name(p.name) for p in env.packages}
    for line in carried(env):
        req = line.requirement
        name = req.name if req else line.name
        if name and canonicalize_name(name) in planned:
            out.append(f"# also planned above, so left out: {line.text}")
            continue
        if req is None:
            if line.name is None:
                out.append(f"# add by hand (its package name is not known): {line.text}")
            else:
                out.append(f"{line.name} = {{ path = {_s(line.text)} }}")
            continue
        if not marker_holds(plan, req):
            continue
        extras = (
            f", extras = [{', '.join(_s(e) for e in sorted(req.extras))}]" if req.extras else ""
        )
        source = f"url = {_s(req.url)}" if req.url else f"version = {_s(str(req.specifier) or '*')}"
        out.append(f"{req.name} = {{ {source}{extras} }}")
    return out


def _fl(url: str) -> str:
    return f"{{ url = {_s(url)} }}"


def _name(plan: Plan, env: EnvPlan) -> str:
    return "gpu-env" if len(plan.envs) == 1 else f"gpu-{env.name}"


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def render_pixi(plan: Plan, where: Where | None = None) -> Rendered:
    """pixi.toml per env; pixi reads nothing else, so without -o the commands name DIR."""
    where = where or Where()
    files: dict[str, str] = {}
    commands: list[str] = []
    override = plan.conda_override_cuda
    for env in plan.envs:
        name = "pixi.toml" if len(plan.envs) == 1 else f"{env.name}/pixi.toml"
        files[name] = pixi_toml(plan, env)
        command = f"pixi install --manifest-path {q(where.file(name))}"
        commands.append(
            with_env(plan, "CONDA_OVERRIDE_CUDA", override, command) if override else command
        )
    notes = []
    for env in plan.envs:
        if any(p.source_build for p in env.packages):
            notes.append(
                "pixi.toml cannot build a package from source with its variables: after "
                "`pixi install`, run the build in the env (`pixi run --manifest-path ... "
                "python -m pip install ...` with the variables below, after `pixi add pip`)."
            )
        notes += [n for n in build_notes(env) if "installed from" not in n]
    return Rendered(
        files=files,
        commands=tuple(commands),
        notes=tuple(notes),
        needs_files=where.folder is None,
    )
