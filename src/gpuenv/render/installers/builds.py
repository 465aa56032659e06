"""What a pip line cannot install: a package that must come from its own index alone (the
default index holds the same version in another build), and extensions built from source. Both
become commands run after the env's install, and notes that say what a build needs."""

from __future__ import annotations

from gpuenv.kb.query.cuda import MVC
from gpuenv.plan.model import EnvPlan, PackageChoice, Plan, SourceBuild
from gpuenv.render.installers.common import q, windows


def later_commands(plan: Plan, env: EnvPlan, install: str, exclusive: bool = True) -> list[str]:
    """Commands after the main install, in order: packages from their own index (unless the
    installer routed them already: `exclusive` False), then source builds. `install` runs the
    env's installer: '.venv/bin/python -m pip install', 'uv pip install --python .venv'."""
    out = []
    if exclusive:
        out += [
            f"{install} --no-deps --index-url {q(str(p.index_url))} {q(p.requirement)}"
            for p in env.packages
            if p.exclusive_index and p.index_url and p.conda is None and p.source_build is None
        ]
    for package in env.packages:
        if package.source_build is not None:
            out += build_lines(plan, package.source_build, install)
    return out


def build_lines(plan: Plan, build: SourceBuild, install: str) -> list[str]:
    """The clone (apex) and the build command with its variables, in the target's shell."""
    command = build.command.replace("pip install", install, 1)
    lines = []
    if build.clone:  # built from a checkout: the command's '.' is the clone's folder
        folder = build.clone.rstrip("/").rsplit("/", 1)[-1]
        lines.append(f"git clone {q(build.clone)}")
        if command.endswith(" ."):
            command = f"{command[:-2]} ./{folder}"
    if windows(plan):
        env = "; ".join(f'$env:{k}="{v}"' for k, v in build.env)
        lines.append(f"{env}; {command}" if env else command)
    else:
        env = " ".join(f"{k}={q(v)}" for k, v in build.env)
        lines.append(f"{env} {command}".strip())
    return lines


def build_notes(env: EnvPlan) -> list[str]:
    out = []
    for package in env.packages:
        build = package.source_build
        if build is not None:
            out.append(_build_note(package, build))
        elif package.exclusive_index and package.index_url and package.conda is None:
            out.append(
                f"{package.name} {package.version} is installed from {package.index_url} alone: "
                "the package index has the same version built for another CUDA, and pip would "
                "take either."
            )
    return out


def _build_note(package: PackageChoice, build: SourceBuild) -> str:
    same = "exactly" if build.nvcc_match == "minor" else "the same major (and best the same minor)"
    if build.toolkit:
        have = f"the machine has it at {build.toolkit} (set CUDA_HOME to it for the build)"
    elif build.toolkits_known:
        have = (
            f"no CUDA {build.nvcc} toolkit was found on the machine: install it and put its "
            "nvcc first on PATH (or set CUDA_HOME)"
        )
    else:
        have = f"the target's toolkits are not known (declared): have CUDA {build.nvcc}'s nvcc"
    name = f"{package.name} {package.version}".strip()
    if package.driver_how == MVC:
        have += (
            f"; the driver runs CUDA {build.nvcc} code under minor-version compatibility only, "
            "so the build must hold SASS for the target GPUs (TORCH_CUDA_ARCH_LIST), not PTX"
        )
    return (
        f"{name} is built from source ({build.why}): it needs nvcc of CUDA {build.nvcc}, "
        f"{same} as torch's CUDA; {have}. --no-build-isolation builds it against the torch "
        "installed in the env; MAX_JOBS bounds the parallel compiler jobs (each can take "
        "several GB of memory)."
    )
