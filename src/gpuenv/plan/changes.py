"""When nothing fits: the smallest change to the target that would admit a candidate.

A candidate rejected by exactly one rule names its fix: a newer driver, another Python, WSL2, a
looser constraint. The smallest is the one that admits a candidate with the least change: the
lowest driver, the Python nearest the target's. Two-rule fixes are offered only when no one-rule
fix exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuenv.plan.model import Rejection, SmallestChange
from gpuenv.plan.target import Target
from gpuenv.versions import DriverVersion

_FIXABLE = ("constraint", "python", "driver", "windows", "platform")


def smallest_changes(
    target: Target, package: str, rejected: Sequence[Rejection]
) -> tuple[SmallestChange, ...]:
    """Changes that admit at least one candidate of `package`, smallest first."""
    by_candidate = _group(rejected)
    singles = [_single(target, label, rules) for label, rules in by_candidate.items()]
    found = _best_per_kind(c for c in singles if c is not None)
    if not found:
        doubles = [_double(target, label, rules) for label, rules in by_candidate.items()]
        found = _best_per_kind(c for c in doubles if c is not None)
    if not found and len(target.ccs) > 1 and any(set(r) == {"arch"} for r in by_candidate.values()):
        found = [_one_generation(target)]
    order = {kind: n for n, kind in enumerate((*_FIXABLE, "driver+python", "gpus"))}
    return tuple(sorted(found, key=lambda c: order.get(c.kind, 99)))


def _group(rejected: Sequence[Rejection]) -> dict[str, dict[str, Rejection]]:
    out: dict[str, dict[str, Rejection]] = {}
    for rejection in rejected:
        out.setdefault(rejection.candidate, {}).setdefault(rejection.rule, rejection)
    return out


def _single(target: Target, label: str, rules: dict[str, Rejection]) -> SmallestChange | None:
    if len(rules) != 1:
        return None
    ((rule, rejection),) = rules.items()
    return _change(target, label, rule, rejection)


def _double(target: Target, label: str, rules: dict[str, Rejection]) -> SmallestChange | None:
    if set(rules) != {"driver", "python"}:
        return None
    driver = _change(target, label, "driver", rules["driver"])
    python = _change(target, label, "python", rules["python"])
    if driver is None or python is None:
        return None
    both = f"{_bare(driver.text)} and {_bare(python.text)}"
    return SmallestChange(
        "driver+python",
        f"{both} (then {label} fits)",
        f"{driver.value} {python.value}",
        (label,),
    )


def _one_generation(target: Target) -> SmallestChange:
    """Mixed GPU generations no single build serves: one env per generation."""
    shown = ", ".join(str(cc) for cc in target.ccs)
    return SmallestChange(
        "gpus",
        f"no build has code for all of these GPUs ({shown}): plan for each generation on its "
        "own (--gpu) and run each env with CUDA_VISIBLE_DEVICES set to those GPUs",
    )


def _bare(text: str) -> str:
    return text.split(" (then")[0]


def _change(target: Target, label: str, rule: str, rejection: Rejection) -> SmallestChange | None:
    then = f"(then {label} fits)"
    if rule == "constraint":
        return SmallestChange(
            "constraint", f"loosen your version constraint {then}", None, (label,)
        )
    if rule == "driver" and rejection.needs and rejection.needs.startswith("R"):
        branch = rejection.needs[1:]
        text = f"install a driver of the {rejection.needs} branch, the last that drives the GPU"
        return SmallestChange("driver", f"{text} {then}", branch, (label,))
    if rule == "driver" and rejection.needs:
        return SmallestChange(
            "driver", f"upgrade the driver to ≥ {rejection.needs} {then}", rejection.needs, (label,)
        )
    if rule == "python" and rejection.needs:
        python = _nearest_python(target, rejection.needs)
        return SmallestChange("python", f"use Python {python} {then}", python, (label,))
    if rule == "windows":
        return SmallestChange("windows", f"use WSL2 (Linux builds) {then}", "wsl2", (label,))
    if rule == "platform":
        return SmallestChange("platform", f"use another platform {then}", None, (label,))
    return None


def _nearest_python(target: Target, needs: str) -> str:
    """`needs` is a span 'wheels for Python 3.9–3.12' or a bound '3.11': the nearest to the
    target's Python inside it."""
    numbers = [p for p in needs.replace("–", " ").split() if p[:1].isdigit()]
    if len(numbers) < 2 or target.python is None:
        return numbers[0] if numbers else needs
    low, high = (tuple(int(x) for x in n.split(".")[:2]) for n in numbers[:2])
    have = target.python
    if have < low:
        return numbers[0]
    return numbers[1] if have > high else f"{have[0]}.{have[1]}"


def _best_per_kind(changes: Iterable[SmallestChange]) -> list[SmallestChange]:
    """Per kind, the change asking least: lowest driver, nearest Python, first candidate."""
    best: dict[str, SmallestChange] = {}
    for change in changes:
        current = best.get(change.kind)
        if current is None or _smaller(change, current):
            best[change.kind] = change
    return list(best.values())


def _smaller(a: SmallestChange, b: SmallestChange) -> bool:
    if a.kind == "driver":
        da, db = DriverVersion.parse(a.value), DriverVersion.parse(b.value)
        return da is not None and db is not None and da < db
    return False
