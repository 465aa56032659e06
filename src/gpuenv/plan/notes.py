"""What a plan should say beside its pins: unknown facts it assumed, builds that run only under
minor-version compatibility or by JIT-compiling PTX, the lowest driver every build needs."""

from __future__ import annotations

from gpuenv.kb.query.cuda import MVC, coverage, toolkit_sass_targets
from gpuenv.plan.model import PackageChoice, Plan
from gpuenv.plan.request import Request
from gpuenv.plan.target import Target
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion, sortable


def plan_min_driver(plan: Plan) -> str | None:
    """The highest of the chosen builds' minimum drivers: the driver the whole plan needs."""
    found = [DriverVersion.parse(p.min_driver) for p in plan.packages() if p.min_driver]
    known = [d for d in found if d is not None]
    return str(max(known)) if known else None


def plan_notes(plan: Plan, target: Target, request: Request) -> tuple[str, ...]:
    notes = list(request.notes)
    notes += _outside_knowledge(plan, request)
    notes += _target_notes(plan, target)
    notes += _build_notes(plan, target)
    return tuple(dict.fromkeys(notes))


def _outside_knowledge(plan: Plan, request: Request) -> list[str]:
    """A constraint no release in the knowledge base meets (torch==1.13.1 where the tables start
    at 2.0.0): say so, rather than leave 'nothing fits' to look like a verdict on the machine."""
    out = []
    for unplaced in plan.unplaced:
        labels = {r.candidate for r in unplaced.rejected}
        outside = {r.candidate for r in unplaced.rejected if r.rule == "constraint"}
        if not labels or outside != labels:
            continue
        versions = sorted(
            {label.split()[1] for label in labels if len(label.split()) > 1}, key=sortable
        )
        asked = ", ".join(w.raw for w in request.wants if w.framework == unplaced.package)
        span = f" (it knows {versions[0]} to {versions[-1]})" if versions else ""
        out.append(
            f"No {unplaced.package} release in gpuenv's knowledge base satisfies {asked}{span}; "
            "releases outside it are not planned."
        )
    return out


def _target_notes(plan: Plan, target: Target) -> list[str]:
    out = _platform_notes(target)
    if target.python is None and not plan.container and plan.envs:
        out.append(
            "The target's Python is unknown: wheels were not checked against it; give "
            "--python-version X.Y (or --python PATH) to plan for one."
        )
    if not target.wants_gpu:
        out.append("The target has no NVIDIA GPU (none reported or declared): CPU builds planned.")
    elif target.driver is None and not target.jetson:
        need = f" ≥ {plan.min_driver}" if plan.min_driver else ""
        out.append(f"No driver version known: these builds need an NVIDIA driver{need}.")
    elif target.ctx.driver_dead:
        out.append("The driver does not answer (see `gpuenv doctor`); planned for its version.")
    if target.wants_gpu and not target.gpus and not target.jetson:
        out.append(
            "No GPU model known: builds were not checked against its architecture; give "
            '--gpu "NAME" to check.'
        )
    return out


def _platform_notes(target: Target) -> list[str]:
    """A platform the report did not state (a pasted report's): assumed, or inferred from it."""
    host = target.ctx.snapshot.host
    sources = [str(o.source) for o in (host.os, host.arch) if o.value is not None]
    inferred = next((s for s in sources if s.startswith("inferred")), None)
    if inferred:
        why = inferred.partition(": ")[2] or inferred
        return [f"The target's platform, {target.platform}, is inferred: {why}."]
    if "assumed" in sources and target.jetpack is None:
        return [
            f"The target's platform, {target.platform}, is assumed: the report does not say it; "
            "give --platform to plan for another."
        ]
    return []


def _build_notes(plan: Plan, target: Target) -> list[str]:
    out = []
    for package in plan.packages():
        if package.companion_of:
            continue
        if package.driver_how == MVC and package.cuda:
            out.append(
                f"{package.name} {package.version} is built for CUDA {package.cuda}, newer than "
                f"the {target.driver_max_cuda or '?'} the driver reports: it runs under "
                "minor-version compatibility (PTX JIT and the newest features need a driver of "
                "its own CUDA release)." + _unknown_code(package.sass, target)
            )
        out += _ptx_notes(package.name, package.version, package.sass, package.ptx, target)
        out += _newer_gpu_notes(package, target)
        out += [f"{package.name}: needs {need}" for need in package.system_needs]
    return out


def _unknown_code(sass: tuple[str, ...], target: Target) -> str:
    """Under minor-version compatibility a GPU reached only through PTX does not run: say so
    when the build's GPU code is not known, so that it could not be checked."""
    names = ", ".join(dict.fromkeys(g.label for g in target.gpus))
    if sass or not names:
        return ""
    return (
        f" Its GPU code is not in the knowledge base: if it reaches {names} only through PTX, "
        "this driver cannot JIT-compile it (`gpuenv doctor` on the machine reads the installed "
        "libraries)."
    )


def _newer_gpu_notes(package: PackageChoice, target: Target) -> list[str]:
    """A build whose GPU code is unknown, on a GPU its CUDA cannot compile for: it has no SASS
    for that GPU and runs there only if it carries PTX, which nothing checked."""
    cuda = CudaVersion.parse(package.cuda) if package.cuda else None
    if package.sass or cuda is None or package.driver_how is None:
        return []
    known = {(t.major, t.minor) for t in toolkit_sass_targets(target.kb, cuda)}
    for gpu in target.gpus:
        cc = gpu.cc
        if cc is None or not known or (cc.major, cc.minor) in known:
            continue
        return [
            f"{package.name} {package.version} is built with CUDA {cuda.short}, which cannot "
            f"compile for {gpu.name} (sm_{cc.major}{cc.minor}), and its GPU code is not in the "
            "knowledge base: it runs there only if it carries PTX (JIT-compiled at start-up)."
        ]
    return []


def _ptx_notes(
    name: str, version: str, sass: tuple[str, ...], ptx: tuple[str, ...], target: Target
) -> list[str]:
    if not sass:
        return []
    sass_cc = [c for c in (ComputeCapability.parse(s) for s in sass) if c]
    ptx_cc = [c for c in (ComputeCapability.parse(p) for p in ptx) if c]
    out = []
    for gpu in target.gpus:
        if gpu.cc is None:
            continue
        if coverage(sass_cc, ptx_cc, gpu.cc).kind == "ptx-jit":
            out.append(
                f"{name} {version} has no native code for {gpu.name}: it runs by JIT-compiling "
                "PTX at start-up (slow first run)."
            )
    return out
