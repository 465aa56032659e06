"""conda / mamba: environment.yml on conda-forge with the cuda-version pin and the CUDA build of
each framework; wheels conda-forge does not provide go in its pip section. CONDA_OVERRIDE_CUDA
lets a machine without the GPU (a login node, CI) solve the env as the GPU node would."""

from __future__ import annotations

import json

from gpuenv.plan.model import EnvPlan, PackageChoice, Plan
from gpuenv.render.installers.common import Rendered, env_file, header, index_lines, q


def conda_spec(package: PackageChoice) -> str | None:
    """'pytorch=2.13.0=cuda129*' for a conda-forge package; None for a pip one."""
    spec = package.conda
    if spec is None:
        return None
    return (
        f"{spec.name}={spec.version}={spec.build}" if spec.build else f"{spec.name}={spec.version}"
    )


def cuda_version_pin(env: EnvPlan) -> str | None:
    """The cuda-version of the env's conda CUDA builds (they must agree)."""
    cudas = sorted({p.cuda for p in env.packages if p.conda and p.cuda})
    return cudas[-1] if cudas else None


def environment_yml(plan: Plan, env: EnvPlan) -> str:
    lines = [header(plan).rstrip("\n")]
    if plan.conda_override_cuda:
        lines.append(
            f"# on a machine without the GPU: CONDA_OVERRIDE_CUDA={plan.conda_override_cuda} "
            "conda env create -f <this file>"
        )
    lines += [f"name: {_name(plan, env)}", "channels:", "  - conda-forge", "  - nodefaults"]
    lines.append("dependencies:")
    if env.python:
        lines.append(f"  - python={env.python}")
    pin = cuda_version_pin(env)
    if pin:
        lines.append(f"  - cuda-version={pin}")
    lines += [f"  - {_y(spec)}" for spec in (conda_spec(p) for p in env.packages) if spec]
    pip = pip_section(env)
    if pip:
        lines += ["  - pip", "  - pip:"] + [f"      - {_y(line)}" for line in pip]
    return "\n".join(lines) + "\n"


def pip_section(env: EnvPlan) -> list[str]:
    wheels = [p for p in env.packages if p.conda is None]
    if not wheels and not env.carried:
        return []
    return index_lines(env) + [p.requirement for p in wheels] + list(env.carried)


def _name(plan: Plan, env: EnvPlan) -> str:
    return "gpu-env" if len(plan.envs) == 1 else f"gpu-{env.name}"


def _y(text: str) -> str:
    """A YAML scalar: plain when safe, else double-quoted (JSON quoting is valid YAML)."""
    safe = all(c.isalnum() or c in "._-=*<>!,[]+/:" for c in text) and not text.startswith("-")
    return text if safe and ": " not in text and "[" not in text else json.dumps(text)


def render_conda(plan: Plan, tool: str = "conda") -> Rendered:
    files: dict[str, str] = {}
    commands: list[str] = []
    override = (
        f"CONDA_OVERRIDE_CUDA={plan.conda_override_cuda} " if plan.conda_override_cuda else ""
    )
    for env in plan.envs:
        name = env_file(plan, env, "environment", ".yml")
        files[name] = environment_yml(plan, env)
        commands.append(f"{override}{tool} env create -f {q(name)}")
    notes: tuple[str, ...] = ()
    if override:
        notes = (
            f"{override.strip()} makes the solver assume the GPU node's driver (CUDA "
            f"{plan.conda_override_cuda}); leave it out on the GPU node itself.",
        )
    return Rendered(files=files, commands=tuple(commands), notes=notes)
