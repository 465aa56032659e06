"""The target Python environment, read from its files by a script run inside its interpreter.

`probe_python_env` runs `_target.py` as `[interpreter, "-c", <script text>]` (standard library only,
Python 3.6+, never imports a framework) and `parse_target_output` turns the JSON it prints into
`PythonEnvFacts`: the interpreter, every installed distribution, and how each GPU framework was
built (from torch/version.py, TF's build_info.py, version labels like `+cu121`, nvidia-* pins ...).

Recorded machine fixtures answer this command under the key `<interpreter> -c {target-script}`
(the script's text is the third argv item; it starts with `# gpuenv-target-probe`).
"""

from __future__ import annotations

import json
import ntpath
import posixpath
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from gpuenv.facts import CondaPackageFacts, DistributionFacts, PythonEnvFacts
from gpuenv.probe.access import CommandResult, MachineAccess
from gpuenv.probe.builds import (
    FrameworkRecord,
    as_mapping,
    as_mappings,
    as_strs,
    get_str,
    interpret_build,
)

PROBE_VERSION = 1  # the document version _target.py prints


@dataclass(frozen=True)
class TargetProbe:
    env: PythonEnvFacts
    binary_candidates: tuple[tuple[str, str], ...] = ()  # (path, owning distribution or "")


@lru_cache(maxsize=1)
def script_text() -> str:
    """The text of `_target.py`, the script run inside the target interpreter."""
    return resources.files("gpuenv.probe").joinpath("_target.py").read_text(encoding="utf-8")


def default_interpreter(environ: Mapping[str, str], machine: MachineAccess) -> str:
    """The active venv's python, else the active conda env's, else python3 (python on Windows)."""
    windows = machine.system() == "Windows"
    join = ntpath.join if windows else posixpath.join
    if environ.get("VIRTUAL_ENV"):
        parts: tuple[str, ...] = ("Scripts", "python.exe") if windows else ("bin", "python")
        return join(environ["VIRTUAL_ENV"], *parts)
    if environ.get("CONDA_PREFIX"):
        parts = ("python.exe",) if windows else ("bin", "python")
        return join(environ["CONDA_PREFIX"], *parts)
    return "python" if windows else "python3"


def probe_python_env(
    machine: MachineAccess, interpreter: str, timeout: float = 30.0
) -> TargetProbe:
    """Run the target script in `interpreter`; every failure becomes a problem, never an error."""
    try:
        script = script_text()
    except OSError as exc:
        return _failed(interpreter, f"the target probe script is missing: {exc}")
    try:
        result = machine.run([interpreter, "-c", script], timeout=timeout)
    except Exception as exc:  # a MachineAccess should not raise; the probe must not either
        return _failed(interpreter, f"running {interpreter} failed: {exc}")
    problem = _run_problem(result, interpreter, timeout)
    if problem is not None:
        return _failed(interpreter, problem)
    return parse_target_output(result.stdout, interpreter)


def _run_problem(result: CommandResult, interpreter: str, timeout: float) -> str | None:
    if result.not_found:
        return f"interpreter {interpreter} not found"
    if result.timed_out:
        return f"{interpreter} timed out after {timeout:g} s"
    if result.error:
        return f"{interpreter} could not start: {result.error}"
    if result.stopped:
        return result.problem()
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        last = f": {lines[-1].strip()[:300]}" if lines else ""
        hint = " (the probe needs Python 3.6 or newer)" if "SyntaxError" in last else ""
        return f"{interpreter} exited with {result.returncode}{last}{hint}"
    return None


def _failed(interpreter: str, problem: str) -> TargetProbe:
    return TargetProbe(
        PythonEnvFacts(interpreter=interpreter, python_version=None, problems=(problem,))
    )


