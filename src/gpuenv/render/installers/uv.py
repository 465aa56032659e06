"""uv: `uv pip install` lines (with `--torch-backend` when PyTorch's packages come from one of
its variant indexes) and a pyproject fragment that routes those packages to explicit indexes
([tool.uv.sources] + [[tool.uv.index]] with explicit = true), so nothing else is taken from them."""

from __future__ import annotations

import json

from gpuenv.plan.model import EnvPlan, Plan
from gpuenv.render.installers.builds import build_notes, later_commands
from gpuenv.render.installers.common import (
    Carried,
    Rendered,
    Where,
    carried,
    env_file,
    header,
    q,
    requirement_lines,
)
from gpuenv.render.installers.pip import requirements_txt

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")


def torch_backend(env: EnvPlan) -> str | None:
    """'cu121' / 'cpu' when every package from PyTorch's index is torch-family of one variant."""
    from_index = [p for p in env.packages if p.index_url]
    labels = {p.local_label for p in from_index}
    if not from_index or len(labels) != 1 or any(p.name not in TORCH_FAMILY for p in from_index):
        return None
    label = labels.pop()
    return label if label and (label == "cpu" or label.startswith("cu")) else None


def render_uv(plan: Plan, where: Where | None = None) -> Rendered:
    where = where or Where()
    files: dict[str, str] = {}
    commands: list[str] = []
    for env in plan.envs:
        if where.interpreter and len(plan.envs) == 1:
            venv = where.interpreter
        else:
            venv = ".venv" if len(plan.envs) == 1 else f".venv-{env.name}"
            python = f" --python {env.python}" if env.python else ""
            commands.append(f"uv venv{python} {q(venv)}")
        commands.append(_install_line(env, venv))
        # uv takes a package from the first --index that has it: no separate install needed
        install = f"uv pip install --python {q(venv)}"
        commands += later_commands(plan, env, install, exclusive=False)
        files[env_file(plan, env, "requirements", ".txt")] = requirements_txt(plan, env)
        files[env_file(plan, env, "pyproject.gpuenv", ".toml")] = pyproject_fragment(plan, env)
    notes = tuple(n for env in plan.envs for n in build_notes(env) if "installed from" not in n)
    return Rendered(files=files, commands=tuple(commands), notes=notes)


def _install_line(env: EnvPlan, venv: str) -> str:
    backend = torch_backend(env)
    reqs = " ".join(q(r) for r in requirement_lines(env, exclusive=True))
    parts = [f"uv pip install --python {q(venv)}"]
    if backend:
        parts.append(f"--torch-backend {backend}")
    else:
        parts += [f"--index {q(url)}" for url in env.index_urls]
    parts += [f"--find-links {q(url)}" for url in env.find_links]
    parts.append(reqs)
    return " ".join(parts)


def pyproject_fragment(plan: Plan, env: EnvPlan) -> str:
    """[project] dependencies pinned as planned, and explicit indexes for what needs one."""
    lines = [header(plan).rstrip("\n"), "# merge into your pyproject.toml", "", "[project]"]
    if env.python:
        lines.append(f"requires-python = {_s(f'=={env.python}.*')}")
    others = carried(env)
    lines.append("dependencies = [")
    lines += [f"  {_s(p.requirement)}," for p in env.packages if p.source_build is None]
    lines += [f"  {_s(c.text if c.requirement else str(c.name))}," for c in others if _named(c)]
    lines.append("]")
    lines += [
        f"# add by hand (its package name is not known): {c.text}" for c in others if not _named(c)
    ]
    names = _index_names(env)
    paths = [c for c in others if c.requirement is None and c.name]
    if names or paths:
        lines += ["", "[tool.uv.sources]"]
        lines += [
            f"{p.name} = [{{ index = {_s(names[p.index_url])} }}]"
            for p in env.packages
            if p.index_url
        ]
        lines += [f"{c.name} = {{ path = {_s(c.text)} }}" for c in paths]
    for url, name in names.items():
        lines += ["", "[[tool.uv.index]]", f"name = {_s(name)}", f"url = {_s(url)}"]
        lines.append("explicit = true")
    if env.find_links:
        lines += ["", "[tool.uv]", f"find-links = [{', '.join(_s(u) for u in env.find_links)}]"]
    return "\n".join(lines) + "\n"


def _named(line: Carried) -> bool:
    """A PEP 508 requirement, or a local wheel/sdist whose name its file name gives."""
    return line.requirement is not None or line.name is not None


def _index_names(env: EnvPlan) -> dict[str, str]:
    out: dict[str, str] = {}
    for package in env.packages:
        if package.index_url and package.index_url not in out:
            label = package.local_label or str(len(out) + 1)
            out[package.index_url] = f"pytorch-{label}"
    return out


def _s(text: str) -> str:
    """A TOML basic string (JSON string escaping is valid TOML)."""
    return json.dumps(text, ensure_ascii=False)
