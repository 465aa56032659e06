"""The fix made specific to the reporter's facts: the doctor's fix when one of its findings has
the cause, else what the planner picks for those facts (the build for that GPU and driver, the
Python a release needs, one environment per framework), with the driver a CUDA needs and the
library wheel a missing SONAME comes from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuenv.diagnose.context import gpu_compute_capability
from gpuenv.diagnose.findings import Finding, Fix
from gpuenv.errors import GpuenvError
from gpuenv.explain.model import Fact
from gpuenv.explain.offered import asked_specifier, listed_machines
from gpuenv.explain.scan import Hit
from gpuenv.explain.served import (
    asked,
    cuda_build_unpublished,
    has_platform,
    machine_platforms,
    platform_of,
    published_platforms,
    python_of,
    release_key,
    releases_asked,
    serves,
    value,
)
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.kb.model import Row
from gpuenv.kb.patterns import compiled
from gpuenv.kb.query.cuda import mvc_min_driver, pip_package, toolkit_min_driver
from gpuenv.kb.query.torch import torch_find_links, torch_index_url
from gpuenv.kb.show import python_span
from gpuenv.parse.pip import parse_wheel_name
from gpuenv.versions import CudaVersion

FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")
_PLANNED = {"tensorflow-gpu": "tensorflow", "pytorch": "torch", "jaxlib": "jax"}


@dataclass(frozen=True)
class Case:
    """What a fix is made from: the facts read, the reporter's snapshot, and the names of the
    facts derived.judged found true (judged once, for the rules and the fix alike)."""

    facts: Sequence[Fact]
    snapshot: Snapshot
    kb: KnowledgeBase
    judged: frozenset[str]


def make_fix(
    cause: str, case: Case, findings: Sequence[Finding], hits: Sequence[Hit]
) -> Fix | None:
    doctor = next((f.fix for f in findings if f.cause == cause and f.fix and f.fix.summary), None)
    if doctor is not None:
        return doctor
    builder = BUILDERS.get(cause)
    built = builder(case) if builder else None
    if built is not None:
        return built
    hints = cause_hints(cause, hits, case.kb)
    return Fix(summary=hints[0], notes=hints[1:]) if hints else None


def cause_hints(cause: str, hits: Sequence[Hit], kb: KnowledgeBase) -> tuple[str, ...]:
    """What the lines voting for `cause` advise, each said once: a rule's hints first (they say
    what the message means in its setting), then the hints of the patterns whose own cause it
    is (a pattern a rule turned to another cause advises on its own cause, not this one)."""
    rules = compiled(kb).rule_by_id
    voting = [hit for hit in hits if hit.cause == cause]
    ruled = [h for hit in voting if hit.rule in rules for h in rules[hit.rule].hints]
    plain = [h for hit in voting if hit.pattern.cause == cause for h in hit.pattern.hints]
    return tuple(dict.fromkeys(ruled + plain))


def _framework(facts: Sequence[Fact]) -> str:
    named = [f.value for f in facts if f.name == "framework" and f.value in FRAMEWORKS]
    if named:
        return named[0]
    for name in FRAMEWORKS[1:3]:
        if value(facts, f"{name}_version"):
            return name
    return "torch"


def plan_fix(
    wants: Sequence[str], snapshot: Snapshot, kb: KnowledgeBase, lead: str = "", gpu: bool = True
) -> Fix | None:
    """What `gpuenv plan WANTS` picks for the reporter's machine, as a fix; with `gpu`, only
    when it is a GPU build (a CPU build is no fix for a GPU failure)."""
    from gpuenv.plan.request import request_from_arguments
    from gpuenv.plan.resolve import make_plan
    from gpuenv.render.installers import render_installer

    try:
        plan = make_plan(request_from_arguments(list(wants)), snapshot, kb, "pip")
        rendered = render_installer(plan)
    except GpuenvError:
        return None
    if not plan.fits:
        changes = [c.text for c in plan.changes]
        if not changes:
            return None
        return Fix(
            f"{lead}Nothing fits as the machine is: {changes[0]}.", (), "pip", tuple(changes[1:])
        )
    if gpu and not any(p.cuda for p in plan.packages()):
        return None
    chosen = ", ".join(p.requirement for p in plan.packages())
    split = " in one environment each" if len(plan.envs) > 1 else ""
    notes = [f"The builds chosen need driver ≥ {plan.min_driver}."] if plan.min_driver else []
    notes += list(plan.notes)
    return Fix(
        f"{lead}Install {chosen}{split} (`gpuenv plan {' '.join(wants)}`).",
        tuple(rendered.commands),
        "pip",
        tuple(notes),
    )


def _cuda_of(facts: Sequence[Fact]) -> CudaVersion | None:
    for name in ("torch_cuda", "tensorflow_cuda"):
        named = value(facts, name)
        if named and named.lower() != "none":
            return CudaVersion.parse(named)
    version = value(facts, "torch_version") or ""
    label = re.search(r"\+cu(\d{2,3})$", version)
    if label:
        return CudaVersion.parse("cu" + label.group(1))
    require = value(facts, "nvidia_require_cuda")
    found = re.search(r"(\d+\.\d+)", require or "")
    return CudaVersion.parse(found.group(1)) if found else None


def _driver_need(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> str:
    cuda = _cuda_of(facts)
    if cuda is None:
        return ""
    os_name = (
        "windows" if snapshot.host.os.value == "windows" or snapshot.host.wsl.value else "linux"
    )
    native = toolkit_min_driver(kb, cuda, os_name)
    compat = mvc_min_driver(kb, cuda.major, os_name)
    if native is None:
        return ""
    have = value(facts, "driver_max_cuda")
    also = f" (≥ {compat} with minor-version compatibility)" if compat and compat != native else ""
    return f"CUDA {cuda.short} needs driver ≥ {native}{also}" + (
        f"; this driver supports CUDA {have}. " if have else ". "
    )


def _driver_fix(case: Case) -> Fix | None:
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    lead = _driver_need(facts, snapshot, kb)
    framework = _framework(facts)
    planned = plan_fix([framework], snapshot, kb, lead + "Upgrade the driver, or: ")
    if planned is not None and planned.commands:
        return planned
    return Fix(lead + "Upgrade the driver.", (), "system") if lead else None


def _container_fix(case: Case) -> Fix | None:
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    lead = _driver_need(facts, snapshot, kb)
    if not lead:
        return None
    have = value(facts, "driver_max_cuda")
    image = f"use an image built for CUDA ≤ {have}" if have else "use an image for an older CUDA"
    return Fix(
        f"{lead}Upgrade the host driver, or {image}.",
        (),
        "docker",
        ("NVIDIA_DISABLE_REQUIRE=1 skips the check but not the incompatibility.",),
    )


def _framework_fix(case: Case) -> Fix | None:
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    if "gpu_at_driver_ceiling" in case.judged:
        # a newer driver is no fix, and a plan blind to the GPU's architecture may pick a build
        # it cannot run: the rule's hint says what to do
        known = any(gpu_compute_capability(kb, gpu) for gpu in snapshot.gpus)
        planned = plan_fix([_framework(facts)], snapshot, kb) if known else None
        return planned if planned is not None and planned.commands else None
    return plan_fix([_framework(facts)], snapshot, kb)


def _package_fix(case: Case) -> Fix | None:
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    package = value(facts, "package") or ""
    name = re.split(r"[=<>!~\[ ]", package, maxsplit=1)[0].lower()
    name = _PLANNED.get(name, name)
    if name not in FRAMEWORKS:
        return None
    return plan_fix([name], snapshot, kb)


def _python_fix(case: Case) -> Fix | None:
    """The Pythons the named release (or any release of the package) has wheels for, from the
    index's file lists in wheels.toml, against the reporter's Python; else the planner's fix."""
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    name, version, label = asked(facts)
    if not name:
        return None
    releases = [r for r in kb.rows("wheels", "release") if r["package"] == name]
    python = python_of(facts, snapshot)
    platform = platform_of(snapshot)
    fits = [r for r in releases if serves(r, python, platform)] if python else []
    row = next((r for r in releases if version and r["version"] == version), None)
    if row is not None and (python is None or not serves(row, python, None)):
        span = python_span(row["python_tags"])
        pinned = _pinned(name, str(row["version"]), label, kb)
        if python is None:
            return _python_env_fix(
                f"{name} {version} has wheels for CPython {span} only: install it with one of "
                "those Pythons (pip lists only the releases that have a wheel for the Python "
                "it runs on).",
                row,
                pinned,
                snapshot,
            )
        later = [r for r in fits if release_key(r) >= release_key(row)]
        nearest = min(later, key=release_key, default=None)
        other = (
            f", or {name} {nearest['version']}, the first release after it for Python {python}"
            if nearest
            else ""
        )
        return _python_env_fix(
            f"{name} {version} has wheels for CPython {span} only, this Python is {python}: "
            f"install it in a Python {span} environment{other}.",
            row,
            pinned,
            snapshot,
        )
    named = re.findall(r"cp3\d+", value(facts, "python_tags") or "")
    if row is None and named and version:
        span = python_span(named)
        mine = f", this Python is {python}" if python else ""
        return _python_env_fix(
            f"{name} {version} has wheels for CPython {span} only (as the installer lists "
            f"them){mine}: install it in a Python {span} environment, or a release of "
            f"{name} built for your Python.",
            {"python_tags": named},
            _pinned(name, version, label, kb),
            snapshot,
        )
    if releases and python and not version and not fits:
        newest = max(releases, key=release_key)
        where = f" on {platform}" if platform else ""
        span = python_span(newest["python_tags"])
        return _python_env_fix(
            f"No {name} release has wheels for CPython {python}{where}; the newest, "
            f"{newest['version']}, has them for CPython {span}: use one of those Pythons.",
            newest,
            name,
            snapshot,
        )
    return _package_fix(case)


