"""Planning: request + snapshot + knowledge base -> Plan. Pure and deterministic.

Steps: read the target; for docker, pick the base image first (its Python is the env's); list
every framework's candidates in preference order; judge each alone; pick one per framework that
holds together (joint.py), splitting into several envs when no single env can hold them; attach
the reasons for every candidate passed over; when something fits nowhere, the smallest change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from packaging.markers import InvalidMarker, Marker

from gpuenv.errors import GpuenvError
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase
from gpuenv.plan import joint
from gpuenv.plan.candidate import Candidate, judge, to_choice
from gpuenv.plan.changes import smallest_changes
from gpuenv.plan.extensions import EXTENSIONS, extension_notes
from gpuenv.plan.model import (
    CONDA_LIKE,
    FITS,
    INSTALLERS,
    NO_FIT,
    SPLIT,
    CondaSpec,
    EnvPlan,
    PackageChoice,
    Plan,
    Rejection,
    Tradeoff,
    Unplaced,
)
from gpuenv.plan.notes import plan_min_driver, plan_notes
from gpuenv.plan.request import Request, Want
from gpuenv.plan.sources import DEPENDENTS, candidates_for
from gpuenv.plan.target import Target, read_target
from gpuenv.plan.tradeoffs import tradeoffs, unchecked_notes


@dataclass(frozen=True)
class _Judged:
    ordered: tuple[Candidate, ...]
    fitting: tuple[Candidate, ...]
    rejected: Mapping[str, tuple[Rejection, ...]]  # candidate label -> every rule it fails


def make_plan(
    request: Request, snapshot: Snapshot, kb: KnowledgeBase, installer: str = "pip"
) -> Plan:
    if installer not in INSTALLERS:
        raise GpuenvError("bad-argument", f"unknown installer {installer!r}")
    target = read_target(snapshot, kb)
    asked_python = target.python_text
    image = None
    if installer == "docker":
        from gpuenv.plan.docker import plan_container

        image, target = plan_container(target)
    wants = effective_wants(request, target)
    wanted = {w.framework: w for w in wants if w.framework != "djl"}
    judged = {
        f: _judge_all(candidates_for(f, target, installer), target, w)
        for f, w in wanted.items()
        if f not in DEPENDENTS
    }
    placed = _place(target, wanted, judged)
    if any(u.package in EXTENSIONS for u in placed[1]):
        # no prebuilt wheel of an extension fits any torch allowed: plan its build from source
        placed = _with_source_builds(target, wanted, judged)
    envs, unplaced, costs, unchecked = placed
    envs = tuple(replace(env, carried=request.carried) for env in envs)
    plan = Plan(
        wants=tuple(w.raw or w.name for w in request.wants),
        installer=installer,
        target=target.summary(),
        verdict=NO_FIT if unplaced else (SPLIT if len(envs) > 1 else FITS),
        envs=envs,
        unplaced=unplaced,
        changes=tuple(c for u in unplaced for c in smallest_changes(target, u.package, u.rejected)),
        tradeoffs=costs,
        conda_override_cuda=_override(target, installer, envs),
    )
    plan = replace(plan, min_driver=plan_min_driver(plan))
    plan = _with_djl(plan, target, wants)
    notes = (*plan_notes(plan, target, request), *unchecked, *extension_notes(plan))
    if image is not None:
        from gpuenv.plan.docker import finish_container, with_python_note

        container = finish_container(target, image, envs)
        plan = replace(plan, container=container)
        notes = (*with_python_note(container, asked_python), *notes)
    return replace(plan, notes=notes)


# rules an extension fails on the machine itself, whichever torch it were built against
_MACHINE_RULES = frozenset({"arch", "platform", "gpu"})


def _with_source_builds(
    target: Target, wanted: Mapping[str, Want], judged: Mapping[str, _Judged]
) -> tuple[tuple[EnvPlan, ...], tuple[Unplaced, ...], tuple[Tradeoff, ...], tuple[str, ...]]:
    built = replace(target, source_builds=True)
    envs, unplaced, costs, unchecked = _place(built, wanted, judged)
    torch = judged.get("torch")
    first = {"torch": torch.fitting[0]} if torch and torch.fitting else None
    out, hopeless = [], []
    for lost in unplaced:
        if lost.package in EXTENSIONS and first is not None:
            # say why the extension itself does not fit (its GPUs, its platform), not only that
            # nothing paired with torch
            own = _judge_all(
                DEPENDENTS[lost.package](built, first), built, wanted.get(lost.package)
            )
            reasons = tuple(r for rs in own.rejected.values() for r in rs)
            lost = Unplaced(lost.package, reasons or lost.rejected)
            if reasons and all(r.rule in _MACHINE_RULES for r in reasons):
                hopeless.append(lost)  # flash-attn on a T4: no torch would change that
        out.append(lost)
    if not hopeless:
        return envs, tuple(out), costs, unchecked
    # plan the rest as if the extension had not been asked for, and say why it is left out
    rest = {f: w for f, w in wanted.items() if f not in {u.package for u in hopeless}}
    envs, unplaced, costs, unchecked = _place(built, rest, judged)
    return envs, (*unplaced, *hopeless), costs, unchecked


def _with_djl(plan: Plan, target: Target, wants: Sequence[Want]) -> Plan:
    want = next((w for w in wants if w.framework == "djl"), None)
    if want is None:
        return plan
    from gpuenv.plan.djl import plan_djl

    djl, unplaced = plan_djl(target, want)
    if djl is None:
        lost = (*plan.unplaced, unplaced)
        changes = (*plan.changes, *smallest_changes(target, "djl", unplaced.rejected))
        return replace(plan, djl=None, unplaced=lost, verdict=NO_FIT, changes=changes)
    return replace(plan, djl=djl)


def effective_wants(request: Request, target: Target) -> tuple[Want, ...]:
    """The wants whose markers hold on the target, with torch added for its companions."""
    wants = [w for w in request.wants if _marker_holds(w, target)]
    frameworks = {w.framework for w in wants}
    needing = sorted(frameworks & set(DEPENDENTS))
    if needing and "torch" not in frameworks:
        origin = f"implied by {', '.join(needing)}"
        wants.insert(0, Want("torch", "torch", raw="torch", origin=origin))
    return tuple(wants)


def _marker_holds(want: Want, target: Target) -> bool:
    if not want.marker:
        return True
    try:
        marker = Marker(want.marker)
    except InvalidMarker:
        return True
    return marker.evaluate(_marker_environment(target))


def _marker_environment(target: Target) -> dict[str, str]:
    os_name, _, arch = target.platform.partition("-")
    python = target.python_text or "3.12"
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": {"windows": "win32", "macos": "darwin"}.get(os_name, os_name),
        "platform_system": {"windows": "Windows", "macos": "Darwin"}.get(os_name, "Linux"),
        "platform_machine": {"x86_64": "x86_64" if os_name != "windows" else "AMD64"}.get(
            arch, arch
        ),
        "os_name": "nt" if os_name == "windows" else "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }


def _judge_all(candidates: Sequence[Candidate], target: Target, want: Want | None) -> _Judged:
    fitting: list[Candidate] = []
    rejected: dict[str, tuple[Rejection, ...]] = {}
    for candidate in candidates:
        reasons = judge(candidate, target, want)
        if reasons:
            rejected[candidate.label] = reasons
        else:
            fitting.append(candidate)
    return _Judged(tuple(candidates), tuple(fitting), rejected)


# ---- placing frameworks into environments -------------------------------------------------


def _place(
    target: Target, wanted: Mapping[str, Want], judged: Mapping[str, _Judged]
) -> tuple[tuple[EnvPlan, ...], tuple[Unplaced, ...], tuple[Tradeoff, ...], tuple[str, ...]]:
    unplaced = [f for f, j in judged.items() if not j.fitting]
    order = [f for f in wanted if f not in unplaced and (f in judged or _parent_placed(f, judged))]
    order = [f for f in order if f not in DEPENDENTS or "torch" in order]
    dependent = {f: partial(_dependent_options, target, f, wanted.get(f)) for f in DEPENDENTS}
    fitting = {f: j.fitting for f, j in judged.items()}
    groups = _split(order, fitting, dependent)
    envs = tuple(_env(target, wanted, judged, chosen, len(groups) > 1) for chosen in groups)
    lost = [_unplaced(f, judged[f]) for f in unplaced]
    lost += [Unplaced(f, ()) for f in wanted if f in DEPENDENTS and "torch" in unplaced]
    lost += _unpaired(order, groups)
    costs = tradeoffs(groups, fitting, dependent)
    return envs, tuple(lost), costs, unchecked_notes(groups)


def _parent_placed(framework: str, judged: Mapping[str, _Judged]) -> bool:
    return framework in DEPENDENTS and bool(judged.get("torch") and judged["torch"].fitting)


def _dependent_options(
    target: Target, framework: str, want: Want | None, chosen: Mapping[str, Candidate]
) -> Sequence[Candidate]:
    generate = DEPENDENTS[framework]
    return _judge_all(generate(target, chosen), target, want).fitting


def _split(
    order: Sequence[str],
    fitting: Mapping[str, Sequence[Candidate]],
    dependent: Mapping[str, joint.Dependent],
) -> list[dict[str, Candidate]]:
    """One env when one can hold everything; else greedy: each framework joins the first env
    that still resolves with it, in the order asked."""
    if not order:
        return []
    whole = joint.pick(order, fitting, dependent)
    if whole is not None:
        return [whole]
    bins: list[list[str]] = []
    for unit in _units(order):
        for members in bins:
            if joint.pick([*members, *unit], fitting, dependent) is not None:
                members.extend(unit)
                break
        else:
            bins.append(list(unit))
    picks = [joint.pick(members, fitting, dependent) for members in bins]
    return [p for p in picks if p is not None]


def _units(order: Sequence[str]) -> list[list[str]]:
    """torch travels with torchvision/torchaudio; everything else alone."""
    units: list[list[str]] = []
    for framework in order:
        if framework in DEPENDENTS and units and "torch" in {f for u in units for f in u}:
            next(u for u in units if "torch" in u).append(framework)
        else:
            units.append([framework])
    return units


def _unpaired(order: Sequence[str], groups: Sequence[Mapping[str, Candidate]]) -> list[Unplaced]:
    """Frameworks that fit alone but in no env: torch with a companion no torch release pairs
    with, or a unit whose members never hold together."""
    placed = {f for g in groups for f in g}
    lost = [f for f in order if f not in placed]
    companions = [f for f in lost if f in DEPENDENTS]
    out = []
    for framework in lost:
        if framework in DEPENDENTS:
            reason = f"no {framework} release pairs with a torch build that fits"
        elif companions and framework == "torch":
            reason = f"no torch build that fits has a {' or '.join(companions)} release for it"
        else:
            reason = "no combination of its candidates holds together with the other packages"
        out.append(Unplaced(framework, (Rejection(framework, framework, "pairing", reason),)))
    return out


def _unplaced(framework: str, judged: _Judged) -> Unplaced:
    return Unplaced(framework, tuple(r for reasons in judged.rejected.values() for r in reasons))


def _env(
    target: Target,
    wanted: Mapping[str, Want],
    judged: Mapping[str, _Judged],
    chosen: Mapping[str, Candidate],
    split: bool,
) -> EnvPlan:
    packages: list[PackageChoice] = []
    for framework, candidate in chosen.items():
        passed = _passed_over(framework, candidate, judged, chosen, target, wanted)
        choice = to_choice(candidate, target, passed)
        if framework in DEPENDENTS:
            choice = replace(choice, companion_of="torch")
        packages.append(choice)
        packages.extend(_expanded(candidate, target))
    cudas = {c.cuda.major for c in chosen.values() if c.cuda is not None}
    name = "env-" + "-".join(f for f in chosen if f not in DEPENDENTS) if split else "env"
    return EnvPlan(
        name=name,
        python=target.python_text,
        packages=tuple(packages),
        cuda_major=min(cudas) if cudas else None,
    )


def _passed_over(
    framework: str,
    candidate: Candidate,
    judged: Mapping[str, _Judged],
    chosen: Mapping[str, Candidate],
    target: Target,
    wanted: Mapping[str, Want],
) -> tuple[Rejection, ...]:
    """Every candidate preferred over the chosen one, with the rules that rejected it."""
    if framework in DEPENDENTS:
        own = _judge_all(DEPENDENTS[framework](target, chosen), target, wanted.get(framework))
    else:
        own = judged[framework]
    out: list[Rejection] = []
    for other in own.ordered:
        if _older(other, candidate):
            break
        out.extend(own.rejected.get(other.label, ()))
    joint_out = joint.joint_rejections(framework, own.fitting, chosen)
    out.extend(_pairing_reason(r, own, chosen, target, wanted) for r in joint_out)
    return tuple(out)


def _pairing_reason(
    rejection: Rejection,
    own: _Judged,
    chosen: Mapping[str, Candidate],
    target: Target,
    wanted: Mapping[str, Want],
) -> Rejection:
    """Name the companion when a torch build was passed over for want of one."""
    if rejection.reason != joint.NO_COMBINATION or rejection.package != "torch":
        return rejection
    candidate = next((c for c in own.fitting if c.label == rejection.candidate), None)
    for companion in (f for f in chosen if f in DEPENDENTS):
        trial = {**chosen, "torch": candidate} if candidate else chosen
        if candidate and not _dependent_options(target, companion, wanted.get(companion), trial):
            reason = f"no {companion} release pairs with it"
            return replace(rejection, rule="pairing", reason=reason)
    return rejection


def _older(other: Candidate, chosen: Candidate) -> bool:
    """Candidates come newest release first: those of the chosen release or newer were
    preferred (a higher CUDA, a newer release); older ones were not needed."""
    return other.public < chosen.public


def _expanded(candidate: Candidate, target: Target) -> list[PackageChoice]:
    """Packages installed with a candidate at exact versions (jaxlib and the CUDA plugin)."""
    out = []
    for name, version, extras in candidate.companions:
        # a conda-forge companion (jax beside jaxlib) is its own package, without a build string
        conda = CondaSpec(name, version, None) if candidate.conda else None
        extra = replace(
            candidate, name=name, version=version, extras=extras, companions=(), conda=conda
        )
        choice = to_choice(extra, target, ())
        why = f"installed with {candidate.label}"
        out.append(replace(choice, why=why, companion_of=candidate.framework))
    return out


def _override(target: Target, installer: str, envs: Sequence[EnvPlan]) -> str | None:
    """CONDA_OVERRIDE_CUDA: the CUDA the target's driver reports, so a machine without the GPU
    solves as the GPU node would."""
    if installer not in CONDA_LIKE or not target.wants_gpu or target.jetson:
        return None
    if target.driver_max_cuda is not None:
        return target.driver_max_cuda.short
    cudas = sorted({p.cuda for env in envs for p in env.packages if p.cuda})
    return cudas[-1] if cudas else None
