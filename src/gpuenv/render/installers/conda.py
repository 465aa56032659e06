"""conda / mamba: environment.yml on conda-forge with the cuda-version pin and the CUDA build of
each framework; wheels conda-forge does not provide go in its pip section. CONDA_OVERRIDE_CUDA
lets a machine without the GPU (a login node, CI) solve the env as the GPU node would."""

from __future__ import annotations

import json

from gpuenv.plan.model import EnvPlan, PackageChoice, Plan
from gpuenv.render.installers.builds import build_notes, later_commands
from gpuenv.render.installers.common import (
    Rendered,
    Where,
    env_file,
    header,
    index_lines,
    pip_packages,
    q,
    windows,
    with_env,
)


def conda_spec(package: PackageChoice) -> str | None:
    """'pytorch=2.13.0=cuda129*' for a conda-forge package; None for a pip one."""
    spec = package.conda
    if spec is None:
        return None
    return (
        f"{spec.name}={spec.version}={spec.build}" if spec.build else f"{spec.name}={spec.version}"
    )


def cuda_version_pin(env: EnvPlan) -> str | None:
    """The one cuda-version every conda CUDA build of the env runs with: the highest CUDA they
    were built with (they share its major; a build for CUDA 12.8 runs with cuda-version 12.9)."""
    cudas = sorted({p.cuda for p in env.packages if p.conda and p.cuda}, key=_cuda_key)
    return cudas[-1] if cudas else None


def _cuda_key(text: str) -> tuple[int, ...]:
    """'12.10' sorts above '12.9'."""
    return tuple(int(p) for p in text.split(".") if p.isdigit())


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
    """The wheels pip installs in the env (not those from an index of their own, nor builds)."""
    wheels = pip_packages(env)
    if not wheels and not env.carried:
        return []
    return index_lines(env) + [p.requirement for p in wheels] + list(env.carried)


def _name(plan: Plan, env: EnvPlan) -> str:
    return "gpu-env" if len(plan.envs) == 1 else f"gpu-{env.name}"


def _y(text: str) -> str:
    """A YAML scalar: plain when safe, else double-quoted (JSON quoting is valid YAML)."""
    safe = all(c.isalnum() or c in "._-=*<>!,[]+/:" for c in text) and not text.startswith("-")
    return text if safe and ": " not in text and "[" not in text else json.dumps(text)


def render_conda(plan: Plan, tool: str = "conda", where: Where | None = None) -> Rendered:
    """environment.yml per env. With the files written: `env create -f` (or `env update` of the
    env named with --python); without: the same as one `create`/`install` line (and a pip
    line for the pip section)."""
    where = where or Where()
    files: dict[str, str] = {}
    commands: list[str] = []
    for env in plan.envs:
        name = env_file(plan, env, "environment", ".yml")
        files[name] = environment_yml(plan, env)
        prefix = _prefix(plan, where.interpreter) if len(plan.envs) == 1 else None
        commands += _conda_lines(plan, env, tool, where, name, prefix)
        target = f"-p {q(prefix)}" if prefix else f"-n {_name(plan, env)}"
        commands += later_commands(plan, env, f"{tool} run {target} python -m pip install")
    override = plan.conda_override_cuda
    notes: tuple[str, ...] = tuple(n for env in plan.envs for n in build_notes(env))
    if override:
        notes += (
            f"CONDA_OVERRIDE_CUDA={override} makes the solver assume the GPU node's driver "
            f"(CUDA {override}); leave it out on the GPU node itself."
            + (
                f" In cmd.exe: `set CONDA_OVERRIDE_CUDA={override}` first." if windows(plan) else ""
            ),
        )
    return Rendered(files=files, commands=tuple(commands), notes=notes)


def _conda_lines(
    plan: Plan, env: EnvPlan, tool: str, where: Where, name: str, prefix: str | None
) -> list[str]:
    target = f"-p {q(prefix)}" if prefix else f"-n {_name(plan, env)}"
    if where.folder is not None:
        verb = "env update" if prefix else "env create"
        lines = [f"{tool} {verb} {target} -f {q(where.file(name))}"]
    else:
        specs = [f"python={env.python}"] if env.python and not prefix else []
        pin = cuda_version_pin(env)
        specs += [f"cuda-version={pin}"] if pin else []
        specs += [spec for spec in (conda_spec(p) for p in env.packages) if spec]
        verb = "install" if prefix else "create"
        channels = "-c conda-forge --override-channels"
        lines = [f"{tool} {verb} {target} {channels} " + " ".join(q(s) for s in specs)]
        pip = pip_section(env)
        if pip:
            args = " ".join(q(part) for line in pip for part in line.split(" ", 1))
            lines.append(f"{tool} run {target} python -m pip install {args}")
    override = plan.conda_override_cuda
    return [with_env(plan, "CONDA_OVERRIDE_CUDA", override, lines[0]) if override else lines[0],
            *lines[1:]]  # fmt: skip


def _prefix(plan: Plan, interpreter: str | None) -> str | None:
    """The conda env an interpreter lives in (bin/python, or python.exe at the top on Windows)."""
    if not interpreter:
        return None
    path = interpreter.replace("\\", "/")
    parts = path.rsplit("/", 2 if not windows(plan) else 1)
    return parts[0] if len(parts) > 1 else None