def _pinned(name: str, version: str, label: str | None, kb: KnowledgeBase) -> str:
    """The pip arguments that install that build: a local build of PyTorch's comes from its
    index (or, for 1.8-1.10, its find-links page), which the default index does not serve."""
    if label is None:
        return f"{name}=={version}"
    requirement = f"{name}=={version}+{label}"
    if name not in ("torch", "torchvision", "torchaudio"):
        return requirement
    links = torch_find_links(kb, version, label) if name == "torch" else None
    if links:
        return f"{requirement} -f {links}"
    index = torch_index_url(kb, label)
    return f"{requirement} --index-url {index}" if index else requirement


def _python_env_fix(summary: str, row: Row, requirement: str, snapshot: Snapshot) -> Fix:
    minors = [int(t[3:]) for t in row["python_tags"] if re.fullmatch(r"cp3\d+", t)]
    if not minors:
        return Fix(summary, (), "pip")
    newest = f"3.{max(minors)}"
    if snapshot.host.os.value == "windows":
        commands = (
            f"py -{newest} -m venv .venv",
            f".venv\\Scripts\\python -m pip install {requirement}",
        )
    else:
        commands = (
            f"python{newest} -m venv .venv",
            f".venv/bin/python -m pip install {requirement}",
        )
    return Fix(summary, commands, "pip")


