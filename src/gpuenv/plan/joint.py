"""Several packages in one environment: they must share one CUDA major (cuDNN and cuBLAS load once
per process) and the NVIDIA library versions their wheels pin must all be satisfiable together.

`pick` walks the candidates in preference order, first framework first, and returns the first
combination that holds together (depth-first, with forward checking so that a framework left
without candidates cuts the branch at once). Deterministic: same lists in, same pick out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from gpuenv.plan.candidate import Candidate
from gpuenv.plan.model import Rejection
from gpuenv.versions import sortable

MAX_STEPS = 200_000  # candidate pairs examined before a search gives up
NO_COMBINATION = "no combination with the other packages holds"

# Candidates of a framework that depend on what was picked before it (torchvision on torch).
Dependent = Callable[[Mapping[str, Candidate]], Sequence[Candidate]]


@dataclass
class _Search:
    lists: Mapping[str, Sequence[Candidate]]
    dependent: Mapping[str, Dependent]
    order: tuple[str, ...]
    steps: int = 0
    pair_cache: dict[tuple[str, str], str | None] = field(default_factory=dict)

    def conflict(self, a: Candidate, b: Candidate) -> str | None:
        key = (_key(a), _key(b))
        if key not in self.pair_cache:
            self.steps += 1
            self.pair_cache[key] = pair_conflict(a, b)
        return self.pair_cache[key]


def _key(candidate: Candidate) -> str:
    return f"{candidate.framework}:{candidate.name}:{candidate.version}:{candidate.build}"


def pick(
    order: Sequence[str],
    lists: Mapping[str, Sequence[Candidate]],
    dependent: Mapping[str, Dependent] | None = None,
) -> dict[str, Candidate] | None:
    """The preferred combination with one candidate per framework, or None."""
    search = _Search(lists, dependent or {}, tuple(order))
    return _walk(search, {}, 0)


def _walk(search: _Search, chosen: dict[str, Candidate], depth: int) -> dict[str, Candidate] | None:
    if depth == len(search.order):
        return dict(chosen)
    framework = search.order[depth]
    for candidate in _options(search, chosen, framework):
        if search.steps > MAX_STEPS:
            return None
        if any(search.conflict(candidate, other) for other in chosen.values()):
            continue
        chosen[framework] = candidate
        if _ahead_ok(search, chosen, depth + 1):
            found = _walk(search, chosen, depth + 1)
            if found is not None:
                return found
        del chosen[framework]
    return None


def _options(
    search: _Search, chosen: Mapping[str, Candidate], framework: str
) -> Sequence[Candidate]:
    if framework in search.dependent:
        return search.dependent[framework](chosen)
    return search.lists.get(framework, ())


def _ahead_ok(search: _Search, chosen: Mapping[str, Candidate], start: int) -> bool:
    """Forward check: every later independent framework keeps a candidate that fits so far."""
    for framework in search.order[start:]:
        if framework in search.dependent:
            continue
        options = search.lists.get(framework, ())
        if not any(
            not any(search.conflict(c, other) for other in chosen.values()) for c in options
        ):
            return False
    return True


def pair_conflict(a: Candidate, b: Candidate) -> str | None:
    """Why `a` cannot share an environment with `b`, or None (the text speaks of `a`).

    An unknown pin is not a conflict: the pins checked are the wheel's own, else those the
    curated rows imply (a torch release's cuDNN, a JAX range's cuDNN floor); what neither knows
    is left to the installer's resolver, and the plan says so (`unchecked`)."""
    if a.cuda is not None and b.cuda is not None and a.cuda.major != b.cuda.major:
        return (
            f"built for CUDA {a.cuda.major} while {b.label} is built for CUDA {b.cuda.major}; "
            "one environment loads one CUDA major's cuDNN and cuBLAS"
        )
    return _cudnn_conflict(a, b) or _pin_conflict(a, b)


def _cudnn_conflict(a: Candidate, b: Candidate) -> str | None:
    """Two GPU builds of one CUDA major that need different cuDNN majors: the process loads one
    libcudnn's symbols (ONNX Runtime 1.18.0 for CUDA 11.8 needs cuDNN 8, torch 2.4+ brings 9:
    'Compatible with PyTorch <= 2.3.1 for CUDA 11.8')."""
    mine, theirs = _cudnn_major(a), _cudnn_major(b)
    if mine is None or theirs is None or mine == theirs:
        return None
    return (
        f"needs cuDNN {mine} while {b.label} needs cuDNN {theirs}; one process loads one "
        "cuDNN's symbols"
    )


