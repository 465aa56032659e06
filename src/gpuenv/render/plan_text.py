"""Plans for people (terminal text) and programs (JSON): what was chosen, why, what was passed
over and by which rule, the smallest change when nothing fits, and how to install it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuenv.plan.model import FITS, NO_FIT, SPLIT, PackageChoice, Plan, Rejection, plan_to_dict
from gpuenv.render.installers.common import Rendered, target_line
from gpuenv.render.installers.conda import conda_spec
from gpuenv.render.jsontext import json_text
from gpuenv.render.layout import Doc, blank, command, line, section, verbatim
from gpuenv.render.terminal import Terminal, to_text

SHOWN_REJECTIONS = 5


def render_plan_text(
    plan: Plan,
    rendered: Rendered,
    written: Sequence[str] = (),
    terminal: Terminal | None = None,
    verbose: bool = False,
) -> str:
    return to_text(plan_doc(plan, rendered, written, verbose), terminal or Terminal())


def plan_doc(
    plan: Plan, rendered: Rendered, written: Sequence[str] = (), verbose: bool = False
) -> Doc:
    """The plan for a person: target and verdict, each env's choices with the candidates passed
    over (the first few, or with `verbose` every one), notes, and the install commands
    (runnable as printed)."""
    passed = _Passed(verbose)
    doc: Doc = [
        line((_title(plan), "heading")),
        line("target: ", target_line(plan)),
        line("verdict: ", (_verdict(plan), "ok" if plan.verdict == FITS else "warning")),
        blank(),
    ]
    # what sharing an env cost comes first: it is the part of the plan a reader would not expect
    doc += section("trade-offs:", [line("- ", t.text) for t in plan.tradeoffs])
    if plan.container:
        doc += [line("base image: ", plan.container.image), line(plan.container.why, indent=2)]
        doc += passed(plan.container.rejected, "passed over: ", 2)
        doc.append(blank())
    for env in plan.envs:
        cuda = f", CUDA {env.cuda_major}" if env.cuda_major else ""
        doc.append(line((f"{env.name} (Python {env.python or '?'}{cuda})", "bold")))
        for package in env.packages:
            doc += _package(package, passed)
        doc.append(blank())
    doc += _djl(plan, passed)
    doc += _unplaced(plan, passed)
    doc += section("notes:", [line("- ", n) for n in (*plan.notes, *rendered.notes)])
    doc += _install(plan, rendered, written)
    return doc


def _install(plan: Plan, rendered: Rendered, written: Sequence[str]) -> Doc:
    how = plan.installer if plan.envs else "DJL"
    commands = [command(c, indent=2) for c in rendered.commands]
    if rendered.needs_files and not written:
        files = ", ".join(rendered.files)
        title = f"install ({how}), after writing its files ({files}) with -o DIR:"
        return section(title, commands)
    doc = section(f"install ({how}):", commands)
    if written:
        doc += section("written:", [verbatim(w, indent=2) for w in written])
    elif rendered.files:
        doc += [line(f"files (write them with -o DIR): {', '.join(rendered.files)}"), blank()]
    return doc


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


def _package(package: PackageChoice, passed: _Passed) -> Doc:
    shown = conda_spec(package) or package.requirement
    doc = [line((f"{shown:<40} ", "bold"), package.why, indent=2, hang=4)]
    if package.min_driver and not package.companion_of:
        how = package.driver_how or "unchecked"
        doc.append(line(f"needs driver ≥ {package.min_driver} ({how})", indent=6))
    doc += passed(package.rejected, "passed over: ", 6)
    return doc


class _Passed:
    """The candidates passed over, as lines: the first SHOWN_REJECTIONS with runs of one
    reason merged, or (-v) every one."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose

    def __call__(self, rejected: Sequence[Rejection], lead: str, indent: int) -> Doc:
        if not rejected:
            return []
        shown = _condensed(rejected, merge=not self.verbose)
        limit = len(shown) if self.verbose else SHOWN_REJECTIONS
        doc = [
            line(lead if n == 0 else " " * len(lead), text, indent=indent, hang=len(lead) + 2)
            for n, text in enumerate(shown[:limit])
        ]
        if len(shown) > limit:
            more = f"… {len(shown) - limit} more (-v or --json lists every one)"
            doc.append(line(" " * len(lead), more, indent=indent))
        return doc


def _condensed(rejected: Sequence[Rejection], merge: bool = True) -> list[str]:
    """One line per candidate (its reasons joined), runs of the same single reason merged."""
    per: dict[str, list[str]] = {}
    for rejection in rejected:
        per.setdefault(rejection.candidate, []).append(rejection.reason)
    lines: list[str] = []
    last_reason, run = "", 0
    for candidate, reasons in per.items():
        reason = "; ".join(dict.fromkeys(reasons))
        if merge and reason == last_reason and len(reasons) == 1:
            run += 1
            continue
        if run:
            lines.append(f"  (and {run} more for the same reason)")
        lines.append(f"{candidate}: {reason}")
        last_reason, run = reason, 0
    if run:
        lines.append(f"  (and {run} more for the same reason)")
    return lines


def _djl(plan: Plan, passed: _Passed) -> Doc:
    djl = plan.djl
    if djl is None:
        return []
    doc = [line((f"DJL {djl.djl}: PyTorch {djl.pytorch} ({djl.flavor})", "bold"))]
    doc.append(line(djl.why, indent=2))
    doc += [verbatim(f"{name}={value}", indent=2) for name, value in djl.env]
    doc += passed(djl.rejected, "passed over: ", 2)
    return [*doc, blank()]


def _unplaced(plan: Plan, passed: _Passed) -> Doc:
    if plan.verdict != NO_FIT:
        return []
    doc: Doc = []
    for unplaced in plan.unplaced:
        doc.append(line((f"{unplaced.package}: nothing fits", "error")))
        doc += passed(unplaced.rejected, "", 2) or [
            line("(no candidate in the knowledge base)", indent=2)
        ]
    changes = section("smallest change:", [line("- ", c.text) for c in plan.changes])
    return [*doc, *changes] if changes else [*doc, blank()]


def plan_document(plan: Plan, rendered: Rendered, exit_code: int) -> dict[str, Any]:
    return {
        **plan_to_dict(plan),
        "exit_code": exit_code,
        "commands": list(rendered.commands),
        "files": dict(rendered.files),
        "render_notes": list(rendered.notes),
        "commands_need_files": rendered.needs_files,
    }


def render_plan_json(plan: Plan, rendered: Rendered, exit_code: int) -> str:
    return json_text(plan_document(plan, rendered, exit_code))
