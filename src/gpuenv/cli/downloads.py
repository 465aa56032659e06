"""Before `plan --create` installs anything: say how much it will download, and ask (on a
terminal) or require --yes (elsewhere) when that is a lot or cannot be known."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gpuenv.edges import output
from gpuenv.errors import GpuenvError
from gpuenv.plan.model import Plan

if TYPE_CHECKING:
    from gpuenv.apply.download import Estimate

SHOWN = 6  # downloads named one by one; the rest are counted


def confirm_download(plan: Plan, args: argparse.Namespace) -> None:
    estimate = _estimate(plan, args)
    quiet = args.ui.quiet
    if estimate is None:
        text = f"{plan.installer} decides what to download; its size is not estimated"
        if not quiet:
            output.say(f"--create: {text}")
        _ask_or_refuse(args, "an unknown amount")
        return
    from gpuenv.apply.download import human_size

    if not quiet or estimate.needs_asking:
        output.say(_summary(estimate))
    if estimate.needs_asking:
        amount = f"about {human_size(estimate.total)}" if estimate.total else "an unknown amount"
        _ask_or_refuse(args, amount + (" (some sizes unknown)" if estimate.unknown else ""))


def _estimate(plan: Plan, args: argparse.Namespace) -> Estimate | None:
    if plan.installer not in ("pip", "uv") or not plan.envs or not plan.target.python:
        return None
    from gpuenv.apply.download import Target, estimate
    from gpuenv.apply.index_reader import NetworkReader

    if not args.ui.quiet:
        output.say("--create: asking the package index how much this install downloads...")
    target = Target(
        platform=plan.target.platform,
        python=plan.target.python,
        index=_index_url(),
        local_wheels=_local_wheels(args.timeout),
    )
    return estimate(plan.envs[0], target, NetworkReader())


def _summary(estimate: Estimate) -> str:
    from gpuenv.apply.download import human_size

    fetched = [d for d in estimate.items if d.where != "local file"]
    fetched.sort(key=lambda d: -(d.size or 0))
    named = [
        f"{d.name} {d.version} ({human_size(d.size) if d.size is not None else 'size unknown'})"
        for d in fetched[:SHOWN]
    ]
    more = f" and {len(fetched) - SHOWN} more" if len(fetched) > SHOWN else ""
    local = [d.name for d in estimate.items if d.where == "local file"]
    lines = [f"--create will download about {human_size(estimate.total)} (the framework and "
             "CUDA wheels; small pure-Python dependencies not counted): "
             + (", ".join(named) + more if named else "nothing")]  # fmt: skip
    if local:
        lines.append(f"  from local files (not downloaded): {', '.join(local)}")
    lines += [f"  could not size: {p}" for p in estimate.problems]
    return "\n".join(lines)


def _ask_or_refuse(args: argparse.Namespace, amount: str) -> None:
    if args.yes:
        return
    if not args.ui.interactive:
        raise GpuenvError(
            "needs-confirmation",
            f"--create would download {amount}, and there is no terminal to ask; nothing was "
            "installed",
            hints=("add --yes to go ahead",),
        )
    try:
        sys.stderr.write(f"Download {amount} and create the environment? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
    except (OSError, ValueError):
        answer = ""
    if answer not in ("y", "yes"):
        raise GpuenvError("not-confirmed", "--create was not confirmed; nothing was installed")


def _index_url() -> str:
    from gpuenv.index.http import IndexUnavailable, pip_index_url

    try:
        return pip_index_url()
    except IndexUnavailable:
        return ""


def _local_wheels(timeout: float) -> Mapping[tuple[str, str], str]:
    from packaging.version import InvalidVersion, Version

    from gpuenv.guard.envs import find_links_wheels

    public: dict[tuple[str, str], str] = {}
    for (name, version), path in find_links_wheels(sys.executable, timeout).items():
        try:
            public.setdefault((name, Version(version).public), path)
        except InvalidVersion:
            continue
    return public
