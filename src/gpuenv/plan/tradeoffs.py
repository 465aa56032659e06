"""What sharing an environment cost: for each framework, the build it gets on its own against
the one it got beside the others, and which of them (and which of their constraints) cost it;
and the pairs whose NVIDIA library pins could not all be checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpuenv.plan import joint
from gpuenv.plan.candidate import Candidate
from gpuenv.plan.model import Tradeoff
from gpuenv.plan.sources import DEPENDENTS


def tradeoffs(
    groups: Sequence[Mapping[str, Candidate]],
    fitting: Mapping[str, Sequence[Candidate]],
    dependent: Mapping[str, joint.Dependent],
) -> tuple[Tradeoff, ...]:
    """Every framework that did not get its own first choice, an older release before a
    different build of the same release."""
    out = []
    for chosen in groups:
        for framework, got in chosen.items():
            own = fitting.get(framework, ())
            if framework in DEPENDENTS or not own or _same(own[0], got):
                continue
            because, by = _because(framework, own[0], chosen, dependent)
            out.append(
                Tradeoff(framework, own[0].label, got.label, _cost(own[0], got), because, by)
            )
    return tuple(sorted(out, key=lambda t: "instead of release" not in t.cost))


def unchecked_notes(groups: Sequence[Mapping[str, Candidate]]) -> tuple[str, ...]:
    """One note per env naming the builds whose NVIDIA library pins could not be checked
    against the others' (an unknown pin is no conflict: the installer settles it)."""
    notes = []
    for chosen in groups:
        picked = [c for f, c in chosen.items() if f not in DEPENDENTS]
        pairs = [(a, b) for n, a in enumerate(picked) for b in picked[n + 1 :]]
        unknown = {
            c.label: c
            for a, b in pairs
            if joint.unchecked(a, b)
            for c in (a, b)
            if not c.pins_known
        }
        if not unknown:
            continue
        shown = " and ".join(
            label + (" (its cuDNN checked, from the curated release rows)" if c.kb_pins else "")
            for label, c in unknown.items()
        )
        notes.append(
            f"Unchecked pins: which NVIDIA library wheels {shown} pin is not in the knowledge "
            "base; they were combined with the others unchecked, and the installer resolves "
            "them at install time (it stops if they clash)."
        )
    return tuple(notes)


def _same(a: Candidate, b: Candidate) -> bool:
    return (a.name, a.version, a.build) == (b.name, b.version, b.build)


def _cost(alone: Candidate, got: Candidate) -> str:
    if got.public != alone.public:
        return (
            f"{got.name} {got.version.split('+')[0]} instead of release "
            f"{alone.version.split('+')[0]}"
            + (f" ({got.build} build)" if got.build != alone.build else "")
        )
    return f"the {_build(got)} build of {got.version.split('+')[0]} instead of {_build(alone)}"


def _build(candidate: Candidate) -> str:
    cuda = f"CUDA {candidate.cuda.short}" if candidate.cuda else "CPU"
    return f"{candidate.build} ({cuda})" if candidate.build else cuda


def _because(
    framework: str,
    alone: Candidate,
    chosen: Mapping[str, Candidate],
    dependent: Mapping[str, joint.Dependent],
) -> tuple[str, str]:
    for other_framework, other in chosen.items():
        if other_framework == framework or other_framework in DEPENDENTS:
            continue
        reason = joint.pair_conflict(alone, other)
        if reason:
            verb = "is " if reason.startswith("built") else ""
            return f"{alone.label} {verb}{reason}", other_framework
    trial = {**chosen, framework: alone}
    for companion in (f for f in chosen if f in DEPENDENTS):
        options = dependent[companion](trial) if companion in dependent else ()
        if not options:
            return f"no {companion} release pairs with {alone.label}", companion
    others = [f for f in chosen if f != framework and f not in DEPENDENTS]
    return (
        f"no build of {', '.join(others) or 'the others'} holds together with {alone.label}",
        others[0] if others else "",
    )
