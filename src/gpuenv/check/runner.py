"""Run each framework's checks in a child process of the target interpreter, one at a time.

One process per framework, each with its own timeout, through `gpuenv.edges.process` (its own
process group, killed whole at the deadline or when gpuenv is interrupted: no child outlives
gpuenv). A hang, a crash or an import failure is that framework's result; the others still run.
Which frameworks: those the snapshot found in the env (`python_env.frameworks`), read from files,
so nothing is imported in gpuenv's own process.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import resources

from gpuenv.check.explain_adapter import explainer
from gpuenv.check.judge import Context, judge, machine_has_gpu
from gpuenv.check.model import FRAMEWORKS, CheckReport, DriverGpu
from gpuenv.check.parse import RawRun, read_run
from gpuenv.edges import process
from gpuenv.errors import GpuenvError
from gpuenv.facts import Snapshot
from gpuenv.kb.loader import KnowledgeBase

DEFAULT_TIMEOUT_S = 180.0
KEEP_BYTES = 4 * 1024 * 1024  # of each stream; a larger document is garbled by definition
# snapshot framework names -> the check that covers them
COVERS = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax", "jaxlib": "jax"}
COVERS |= {"cupy": "cupy", "onnxruntime": "onnxruntime"}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CheckOptions:
    frameworks: tuple[str, ...] | None = None  # None: every one installed in the env
    device: int | None = None
    timeout: float = DEFAULT_TIMEOUT_S  # per framework
    bench: bool = False


def installed(snapshot: Snapshot) -> tuple[str, ...]:
    """The checkable frameworks the snapshot found in the env, in check order."""
    env = snapshot.python_env
    found = {COVERS[f.name] for f in (env.frameworks if env else ()) if f.name in COVERS}
    return tuple(name for name in FRAMEWORKS if name in found)


def run_check(
    snapshot: Snapshot,
    options: CheckOptions,
    kb: KnowledgeBase,
    progress: Progress | None = None,
) -> CheckReport:
    interpreter, version = _target(snapshot)
    present = installed(snapshot)
    wanted = options.frameworks if options.frameworks is not None else present
    vision = snapshot.framework("torchvision") is not None
    runs: list[RawRun] = []
    for name in wanted:
        if progress:
            progress(f"checking {name} (at most {options.timeout:g} s) …")
        run = run_framework(interpreter, name, options, torchvision=vision)
        runs.append(run if name in present else _absent(run, interpreter))
        if progress:
            progress(f"{name}: {runs[-1].error or 'finished'} ({runs[-1].seconds:.1f} s)")
    driver_gpus = tuple(DriverGpu(g.index, g.name, g.compute_capability) for g in snapshot.gpus)
    context = Context(
        driver_gpus=driver_gpus,
        machine_has_gpu=machine_has_gpu(driver_gpus, runs),
        kb=kb,
        explain=explainer(snapshot, kb),
        device=options.device,
    )
    results = tuple(judge(run, context) for run in runs)
    notes = () if wanted else (f"no framework to check was found in {interpreter}",)
    return CheckReport(interpreter, version, driver_gpus, results, options.bench, notes)


def _target(snapshot: Snapshot) -> tuple[str, str | None]:
    env = snapshot.python_env
    if env is None or env.python_version is None:
        why = "; ".join(env.problems) if env and env.problems else "it could not be read"
        interpreter = env.interpreter if env else "the target interpreter"
        raise GpuenvError(
            "target-unreadable",
            f"cannot check {interpreter}: {why}",
            hints=("give the env's interpreter with --python PATH",),
        )
    interpreter = env.interpreter
    if os.sep in interpreter or "/" in interpreter:
        interpreter = os.path.abspath(interpreter)  # the children run in a temporary folder
    return interpreter, env.python_version


def _absent(run: RawRun, interpreter: str) -> RawRun:
    """A framework asked for that the snapshot did not find, run all the same (PYTHONPATH or a
    .pth file may still make it importable): when its import finds no such module, it is not
    installed."""
    missing = f"ModuleNotFoundError: No module named '{run.framework}'"
    if not any(s.name == "import" and s.detail == missing for s in run.report.steps):
        return run
    return replace(
        run, outcome="not_installed", error=f"{run.framework} is not installed in {interpreter}"
    )


def run_framework(
    interpreter: str, name: str, options: CheckOptions, *, torchvision: bool = False
) -> RawRun:
    """One framework's checks in a child process of `interpreter`, read defensively."""
    script = resources.files("gpuenv.check").joinpath("_harness.py")
    folder = tempfile.TemporaryDirectory(prefix=f"gpuenv-check-{name}-")
    with resources.as_file(script) as harness, folder as workdir:
        argv = [interpreter, str(harness), name, _options_json(options, torchvision, workdir)]
        started = time.monotonic()
        result = process.run(
            argv, timeout=options.timeout, env=child_env(), keep=KEEP_BYTES, cwd=workdir
        )
        seconds = time.monotonic() - started
    start_error = None
    if result.not_found:
        start_error = f"interpreter {interpreter} not found"
    elif result.error:
        start_error = f"{interpreter} could not start: {result.error}"
    return read_run(
        name,
        stdout=result.stdout,
        stderr=result.stderr,
        returncode=result.returncode,
        timed_out=result.timed_out,
        stopped=result.stopped,
        start_error=start_error,
        seconds=seconds,
        timeout=options.timeout,
    )


def _options_json(options: CheckOptions, torchvision: bool, workdir: str) -> str:
    import json

    return json.dumps(
        {
            "device": options.device,
            "bench": options.bench,
            "torchvision": torchvision,
            "budget": options.timeout,
            "workdir": workdir,
        }
    )


def child_env(environ: Sequence[tuple[str, str]] | None = None) -> dict[str, str]:
    """The child's environment: gpuenv's, with bytecode writing off, so that checking an env
    leaves no new files in it (nor beside gpuenv's scripts)."""
    env = dict(environ if environ is not None else os.environ.items())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
