"""pip: a requirements file per env (exact pins, PyTorch's variant index as an extra index) and
the commands that create the env and install it."""

from __future__ import annotations

from gpuenv.plan.model import EnvPlan, Plan
from gpuenv.render.installers.builds import build_notes, later_commands
from gpuenv.render.installers.common import (
    Rendered,
    Where,
    env_file,
    header,
    index_lines,
    pip_args,
    python_command,
    q,
    requirement_lines,
)


def requirements_txt(plan: Plan, env: EnvPlan) -> str:
    lines = [header(plan).rstrip("\n")]
    if len(plan.envs) > 1:
        lines.append(f"# environment {env.name} of {len(plan.envs)}")
    lines += index_lines(env)
    lines += requirement_lines(env)
    lines += [f"# {line}" for line in separately(env)]
    return "\n".join(lines) + "\n"


def separately(env: EnvPlan) -> list[str]:
    """What the file leaves to the commands after it (an index of its own, a source build)."""
    out = []
    for package in env.packages:
        if package.conda is not None:
            continue
        if package.source_build is not None:
            out.append(f"{package.requirement}: built from source by a command of the plan")
        elif package.exclusive_index:
            out.append(f"{package.requirement}: installed from {package.index_url} by a command")
    return out


def render_pip(plan: Plan, where: Where | None = None) -> Rendered:
    """requirements.txt per env; commands that install into the env named with --python, or
    create a venv first. Without -o the install line carries the requirements itself."""
    where = where or Where()
    files: dict[str, str] = {}
    commands: list[str] = []
    for env in plan.envs:
        name = env_file(plan, env, "requirements", ".txt")
        files[name] = requirements_txt(plan, env)
        if where.interpreter and len(plan.envs) == 1:
            python = q(where.interpreter)
        else:
            venv, python = _in_venv(plan, ".venv" if len(plan.envs) == 1 else f".venv-{env.name}")
            commands.append(f"{python_command(plan)} -m venv {q(venv)}")
        source = (
            f"-r {q(where.file(name))}" if where.folder is not None else pip_args(env.packages, env)
        )
        commands.append(f"{python} -m pip install {source}")
        commands += later_commands(plan, env, f"{python} -m pip install")
    notes = tuple(n for env in plan.envs for n in build_notes(env))
    return Rendered(files=files, commands=tuple(commands), notes=notes)


def _in_venv(plan: Plan, venv: str) -> tuple[str, str]:
    """The venv's folder and its interpreter."""
    if plan.target.platform.startswith("windows"):
        return venv, f"{venv}\\Scripts\\python"
    return venv, f"{venv}/bin/python"
