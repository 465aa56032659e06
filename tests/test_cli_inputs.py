"""Inputs that contradict each other or are wrong, and the meaning of flags that must be the same
on every command: a clear error naming what is wrong, never a silent guess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuenv.cli import main
from gpuenv.facts import to_dict
from tests.builders import machine, torch_build


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (
            ["--gpu", "RTX 3090", "--platform", "macos-arm64"],
            ("--gpu RTX 3090", "--platform macos-arm64"),
        ),
        (
            ["--driver", "535.183.01", "--platform", "macos-arm64"],
            ("--driver", "--platform macos-arm64"),
        ),
        (
            ["--gpu", "RTX 3090", "--platform", "macos-x86_64"],
            ("--gpu RTX 3090", "--platform macos-x86_64"),
        ),
        (
            ["--jetpack", "6.1", "--platform", "windows-x86_64"],
            ("--jetpack 6.1", "--platform windows-x86_64"),
        ),
        (["--jetpack", "6.1", "--gpu", "RTX 3090"], ("--jetpack 6.1", "--gpu RTX 3090")),
        (
            ["--gpu", "Jetson AGX Orin", "--platform", "linux-x86_64"],
            ("--gpu Jetson AGX Orin", "--platform linux-x86_64"),
        ),
    ],
)
@pytest.mark.parametrize("command", [["plan", "torch"], ["doctor", "--from", "{snap}"]])
def test_contradictory_what_if_flags_are_an_error_naming_both(
    command: list[str], flags: list[str], named: tuple[str, str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(to_dict(machine(gpus=["RTX 3090"], driver="535.183.01"))))
    argv = [a.replace("{snap}", str(snap)) for a in command] + flags
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "[contradictory-flags]" in err and all(n in err for n in named)


def test_a_gpu_family_keeps_the_name_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "torch", "--gpu", "A100", "--driver", "535.183.01", "--json"]) == 0
    target = json.loads(capsys.readouterr().out)["target"]
    assert target["gpus"] == ["A100 (8.0)"]


def test_a_bare_compute_capability_is_not_named_twice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "torch", "--gpu", "8.6", "--driver", "535.183.01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["target"]["gpus"] == ["compute capability 8.6"]


def test_the_markdown_report_says_what_made_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = machine(gpus=["RTX 3090"], driver="535.183.01",
                       frameworks=[torch_build("2.4.1+cpu", None)])  # fmt: skip
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(to_dict(snapshot)))
    main(["doctor", "--markdown", "--from", str(snap)])
    head = capsys.readouterr().out.splitlines()[2]
    assert head.startswith("gpuenv ") and "Ubuntu 22.04.4 LTS x86_64" in head
    assert "Python 3.11.7" in head and f"`gpuenv doctor --markdown --from {snap}`" in head


@pytest.mark.real
def test_plan_with_a_named_env_keeps_its_facts_and_installs_into_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    argv = ["plan", "torch", "--python", sys.executable, "--gpu", "RTX 3090",
            "--driver", "535.183.01", "--json"]  # fmt: skip
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert document["target"]["python"] == version  # the probed env, not "unknown"
    assert document["commands"][0].startswith(f"{sys.executable} -m pip install ")
    assert not any(" -m venv " in c or "uv venv" in c for c in document["commands"])


@pytest.mark.real
def test_a_named_interpreter_that_cannot_run_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--python", str(tmp_path / "nothere" / "python")]) == 2
    assert "[target-unreadable]" in capsys.readouterr().err


def test_plan_verbose_lists_every_candidate_passed_over(capsys: pytest.CaptureFixture[str]) -> None:
    """`-v` says "every candidate": the text must not stop at the first five."""
    argv = ["plan", "torch==2.1", "--gpu", "RTX 5090", "--driver", "570.86.10"]
    assert main(argv) == 1
    short = capsys.readouterr().out
    assert main([*argv, "-v"]) == 1
    full = capsys.readouterr().out
    listed = [ln for ln in full.splitlines() if ln.startswith("  torch 2.")]
    assert "more (-v or --json lists every one)" in short
    assert "more (" not in full and len(listed) > 20


def test_a_kb_filter_that_is_not_a_version_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["kb", "show", "torch", "--cuda", "bogus"])
    assert done.value.code == 2
    assert "'bogus' is not a CUDA version" in capsys.readouterr().err


@pytest.mark.real
def test_ctrl_c_while_the_command_line_is_imported_is_one_line() -> None:
    import subprocess
    import sys

    program = (
        "import builtins, sys\n"
        "real = builtins.__import__\n"
        "def interrupting(name, *a, **k):\n"
        "    if name == 'gpuenv.cli':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = interrupting\n"
        "from gpuenv._entry import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 130 and done.stderr == "gpuenv: interrupted\n"
