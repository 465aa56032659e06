"""`gpuenv completion`: scripts made from the parser, so they know every command and option."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from gpuenv.cli import build_parser, main
from gpuenv.cli.shell_completion import script, walk


def test_the_tree_knows_every_command_and_nested_command() -> None:
    paths = {node.path for node in walk(build_parser())}
    assert {(), ("doctor",), ("plan",), ("kb",), ("kb", "show"), ("completion",)} <= paths
    doctor = next(n for n in walk(build_parser()) if n.path == ("doctor",))
    assert "--json" in doctor.options and "--from" in doctor.path_options
    assert doctor.choices["--color"] == ["auto", "always", "never"]


def _complete(words: list[str]) -> list[str]:
    text = script(build_parser(), "bash")
    words_text = " ".join(f"'{w}'" for w in words)
    program = f"{text}\nCOMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}; _gpuenv; "
    program += 'printf "%s\\n" "${COMPREPLY[@]}"'
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.real
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["gpuenv", "do"], ["doctor"]),
        (["gpuenv", "kb", "sh"], ["show"]),
        (["gpuenv", "doctor", "--js"], ["--json"]),
        (["gpuenv", "plan", "--installer", "u"], ["uv"]),
        (["gpuenv", "completion", "f"], ["fish"]),
    ],
)
def test_bash_completes_commands_options_and_choices(words: list[str], expected: list[str]) -> None:
    assert _complete(words) == expected


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_a_script(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    assert "gpuenv" in out and "doctor" in out
    if shell == "fish":
        assert "complete -c gpuenv" in out and "-l json" in out
    if shell == "zsh":
        assert out.startswith("#compdef gpuenv")


@pytest.mark.real
@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_parse_where_those_shells_exist(shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here")
    text = script(build_parser(), shell)
    done = subprocess.run([shell, "-n"], input=text, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_bad_shell_name_gets_the_sub_command_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["completion", "tcsh"])
    assert done.value.code == 2
    assert "usage: gpuenv completion" in capsys.readouterr().err


@pytest.mark.real
def test_help_starts_without_rich() -> None:
    program = "import sys; from gpuenv.cli import build_parser; build_parser(); "
    program += "print('rich' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout.strip() == "False"
