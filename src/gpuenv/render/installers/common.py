"""Pieces every installer renderer shares: the header naming the target, file names per env,
shell quoting. Pure string building."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuenv.plan.model import EnvPlan, PackageChoice, Plan


@dataclass(frozen=True)
class Rendered:
    """What an installer reads: files by name, and the commands that use them."""

    files: dict[str, str] = field(default_factory=dict)
    commands: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def q(text: str) -> str:
    return shlex.quote(text)


def target_line(plan: Plan) -> str:
    t = plan.target
    parts = [t.platform, f"Python {t.python}" if t.python else "Python unknown"]
    if t.jetpack:
        parts.append(f"JetPack {t.jetpack}")
    elif t.driver:
        parts.append(f"driver {t.driver} (CUDA {t.driver_max_cuda or '?'})")
    else:
        parts.append("driver unknown")
    parts.extend(t.gpus or ("no GPU",))
    return ", ".join(parts)


def header(plan: Plan, comment: str = "#") -> str:
    lines = [
        f"gpuenv plan for {target_line(plan)}",
        f"wants: {' '.join(plan.wants)}; verdict: {plan.verdict}",
    ]
    if plan.min_driver:
        lines.append(f"needs an NVIDIA driver >= {plan.min_driver}")
    return "".join(f"{comment} {line}\n" for line in lines)


def env_file(plan: Plan, env: EnvPlan, stem: str, suffix: str) -> str:
    """requirements.txt for one env; requirements-env-torch.txt when the plan splits."""
    return f"{stem}{suffix}" if len(plan.envs) == 1 else f"{stem}-{env.name}{suffix}"


def index_lines(env: EnvPlan) -> list[str]:
    """PyTorch's (or NVIDIA's) indexes as extra indexes: the pinned local labels (+cu121) exist
    only there, and everything else still comes from the installer's own index."""
    out = [f"--extra-index-url {url}" for url in env.index_urls]
    out += [f"--find-links {url}" for url in env.find_links]
    return out


def requirement_lines(env: EnvPlan) -> list[str]:
    return [p.requirement for p in env.packages] + list(env.carried)


def python_command(plan: Plan) -> str:
    """The interpreter that creates the env: of the planned Python version when known."""
    python = plan.envs[0].python if plan.envs else plan.target.python
    if plan.target.platform.startswith("windows"):
        return f"py -{python}" if python else "python"
    return f"python{python}" if python else "python3"


def pip_args(packages: Sequence[PackageChoice], env: EnvPlan) -> str:
    reqs = " ".join(q(r) for r in [p.requirement for p in packages] + list(env.carried))
    flags = " ".join(q(part) for line in index_lines(env) for part in line.split(" ", 1))
    return f"{reqs} {flags}".strip()
