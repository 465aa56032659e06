"""Plans for people (terminal text) and programs (JSON): what was chosen, why, what was passed
over and by which rule, the smallest change when nothing fits, and how to install it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gpuenv.plan.model import FITS, NO_FIT, SPLIT, PackageChoice, Plan, Rejection, plan_to_dict
from gpuenv.render.installers.common import Rendered, target_line
from gpuenv.render.installers.conda import conda_spec
from gpuenv.render.snapshot_text import printable

SHOWN_REJECTIONS = 5


def render_plan_text(plan: Plan, rendered: Rendered, written: Sequence[str] = ()) -> str:
    out = [_title(plan), f"target: {target_line(plan)}", f"verdict: {_verdict(plan)}", ""]
    # what sharing an env cost comes first: it is the part of the plan a reader would not expect
    out += _section("trade-offs", [f"- {t.text}" for t in plan.tradeoffs])
    if plan.container:
        out += [f"base image: {plan.container.image}", f"  {plan.container.why}"]
        out += _rejections(plan.container.rejected, "  passed over: ")
        out.append("")
    for env in plan.envs:
        cuda = f", CUDA {env.cuda_major}" if env.cuda_major else ""
        out.append(f"{env.name} (Python {env.python or '?'}{cuda})")
        for package in env.packages:
            out += _package(package)
        out.append("")
    out += _djl(plan)
    out += _unplaced(plan)
    out += _section("notes", [f"- {n}" for n in (*plan.notes, *rendered.notes)])
    how = plan.installer if plan.envs else "DJL"
    out += _section(f"install ({how})", [f"  $ {c}" for c in rendered.commands])
    if written:
        out += _section("written", [f"  {w}" for w in written])
    elif rendered.files:
        out += [f"files (write them with -o DIR): {', '.join(rendered.files)}", ""]
    # names from --from files and -r lines are untrusted: no control sequence reaches a terminal
    lines = "\n".join(out).rstrip("\n").split("\n")
    return "\n".join(printable(line) for line in lines) + "\n"


def _title(plan: Plan) -> str:
    t = plan.target
    extra = [t.origin] if t.origin != "probed" else []
    if t.overrides:
        extra.append("what-if: " + " ".join(t.overrides))
    return "gpuenv plan" + (f" ({'; '.join(extra)})" if extra else "")


def _verdict(plan: Plan) -> str:
    if plan.verdict == FITS:
        return "fits in one environment"
    if plan.verdict == SPLIT:
        return f"split: no single environment holds everything; {len(plan.envs)} environments"
    placed = ", ".join(u.package for u in plan.unplaced)
    return f"no fit for {placed}"


def _package(package: PackageChoice) -> list[str]:
    shown = conda_spec(package) or package.requirement
    lines = [f"  {shown:<40} {package.why}"]
    if package.min_driver and not package.companion_of:
        lines.append(
            f"      needs driver ≥ {package.min_driver} ({package.driver_how or 'unchecked'})"
        )
    lines += _rejections(package.rejected, "      passed over: ")
    return lines


def _rejections(rejected: Sequence[Rejection], lead: str) -> list[str]:
    if not rejected:
        return []
    pad = " " * len(lead)
    shown = _condensed(rejected)
    lines = [(lead if n == 0 else pad) + text for n, text in enumerate(shown[:SHOWN_REJECTIONS])]
    if len(shown) > SHOWN_REJECTIONS:
        lines.append(f"{pad}… {len(shown) - SHOWN_REJECTIONS} more (--json lists every one)")
    return lines


def _condensed(rejected: Sequence[Rejection]) -> list[str]:
    """One line per candidate (its reasons joined), runs of the same single reason merged."""
    per: dict[str, list[str]] = {}
    for rejection in rejected:
        per.setdefault(rejection.candidate, []).append(rejection.reason)
    lines: list[str] = []
    last_reason, run = "", 0
    for candidate, reasons in per.items():
        reason = "; ".join(dict.fromkeys(reasons))
        if reason == last_reason and len(reasons) == 1:
            run += 1
            continue
        if run:
            lines.append(f"  (and {run} more for the same reason)")
        lines.append(f"{candidate}: {reason}")
        last_reason, run = reason, 0
    if run:
        lines.append(f"  (and {run} more for the same reason)")
    return lines


def _djl(plan: Plan) -> list[str]:
    djl = plan.djl
    if djl is None:
        return []
    lines = [f"DJL {djl.djl}: PyTorch {djl.pytorch} ({djl.flavor})", f"  {djl.why}"]
    lines += [f"  {name}={value}" for name, value in djl.env]
    lines += _rejections(djl.rejected, "  passed over: ")
    return [*lines, ""]


def _unplaced(plan: Plan) -> list[str]:
    if plan.verdict != NO_FIT:
        return []
    lines = []
    for unplaced in plan.unplaced:
        lines.append(f"{unplaced.package}: nothing fits")
        lines += _rejections(unplaced.rejected, "  ") or ["  (no candidate in the knowledge base)"]
    changes = _section("smallest change", [f"- {c.text}" for c in plan.changes])
    return [*lines, *changes] if changes else [*lines, ""]


def _section(title: str, body: list[str]) -> list[str]:
    return [f"{title}:", *body, ""] if body else []


def plan_document(plan: Plan, rendered: Rendered, exit_code: int) -> dict[str, Any]:
    return {
        **plan_to_dict(plan),
        "exit_code": exit_code,
        "commands": list(rendered.commands),
        "files": dict(rendered.files),
        "render_notes": list(rendered.notes),
    }


def render_plan_json(plan: Plan, rendered: Rendered, exit_code: int) -> str:
    return json.dumps(plan_document(plan, rendered, exit_code), indent=2, ensure_ascii=False) + "\n"
