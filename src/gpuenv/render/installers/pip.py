"""pip: a requirements file per env (exact pins, PyTorch's variant index as an extra index) and
the commands that create the env and install it."""

from __future__ import annotations

from gpuenv.plan.model import EnvPlan, Plan
from gpuenv.render.installers.common import (
    Rendered,
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
    return "\n".join(lines) + "\n"


def render_pip(plan: Plan) -> Rendered:
    files: dict[str, str] = {}
    commands: list[str] = []
    python = python_command(plan)
    notes: list[str] = []
    for env in plan.envs:
        name = env_file(plan, env, "requirements", ".txt")
        files[name] = requirements_txt(plan, env)
        venv = _in_venv(plan, ".venv" if len(plan.envs) == 1 else f".venv-{env.name}")
        commands += [f"{python} -m venv {q(venv[0])}", f"{venv[1]} -m pip install -r {q(name)}"]
        notes.append(f"without the file: {venv[1]} -m pip install {pip_args(env.packages, env)}")
    return Rendered(files=files, commands=tuple(commands), notes=tuple(notes))


def _in_venv(plan: Plan, venv: str) -> tuple[str, str]:
    """The venv's folder and its interpreter."""
    if plan.target.platform.startswith("windows"):
        return venv, f"{venv}\\Scripts\\python"
    return venv, f"{venv}/bin/python"