def _wheel_fix(case: Case) -> Fix | None:
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    wheel = parse_wheel_name(value(facts, "wheel") or "")
    if wheel is None:
        return _platform_fix(case)
    python = snapshot.python_env.python_version if snapshot.python_env else None
    wants = f"CPython {wheel.python_version}" if wheel.python_version else wheel.python
    lead = f"{wheel.name} {wheel.version} is built for {wants} on {wheel.platform}"
    mine = ".".join((python or "").split(".")[:2])
    if mine and wheel.python_version and mine != wheel.python_version:
        tag = "cp" + mine.replace(".", "")
        lead += f", this Python is {mine}: use the {tag} wheel, or a Python "
        lead += f"{wheel.python_version} environment"
    name = _PLANNED.get(wheel.name.lower(), wheel.name.lower())
    planned = plan_fix([name], snapshot, kb, lead + ". Or: ", gpu=False) if mine else None
    return planned if planned and name in FRAMEWORKS else Fix(lead + ".", (), "pip")


def _platform_fix(case: Case) -> Fix | None:
    """The platforms the index has files of the package (or the release) for, against the
    reporter's, when wheels.toml lists them and none is the reporter's (or the text does not say
    the platform and the package is published for some OSes only)."""
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    if "platforms_few" in case.judged:
        return _few_platforms_fix(facts, kb)
    if "platform_unserved" not in case.judged:
        return None
    if "platform_from_versions" in case.judged:
        return _offered_platform_fix(facts, snapshot, kb)
    name, version, label = asked(facts)
    platforms = machine_platforms(facts, snapshot)
    mine = " or ".join(platforms)
    named = releases_asked(kb, name, version) if version else []
    releases = named or releases_asked(kb, name, None)  # as platform_unserved judged them
    published = _listed(sorted(published_platforms(releases)))
    if cuda_build_unpublished(name, label, platforms):
        lead = f"{name} {version}+{label} is a CUDA build: those are published for Linux only"
    elif named:
        lead = f"{name} {version} has wheels for {published} only"
    elif version:
        lead = (
            f"{name} {version} is not among the {len(releases)} releases the index lists, "
            f"and those have wheels for {published} only"
        )
    else:
        lead = f"{name} has wheels for {published} only (every release the index lists)"
    rosetta = (
        " or an x86-64 Python under Rosetta, which installs the macos-x86_64 wheels"
        if platforms == ("macos-arm64",) and "macos-x86_64" in published_platforms(releases)
        else ""
    )
    return Fix(
        f"{lead}; this machine is {mine}: install it on a platform it is published for "
        f"(Linux, or WSL2 on Windows){rosetta}.",
        (),
        "pip",
    )


