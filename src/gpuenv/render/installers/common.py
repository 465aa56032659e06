"""Pieces every installer renderer shares: the header naming the target, file names per env,
shell quoting. Pure string building."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)

from gpuenv.plan.model import EnvPlan, PackageChoice, Plan


@dataclass(frozen=True)
class Rendered:
    """What an installer reads: files by name, and the commands that use them.

    Commands are runnable as printed: they name the files where `-o` wrote them, or carry
    everything inline. When an installer cannot do without its files (pixi.toml, a Dockerfile)
    and they were not written, `needs_files` is set and the commands name them under `DIR`."""

    files: dict[str, str] = field(default_factory=dict)
    commands: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    needs_files: bool = False


@dataclass(frozen=True)
class Where:
    """Where the plan lands: the folder its files were written to (None: not written), and the
    environment the user named with --python (None: a new one is created)."""

    folder: str | None = None
    interpreter: str | None = None

    def file(self, name: str) -> str:
        """A written file as a command names it (DIR/name when the files were not written)."""
        folder = self.folder if self.folder is not None else "DIR"
        return name if folder in ("", ".") else f"{folder.rstrip('/')}/{name}"


def q(text: str) -> str:
    return shlex.quote(text)


def windows(plan: Plan) -> bool:
    return plan.target.platform.startswith("windows")


def with_env(plan: Plan, name: str, value: str, command: str) -> str:
    """`command` run with an environment variable set, in the target's shell: POSIX sh, or
    PowerShell on Windows (cmd.exe users: `set NAME=value` first)."""
    if windows(plan):
        return f'$env:{name}="{value}"; {command}'
    return f"{name}={value} {command}"


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


def pip_packages(env: EnvPlan, exclusive: bool = False) -> list[PackageChoice]:
    """The wheels one pip line installs: not conda's, not built from source, and (unless
    `exclusive`: uv routes each package to its index) not those needing an index of their own."""
    return [
        p
        for p in env.packages
        if p.conda is None and p.source_build is None and (exclusive or not p.exclusive_index)
    ]


def index_lines(env: EnvPlan) -> list[str]:
    """PyTorch's (or NVIDIA's) indexes as extra indexes: the pinned local labels (+cu121) exist
    only there, and everything else still comes from the installer's own index."""
    packages = pip_packages(env)
    out = [
        f"--extra-index-url {url}" for url in dict.fromkeys(p.index_url for p in packages) if url
    ]
    out += [f"--find-links {url}" for url in dict.fromkeys(p.find_links for p in packages) if url]
    return out


def requirement_lines(env: EnvPlan, exclusive: bool = False) -> list[str]:
    return [p.requirement for p in pip_packages(env, exclusive)] + list(env.carried)


def python_command(plan: Plan) -> str:
    """The interpreter that creates the env: of the planned Python version when known."""
    python = plan.envs[0].python if plan.envs else plan.target.python
    if plan.target.platform.startswith("windows"):
        return f"py -{python}" if python else "python"
    return f"python{python}" if python else "python3"


def pip_args(packages: Sequence[PackageChoice], env: EnvPlan) -> str:
    shown = [p for p in packages if p in pip_packages(env)]
    reqs = " ".join(q(r) for r in [p.requirement for p in shown] + list(env.carried))
    flags = " ".join(q(part) for line in index_lines(env) for part in line.split(" ", 1))
    return f"{reqs} {flags}".strip()


@dataclass(frozen=True)
class Carried:
    """A requirement line carried from the user's file, read for manifests that are not
    requirements files (pyproject, pixi.toml): a PEP 508 requirement, or a local path and, for a
    wheel or sdist file, the distribution it holds."""

    text: str
    requirement: Requirement | None = None
    path: str | None = None
    name: str | None = None  # of a local wheel/sdist file


def carried(env: EnvPlan) -> list[Carried]:
    out = []
    for line in env.carried:
        try:
            out.append(Carried(line, requirement=Requirement(line)))
        except InvalidRequirement:
            out.append(Carried(line, path=line, name=_file_name(line)))
    return out


def _file_name(path: str) -> str | None:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    try:
        if base.endswith(".whl"):
            return str(parse_wheel_filename(base)[0])
        if base.endswith((".tar.gz", ".zip")):
            return str(parse_sdist_filename(base)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return None


def marker_holds(plan: Plan, requirement: Requirement) -> bool:
    """Does the requirement's environment marker hold on the plan's target?"""
    if requirement.marker is None:
        return True
    return Marker(str(requirement.marker)).evaluate(_marker_environment(plan))


def _marker_environment(plan: Plan) -> dict[str, str]:
    os_name, _, arch = plan.target.platform.partition("-")
    python = plan.target.python or "3.12"
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": {"windows": "win32", "macos": "darwin"}.get(os_name, os_name),
        "platform_system": {"windows": "Windows", "macos": "Darwin"}.get(os_name, "Linux"),
        "platform_machine": "AMD64" if os_name == "windows" else arch,
        "os_name": "nt" if os_name == "windows" else "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
