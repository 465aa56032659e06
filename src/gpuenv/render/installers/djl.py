"""DJL / QuPath: a launcher script that sets the environment variables DJL reads (which PyTorch
native version and CUDA flavor to load) and puts a conda env holding that CUDA's runtime and cuDNN
on the library path, and the environment.yml of that env."""

from __future__ import annotations

from gpuenv.plan.model import DjlPlan, Plan
from gpuenv.render.installers.common import Rendered, Where, header, q

ENV_NAME = "djl-cuda"


def djl_environment_yml(plan: Plan, djl: DjlPlan) -> str:
    lines = [header(plan).rstrip("\n"), f"# CUDA {djl.cuda} libraries for DJL {djl.djl}"]
    if plan.conda_override_cuda or plan.target.driver_max_cuda:
        cuda = plan.target.driver_max_cuda or djl.cuda
        lines.append(f"# without the GPU: CONDA_OVERRIDE_CUDA={cuda} conda env create -f <this>")
    lines += [f"name: {ENV_NAME}", "channels:", "  - conda-forge", "  - nodefaults"]
    lines += ["dependencies:", f"  - cuda-version={djl.cuda}", "  - cuda-runtime"]
    if djl.cudnn_major:
        lines.append(f"  - cudnn={djl.cudnn_major}.*")
    return "\n".join(lines) + "\n"


def launcher_sh(plan: Plan, djl: DjlPlan) -> str:
    lines = ["#!/bin/sh", header(plan).rstrip("\n")]
    lines.append(f"# {djl.why}. Usage: ./djl-launch.sh /path/to/QuPath [args]")
    lines += [f"export {name}={q(value)}" for name, value in djl.env]
    if djl.cuda:
        lines += [
            f'DJL_CUDA_ENV="${{DJL_CUDA_ENV:-$(conda info --base)/envs/{ENV_NAME}}}"',
            'export LD_LIBRARY_PATH="$DJL_CUDA_ENV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"',
        ]
    lines.append('exec "$@"')
    return "\n".join(lines) + "\n"


def launcher_cmd(plan: Plan, djl: DjlPlan) -> str:
    lines = ["@echo off", header(plan, "rem").rstrip("\n")]
    lines += [f"set {name}={value}" for name, value in djl.env]
    if djl.cuda:
        lines += [
            f'if "%DJL_CUDA_ENV%"=="" set DJL_CUDA_ENV=%USERPROFILE%\\miniforge3\\envs\\{ENV_NAME}',
            "set PATH=%DJL_CUDA_ENV%\\Library\\bin;%PATH%",
        ]
    lines.append("%*")
    return "\r\n".join(lines) + "\r\n"


def render_djl(plan: Plan, where: Where | None = None) -> Rendered:
    """A launcher script (and a conda env for CUDA): files the commands need, so without -o
    they name DIR."""
    where = where or Where()
    djl = plan.djl
    if djl is None:
        return Rendered()
    windows = plan.target.platform.startswith("windows")
    files = {
        "djl-launch.cmd" if windows else "djl-launch.sh": (
            launcher_cmd(plan, djl) if windows else launcher_sh(plan, djl)
        )
    }
    launcher = where.file(next(iter(files)))
    commands = [
        f"{launcher.replace('/', chr(92))} path\\to\\QuPath.exe"
        if windows
        else f"{launcher if '/' in launcher else './' + launcher} /path/to/QuPath"
    ]
    if djl.cuda:
        files["environment-djl.yml"] = djl_environment_yml(plan, djl)
        commands.insert(0, f"conda env create -f {where.file('environment-djl.yml')}")
    return Rendered(files=files, commands=tuple(commands), needs_files=where.folder is None)