def _offered_platform_fix(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> Fix:
    """The platform pip's list of releases fits (the text does not say its own), the platforms
    the release asked for has wheels for, and the last release that has one for this machine."""
    name, version, _ = asked(facts)
    releases = releases_asked(kb, name, None)
    _, wanted = asked_specifier(facts)
    named = [r for r in releases if wanted is not None and wanted.contains(str(r["version"]))]
    published = _listed(sorted(published_platforms(named)))
    asked_for = f"{name} {version}" if version else f"{name}{wanted}"
    machines = sorted({platform for platform, _ in listed_machines(facts, snapshot, kb)})
    last = max(
        (r for r in releases if all(has_platform(r, p) for p in machines)),
        key=release_key,
        default=None,
    )
    summary = (
        f"{asked_for} has wheels for {published} only; the releases pip listed are those "
        f"the index has for {' or '.join(machines)}, so this machine is that"
    )
    if last is None:
        return Fix(summary + ": install it on a platform it is published for.", (), "pip")
    return Fix(
        f"{summary}, and {name} {last['version']} is the last release for it: install that "
        f"release, with versions of the packages built on {name} that accept it, or use a "
        f"machine {asked_for} is published for.",
        (f"python -m pip install {name}=={last['version']}",),
        "pip",
    )


def _listed(items: Sequence[str]) -> str:
    """The items as prose: "a, b and c"."""
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def _few_platforms_fix(facts: Sequence[Fact], kb: KnowledgeBase) -> Fix:
    name, _, _ = asked(facts)
    published = _listed(sorted(published_platforms(releases_asked(kb, name, None))))
    return Fix(
        f"{name} has wheels for {published} only (every release the index lists): "
        "unless this machine is one of them, install it on one (WSL2 on Windows for a Linux "
        "package) or use a build for this platform from the project itself.",
        (),
        "pip",
    )


def _library_fix(case: Case) -> Fix | None:
    facts, kb = case.facts, case.kb
    name = value(facts, "missing_library") or ""
    row = next(
        (r for r in kb.rows("cuda_libs", "soname") if name.startswith(str(r["soname"]))), None
    )
    package = pip_package(kb, str(row["library"]), int(row["cuda_major"])) if row else None
    if row is None or package is None:
        return None
    return Fix(
        f"{name} is the CUDA {row['cuda_major']} {row['library']} library: install the wheel that "
        f"holds it ({package['package']}) or the framework build for the CUDA you have; a "
        "library of another CUDA major does not stand in for it.",
        (f"python3 -m pip install {package['package']}",),
        "pip",
    )


def _conda_fix(case: Case) -> Fix | None:
    facts, snapshot, kb = case.facts, case.snapshot, case.kb
    if not any(f.name == "package" and f.value == "__cuda" for f in facts):
        return (
            plan_fix(_frameworks_named(facts), snapshot, kb)
            if len(_frameworks_named(facts)) > 1
            else None
        )
    cuda = value(facts, "driver_max_cuda") or "12.4"
    return Fix(
        "conda's __cuda virtual package comes from the driver; where no GPU is visible (docker "
        "build, a login node) set CONDA_OVERRIDE_CUDA to the CUDA of the machine that will run it.",
        (f"CONDA_OVERRIDE_CUDA={cuda} conda install ...",),
        "conda",
    )


def _frameworks_named(facts: Sequence[Fact]) -> list[str]:
    return list(
        dict.fromkeys(f.value for f in facts if f.name == "framework" and f.value in FRAMEWORKS)
    )


BUILDERS = {
    "driver_too_old": _driver_fix,
    "container_driver_mismatch": _container_fix,
    "cpu_only_build": _framework_fix,
    "gpu_arch_unsupported": _framework_fix,
    "python_version_unsupported": _python_fix,
    "wrong_platform_wheel": _wheel_fix,
    "missing_cuda_lib": _library_fix,
    "solver_conflict": _conda_fix,
}