def _cudnn_major(candidate: Candidate) -> int | None:
    if candidate.cuda is None or not candidate.cudnn:
        return None
    head = str(candidate.cudnn).split(".")[0]
    return int(head) if head.isdigit() else None


def checked_pins(candidate: Candidate) -> tuple[str, ...]:
    """The NVIDIA library pins the joint check uses: the wheel's, else the curated rows'."""
    return candidate.pins if candidate.pins_known else candidate.kb_pins


def unchecked(a: Candidate, b: Candidate) -> str | None:
    """A pair that shares NVIDIA library wheels whose pins are not all known: a note, since
    the installer resolves them (and fails loudly rather than silently if they clash)."""
    if a.cuda is None or b.cuda is None or not (_brings_libs(a) and _brings_libs(b)):
        return None
    unknown = [c for c in (a, b) if not c.pins_known]
    if not unknown:
        return None
    partly = [c.label for c in unknown if c.kb_pins]
    names = " and ".join(c.label for c in unknown)
    known = f" (its cuDNN is known from the release rows: {', '.join(partly)})" if partly else ""
    return (
        f"{a.label} and {b.label} share NVIDIA library wheels; the pins of {names} are not in "
        f"the knowledge base{known}, so the installer settles the rest"
    )


def _brings_libs(candidate: Candidate) -> bool:
    """Does installing it pull NVIDIA's library wheels (known or not)?"""
    return bool(candidate.pins) or not candidate.pins_known


def _pin_conflict(a: Candidate, b: Candidate) -> str | None:
    mine = parsed_pins(checked_pins(a))
    theirs = parsed_pins(checked_pins(b))
    for name in sorted(set(mine) & set(theirs)):
        if not satisfiable((mine[name], theirs[name])):
            return f"pins {name}{mine[name]} while {b.label} needs {name}{theirs[name]}"
    return None


_PIN_CACHE: dict[tuple[str, ...], dict[str, SpecifierSet]] = {}


def parsed_pins(pins: tuple[str, ...]) -> dict[str, SpecifierSet]:
    """Requirement lines -> {canonical name: specifier}; unreadable lines are skipped."""
    if pins in _PIN_CACHE:
        return _PIN_CACHE[pins]
    out: dict[str, SpecifierSet] = {}
    for line in pins:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(requirement.name)
        out[name] = out[name] & requirement.specifier if name in out else requirement.specifier
    _PIN_CACHE[pins] = out
    return out


def satisfiable(specifiers: Sequence[SpecifierSet]) -> bool:
    """Can one version satisfy all of these? Exact pins must agree; otherwise the highest lower
    bound (or, with only upper bounds, nothing) must fit every range."""
    combined = SpecifierSet()
    for spec in specifiers:
        combined &= spec
    probes = _probe_versions(combined)
    if not probes:
        return True
    return any(combined.contains(v, prereleases=True) for v in probes)


def _probe_versions(spec: SpecifierSet) -> list[str]:
    exact = [s.version for s in spec if s.operator in ("==", "===") and "*" not in s.version]
    if exact:
        return exact
    lows = [_wild_low(s.version) for s in spec if s.operator in (">=", "~=", "==")]
    lows += [s.version for s in spec if s.operator == ">"]
    if not lows:
        return []
    top = max(lows, key=sortable)
    return [top, *(_bumped(v) for v in lows if v == top)]


def _wild_low(version: str) -> str:
    return version.replace(".*", "")


def _bumped(version: str) -> str:
    """A version just above `version` (for exclusive lower bounds)."""
    return f"{version}.1"


def joint_rejections(
    framework: str,
    fitting: Sequence[Candidate],
    chosen: Mapping[str, Candidate],
) -> tuple[Rejection, ...]:
    """For each candidate preferred over the chosen one: the chosen package it conflicts with."""
    mine = chosen.get(framework)
    out = []
    for candidate in fitting:
        if mine is not None and _key(candidate) == _key(mine):
            break
        for other_framework, other in chosen.items():
            if other_framework == framework:
                continue
            reason = pair_conflict(candidate, other)
            if reason:
                out.append(candidate.reject("joint", reason))
                break
        else:
            out.append(candidate.reject("joint", NO_COMBINATION))
    return tuple(out)
