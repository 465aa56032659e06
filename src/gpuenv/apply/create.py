"""`gpuenv plan ... --create PATH`: create the environment a plan describes, install it with the
installer's own progress output, then probe the new env and check it is what was planned (the
right version, the right build, the right CUDA). Never touches an existing env unless told to.

The only planning code that runs commands; it lives outside plan/ so plan/ stays pure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gpuenv.apply.verify import Check, verify
from gpuenv.edges import process
from gpuenv.edges.output import stderr_stream, write_file
from gpuenv.errors import GpuenvError
from gpuenv.facts import Snapshot
from gpuenv.plan.model import EnvPlan, Plan

INSTALL_TIMEOUT_S = 3600.0
CREATE_TIMEOUT_S = 600.0
REQUIREMENTS = "gpuenv-plan-requirements.txt"

# argv, timeout, progress stream, extra environment -> exit status; output goes to the progress
# stream as it comes
Runner = Callable[[Sequence[str], float, TextIO, Mapping[str, str]], int]
Prober = Callable[[str], Snapshot]


@dataclass(frozen=True)
class CreateResult:
    path: str
    interpreter: str
    tool: str  # "venv" | "uv" | "conda" | "mamba"
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok is not False for c in self.checks)


def run_streaming(
    argv: Sequence[str], timeout: float, progress: TextIO, extra_env: Mapping[str, str]
) -> int:
    """Run a command through the process gateway, copying its output to `progress` as it comes
    (indented); 124 when it ran past `timeout` (its whole process group is killed then)."""
    indent = _Indented(progress)
    result = process.run_streaming(
        argv, timeout=timeout, on_text=indent.write, env={**os.environ, **extra_env}
    )
    indent.close()
    if result.not_found or result.error:
        raise GpuenvError("cannot-run", f"cannot run {argv[0]}: {result.problem()}")
    if result.stopped:
        raise KeyboardInterrupt
    return 124 if result.timed_out else (result.returncode or 0)


class _Indented:
    """Text written with four spaces before each line (the installer's own output)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.at_line_start = True

    def write(self, text: str) -> None:
        out = []
        for piece in text.splitlines(keepends=True):
            out.append(("    " if self.at_line_start else "") + piece)
            self.at_line_start = piece.endswith(("\n", "\r"))
        with contextlib.suppress(OSError, ValueError):
            self.stream.write("".join(out))
            self.stream.flush()

    def close(self) -> None:
        if not self.at_line_start:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write("\n")


def probe_env(interpreter: str) -> Snapshot:
    from gpuenv.probe import ProbeOptions, probe_machine

    snapshot: Snapshot = probe_machine(
        None, ProbeOptions(interpreter=interpreter, scan_binaries=False)
    )
    return snapshot


def preflight(plan: Plan, path: Path, existing_ok: bool = False) -> None:
    """The checks that need nothing but the plan and the path, before anything is read from the
    network or run: one env that fits, a path that is free (or an env, with existing_ok), an
    installer that can create it."""
    _the_env(plan)
    _check_path(path, existing_ok)
    _tool(plan.installer)


def create_env(
    plan: Plan,
    path: Path,
    *,
    existing_ok: bool = False,
    progress: TextIO | None = None,
    runner: Runner = run_streaming,
    prober: Prober = probe_env,
) -> CreateResult:
    env = _the_env(plan)
    _check_path(path, existing_ok)
    tool = _tool(plan.installer)
    progress = progress or stderr_stream()  # default: stderr, through the writing gateway
    steps = _Steps(progress)
    steps.say(f"creating {tool} environment at {path}")
    interpreter = _create(plan, env, path, tool, existing_ok, runner, progress)
    steps.say(f"installing {len(env.packages)} planned package(s) with {_installer_name(tool)}")
    _install(plan, env, path, interpreter, tool, runner, progress)
    steps.say("probing the new environment")
    snapshot = prober(interpreter)
    return CreateResult(str(path), interpreter, tool, verify(env, snapshot))


class _Steps:
    def __init__(self, progress: TextIO) -> None:
        self.progress = progress
        self.number = 0

    def say(self, text: str) -> None:
        self.number += 1
        self.progress.write(f"[{self.number}/3] {text}\n")
        self.progress.flush()


def _the_env(plan: Plan) -> EnvPlan:
    if not plan.fits or not plan.envs:
        raise GpuenvError(
            "nothing-to-create",
            "the plan does not fit the target, so there is nothing to create",
            hints=("apply one of the plan's smallest changes and plan again",),
        )
    if len(plan.envs) > 1:
        raise GpuenvError(
            "split-plan",
            f"the plan needs {len(plan.envs)} environments; --create makes one",
            hints=("plan each group of packages on its own and --create each",),
        )
    built = [p.name for p in plan.envs[0].packages if p.source_build is not None]
    if built:
        raise GpuenvError(
            "source-build",
            f"the plan builds {', '.join(built)} from source, which --create does not do",
            hints=(
                "run the plan's printed commands (they set the build's variables), or pin a "
                "torch the extension has prebuilt wheels for",
            ),
        )
    return plan.envs[0]


def _check_path(path: Path, existing_ok: bool) -> None:
    if path.exists() and not path.is_dir():
        raise GpuenvError("env-exists", f"{path} exists and is not a folder")
    occupied = path.is_dir() and any(path.iterdir())
    if occupied and not existing_ok:
        raise GpuenvError(
            "env-exists",
            f"{path} already exists and is not empty; gpuenv does not touch an existing env",
            hints=("choose a new path, or pass --existing-ok to install into it",),
        )
    if occupied and not _is_env(path):
        raise GpuenvError("env-exists", f"{path} is not a Python environment (no pyvenv.cfg)")


def _is_env(path: Path) -> bool:
    return (path / "pyvenv.cfg").exists() or (path / "conda-meta").is_dir()


def _tool(installer: str) -> str:
    if installer == "pip":
        return "venv"
    if installer in ("uv", "conda", "mamba"):
        if shutil.which(installer) is None:
            raise GpuenvError(
                "installer-missing",
                f"{installer} is not on PATH",
                hints=("install it, or plan with --installer pip",),
            )
        return installer
    raise GpuenvError(
        "unsupported",
        f"--create does not make {installer} environments",
        hints=("write the files with -o DIR and run the printed commands",),
    )


def _installer_name(tool: str) -> str:
    return {"venv": "pip", "uv": "uv pip"}.get(tool, tool)


def env_python(path: Path) -> Path:
    if os.name == "nt":
        return path / ("python.exe" if (path / "conda-meta").is_dir() else "Scripts/python.exe")
    return path / "bin" / "python"


def _create(
    plan: Plan,
    env: EnvPlan,
    path: Path,
    tool: str,
    existing_ok: bool,
    runner: Runner,
    progress: TextIO,
) -> str:
    python = env_python(path)
    if existing_ok and python.exists():
        return str(python)
    if tool == "venv":
        argv = [_base_python(env.python), "-m", "venv", str(path)]
    elif tool == "uv":
        argv = ["uv", "venv", *(["--python", env.python] if env.python else []), str(path)]
    else:
        from gpuenv.render.installers.conda import environment_yml

        file = _write_beside(path, "gpuenv-environment.yml", environment_yml(plan, env))
        argv = [tool, "env", "create", "-p", str(path), "-f", str(file)]
    override = {"CONDA_OVERRIDE_CUDA": plan.conda_override_cuda} if plan.conda_override_cuda else {}
    _run(runner, argv, CREATE_TIMEOUT_S, progress, override if tool in ("conda", "mamba") else {})
    return str(python)


def _base_python(version: str | None) -> str:
    """An interpreter of the planned Python to create the venv with."""
    current = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if version is None or version == current:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found:
        return found
    raise GpuenvError(
        "no-python",
        f"the plan is for Python {version}, and no python{version} is on PATH",
        hints=("install that Python, or plan with --installer uv (uv fetches Pythons)",),
    )


def _write_beside(path: Path, name: str, text: str) -> Path:
    return _write_file(path.parent / f"{path.name}.{name}", text)


def _write_file(file: Path, text: str) -> Path:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GpuenvError("cannot-write", f"cannot write {file}: {exc.strerror or exc}") from None
    return write_file(file, text)


def _install(
    plan: Plan,
    env: EnvPlan,
    path: Path,
    interpreter: str,
    tool: str,
    runner: Runner,
    progress: TextIO,
) -> None:
    if tool not in ("conda", "mamba"):  # `conda env create` ran its pip section already
        from gpuenv.render.installers.pip import requirements_txt

        requirements = _write_file(path / REQUIREMENTS, requirements_txt(plan, env))
        if tool == "uv":
            argv = ["uv", "pip", "install", "--python", interpreter, "-r", str(requirements)]
        else:
            argv = [interpreter, "-m", "pip", "install", "--progress-bar", "on"]
            argv += ["-r", str(requirements)]
        _run(runner, argv, INSTALL_TIMEOUT_S, progress, {})
    for package in env.packages:
        # the package index holds the same version in another build: only its own index
        if package.exclusive_index and package.index_url and package.conda is None:
            pip = ["uv", "pip", "install", "--python"] if tool == "uv" else [interpreter, "-m"]
            argv = [*pip, interpreter] if tool == "uv" else [*pip, "pip", "install"]
            argv += ["--no-deps", "--index-url", package.index_url, package.requirement]
            _run(runner, argv, INSTALL_TIMEOUT_S, progress, {})


def _run(
    runner: Runner,
    argv: Sequence[str],
    timeout: float,
    progress: TextIO,
    extra_env: Mapping[str, str],
) -> None:
    shown = " ".join(f"{k}={v}" for k, v in extra_env.items())
    progress.write(f"    $ {shown + ' ' if shown else ''}{' '.join(argv)}\n")
    status = runner(argv, timeout, progress, extra_env)
    if status != 0:
        why = "timed out" if status == 124 else f"exited with {status}"
        raise GpuenvError(
            "install-failed",
            f"{argv[0]} {why}",
            cause=" ".join(argv),
            hints=("the output above says why; the partial env is left for inspection",),
        )
