"""Reports fit the user's terminal: doctor and plan at 60, 80 and 120 columns. No line runs past
the width unless it is a command or holds a URL (or a path) too long to fit; every command is
printed whole, on one line; the text piped to a file is unwrapped."""

from __future__ import annotations

import re

import pytest

from gpuenv.diagnose import diagnose
from gpuenv.kb import default_kb
from gpuenv.probe.access import RecordedMachine
from gpuenv.probe.run import ProbeOptions, probe_machine
from gpuenv.render.doctor import doctor_doc, render_text
from gpuenv.render.installers import Where, render_installer
from gpuenv.render.plan_text import render_plan_text
from gpuenv.render.terminal import MIN_ROOM, Terminal, to_text
from tests.builders import machine, torch_build
from tests.conftest import MACHINES
from tests.test_plan_scenarios import Scenario, plan_for

WIDTHS = (60, 80, 120)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _allowed_overflow(text: str, width: int) -> bool:
    """A command line, or a line whose only overlong word is a URL or a path."""
    body = text.strip()
    if body.startswith("$ "):
        return True
    longest = max(body.split(), key=len)
    return ("://" in longest or "/" in longest) and len(longest) > width - len(text) + len(body) - 1


def _check(text: str, width: int, commands: list[str]) -> None:
    plain = ANSI.sub("", text)
    for row in plain.splitlines():
        if len(row) > width:
            assert _allowed_overflow(row, width), f"{len(row)} > {width}: {row!r}"
    lines = plain.splitlines()
    for command in commands:
        assert any(row.strip() == f"$ {command}" for row in lines), f"not whole: {command}"


def _doctor_cases() -> list[tuple[str, object, object]]:
    kb = default_kb()
    cases = []
    for name in ("rtx3090_driver535", "container_require_cuda", "nvml_mismatch", "wsl2"):
        snapshot = probe_machine(RecordedMachine.load(MACHINES / name), ProbeOptions())
        cases.append((name, snapshot, diagnose(snapshot, kb)))
    cpu_torch = machine(gpus=["RTX 3090"], driver="535.183.01",
                        frameworks=[torch_build("2.4.1+cpu", None)])  # fmt: skip
    cases.append(("cpu-torch", cpu_torch, diagnose(cpu_torch, kb)))
    return cases


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    ("name", "snapshot", "diagnosis"),
    _doctor_cases(),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_doctor_fits_the_terminal(
    name: str, snapshot: object, diagnosis: object, width: int
) -> None:
    text = render_text(diagnosis, snapshot, Terminal(width=width, colour=True))  # type: ignore[arg-type]
    commands = [c for f in diagnosis.findings if f.fix for c in f.fix.commands]  # type: ignore[attr-defined]
    _check(text, width, commands)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("installer", ["pip", "uv", "conda", "pixi"])
def test_plan_fits_the_terminal(installer: str, width: int) -> None:
    plan = plan_for(Scenario("fit", ("torch", "tensorflow"), "535.183.01", ("RTX 3090",), "3.11",
                             installer=installer))  # fmt: skip
    rendered = render_installer(plan, Where(folder="/tmp/some/where/rather/deep/plan-output"))
    text = render_plan_text(plan, rendered, (), Terminal(width=width))
    _check(text, width, list(rendered.commands))


def test_piped_output_is_not_wrapped() -> None:
    _name, snapshot, diagnosis = _doctor_cases()[-1]
    doc = doctor_doc(diagnosis, snapshot)  # type: ignore[arg-type]
    assert to_text(doc, Terminal()).count("\n") == len(doc)
    assert "\x1b" not in to_text(doc, Terminal())


def test_wrapped_prose_hangs_under_its_label() -> None:
    _name, snapshot, diagnosis = _doctor_cases()[-1]
    text = render_text(diagnosis, snapshot, Terminal(width=60))  # type: ignore[arg-type]
    rows = text.splitlines()
    why = next(n for n, row in enumerate(rows) if row.startswith("   why: "))
    assert rows[why + 1].startswith(" " * len("   why: ")) and rows[why + 1].strip()


@pytest.mark.parametrize("width", (40, 60))
def test_kb_audit_fits_the_terminal(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpuenv.cli import main

    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["kb", "audit"]) == 0
    _check(capsys.readouterr().out, width, [])


def test_a_deep_hang_leaves_continuation_lines_room_on_a_narrow_terminal() -> None:
    """At 40 columns the stack's summaries hung at column 28: one word a line."""
    _name, snapshot, diagnosis = _doctor_cases()[-1]
    text = render_text(diagnosis, snapshot, Terminal(width=40))  # type: ignore[arg-type]
    _check(text, 40, [])
    indents = [len(row) - len(row.lstrip()) for row in text.splitlines() if row.strip()]
    assert max(indents) <= 40 - MIN_ROOM