def parse_target_output(text: str, interpreter: str) -> TargetProbe:
    """The facts in the document `_target.py` printed; garbled output gives a problem instead."""
    doc, problem = _load(text)
    if doc is None:
        return _failed(interpreter, problem)
    info = as_mapping(doc.get("interpreter"))
    problems = list(as_strs(doc.get("problems")))
    if doc.get("probe_version") != PROBE_VERSION:
        problems.append(
            f"probe document version {doc.get('probe_version')!r} is not {PROBE_VERSION}"
        )
    if not info:
        problems.append("the probe document has no interpreter section")
    dists = tuple(_distribution(raw) for raw in as_mappings(doc.get("distributions")))
    candidates = tuple(
        (str(raw["path"]), str(raw.get("distribution") or ""))
        for raw in as_mappings(doc.get("binary_candidates"))
        if isinstance(raw.get("path"), str)
    )
    frameworks = tuple(
        interpret_build(_record(raw, dists, candidates))
        for raw in as_mappings(doc.get("frameworks"))
        if isinstance(raw.get("name"), str)
    )
    env = PythonEnvFacts(
        interpreter=interpreter,
        python_version=get_str(info, "version"),
        implementation=get_str(info, "implementation"),
        prefix=get_str(info, "prefix"),
        env_kind=_env_kind(info),
        manager=_manager(info, dists),
        platform_machine=get_str(info, "machine"),
        sys_platform=get_str(info, "sys_platform"),
        libc=get_str(info, "libc"),
        site_packages=as_strs(info.get("site_packages")),
        distributions=dists,
        frameworks=frameworks,
        problems=tuple(problems),
        conda_packages=tuple(
            _conda_package(raw)
            for raw in as_mappings(doc.get("conda_packages"))
            if get_str(raw, "name")
        ),
    )
    return TargetProbe(env, candidates)


def _conda_package(raw: Mapping[str, Any]) -> CondaPackageFacts:
    return CondaPackageFacts(
        name=get_str(raw, "name") or "",
        version=get_str(raw, "version"),
        build=get_str(raw, "build"),
        channel=get_str(raw, "channel"),
        subdir=get_str(raw, "subdir"),
        url=get_str(raw, "url"),
        problem=get_str(raw, "problem"),
    )


def _load(text: str) -> tuple[dict[str, Any], str] | tuple[None, str]:
    body = text.strip()
    if not body:
        return None, "the target interpreter printed nothing"
    start = max(body.find('{"probe_version"'), 0)  # tolerate a banner printed before it
    try:
        doc, _ = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as exc:
        return None, f"could not read the target probe's output ({exc.msg}): {body[:80]!r}"
    except RecursionError:
        return None, f"could not read the target probe's output (nested too deep): {body[:80]!r}"
    if not isinstance(doc, dict) or "probe_version" not in doc:
        return None, f"the target interpreter printed no probe document: {body[:80]!r}"
    return doc, ""


def _distribution(raw: Mapping[str, Any]) -> DistributionFacts:
    return DistributionFacts(
        name=get_str(raw, "name") or "",
        version=get_str(raw, "version") or "",
        installer=get_str(raw, "installer"),
        requires=as_strs(raw.get("requires")),
        location=get_str(raw, "location"),
        direct_url=get_str(raw, "direct_url"),
        editable=raw.get("editable") is True,
        problem=get_str(raw, "problem"),
    )


def _record(
    raw: Mapping[str, Any],
    dists: tuple[DistributionFacts, ...],
    candidates: tuple[tuple[str, str], ...],
) -> FrameworkRecord:
    location = get_str(raw, "location")
    here = tuple(d for d in dists if d.location == location)
    names = {get_str(d, "name") for d in as_mappings(raw.get("distributions"))}
    files: dict[str, Mapping[str, Any]] = {}
    problems = list(as_strs(raw.get("problems")))
    for path, found in as_mapping(raw.get("files")).items():
        entry = as_mapping(found)
        files[str(path)] = as_mapping(entry.get("values"))
        if get_str(entry, "problem"):
            problems.append(f"{path}: {entry['problem']}")
    return FrameworkRecord(
        name=str(raw["name"]),
        location=location,
        dists=tuple(d for d in here if d.name in names),
        site_dists=here,
        files=files,
        problems=tuple(problems),
        binaries=tuple(path for path, _ in candidates),
    )


def _env_kind(info: Mapping[str, Any]) -> str | None:
    if "is_venv" not in info:
        return None
    if info.get("is_venv") is True:
        return "venv"
    return "conda" if info.get("conda_meta") is True else "system"


def _manager(info: Mapping[str, Any], dists: tuple[DistributionFacts, ...]) -> str | None:
    raw_prefix = get_str(info, "prefix")
    if raw_prefix is None:
        return None
    prefix = raw_prefix.replace("\\", "/") + "/"
    if "/.pixi/envs/" in prefix:
        return "pixi"
    if info.get("is_venv") is not True and info.get("conda_meta") is True:
        return "conda"
    if "uv" in as_mapping(info.get("pyvenv_cfg")):
        return "uv"
    installers = Counter((d.installer or "").lower() for d in dists if d.installer)
    if installers and installers.most_common(1)[0][0] == "uv":
        return "uv"
    return "poetry" if "/pypoetry/virtualenvs/" in prefix else "pip"
