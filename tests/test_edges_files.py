"""The file-reading gateway and its callers: FIFOs, devices and directories are refused at once
(opening a FIFO for reading would block until a writer comes), sizes are capped per kind, and
a refused file is a fact for a probe, a clear error for a command."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuenv.cli import main
from gpuenv.edges.files import (
    LIMITS,
    decode_text,
    read_fact,
    read_stream,
    read_user_file,
    read_user_text,
)
from gpuenv.errors import GpuenvError
from gpuenv.facts import to_dict
from tests.builders import machine

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


@pytest.fixture(autouse=True)
def _hang_guard() -> Iterator[None]:
    """A regression here would block for ever: fail the test after 20 s instead."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(_signum: int, _frame: object) -> None:
        raise TimeoutError("the read blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs named pipes")
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_probe_read_of_a_fifo_is_a_fact_not_a_hang(fifo: Path) -> None:
    read = read_fact(str(fifo))
    assert read.text is None and read.problem == "a FIFO (named pipe), not a regular file"


@pytest.mark.parametrize(
    ("path", "problem"),
    [("/dev/zero", "a character device, not a regular file"), ("/", "a directory")],
)
def test_devices_and_directories_are_refused(path: str, problem: str) -> None:
    read = read_fact(path)
    assert read.text is None and read.problem is not None and read.problem.startswith(problem)


def test_a_probe_read_is_capped_and_keeps_proc_style_nul_endings(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"a" * 5000)
    assert read_fact(str(big), limit=100).text == "a" * 100
    model = tmp_path / "model"
    model.write_bytes(b"NVIDIA Jetson AGX Orin\x00")
    assert read_fact(str(model)).text == "NVIDIA Jetson AGX Orin"
    binary = tmp_path / "lib.so"
    binary.write_bytes(b"\x7fELF\x00\x01\x02rest")
    assert read_fact(str(binary)).problem == "not a text file"


def test_missing_and_unreadable_files_are_facts(tmp_path: Path) -> None:
    assert read_fact(str(tmp_path / "nothere")).problem == "not found"
    assert read_fact("a\x00b").problem is not None


def test_a_user_file_over_its_kind_cap_is_refused_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "req.txt"
    path.write_bytes(b"x" * (LIMITS["requirements"] + 1))
    with pytest.raises(GpuenvError, match="too large for a requirements file"):
        read_user_file(path, "requirements")


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"\xef\xbb\xbftorch\n", "torch\n"),
        (b"\xff\xfet\x00o\x00", "to"),
        (b"torch\n", "torch\n"),
    ],
)
def test_text_with_or_without_a_byte_order_mark(data: bytes, text: str) -> None:
    assert decode_text(data, "f") == text


def test_undecodable_text_names_the_file() -> None:
    with pytest.raises(GpuenvError, match=r"req\.txt: not a UTF-8 text file"):
        decode_text(b"\xff\xff\xff", "req.txt")


def test_read_user_text_of_a_fifo_says_what_it_is(fifo: Path) -> None:
    with pytest.raises(GpuenvError, match="it is a FIFO"):
        read_user_text(fifo, "report")


class _Stdin(io.TextIOWrapper):
    def __init__(self, data: bytes, tty: bool = False) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_the_cap_is_said_in_the_words_of_the_docs(tmp_path: Path) -> None:
    path = tmp_path / "req.txt"
    path.write_bytes(b"x" * (LIMITS["requirements"] + 1))
    with pytest.raises(GpuenvError, match="larger than 2 MB,"):
        read_user_file(path, "requirements")


def test_a_dash_is_standard_input_with_the_same_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"torch\n"))
    assert read_user_text("-", "requirements") == "torch\n"
    monkeypatch.setattr(sys, "stdin", _Stdin(b"x" * (LIMITS["requirements"] + 1)))
    with pytest.raises(GpuenvError, match="standard input: larger than 2 MB"):
        read_user_file("-", "requirements")


class _NonBlocking(io.RawIOBase):
    """A pipe another program set O_NONBLOCK on: nothing yet (None), then a piece at a time."""

    def __init__(self, pieces: list[bytes | None]) -> None:
        self.pieces = pieces

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        piece = self.pieces.pop(0) if self.pieces else b""
        if piece is None:
            return None
        buffer[: len(piece)] = piece
        return len(piece)


def test_a_non_blocking_stdin_is_read_to_its_end_not_an_internal_error() -> None:
    stream = io.BufferedReader(_NonBlocking([None, b"Assertion", None, b"Error\n"]))
    assert read_stream(stream, "report", "standard input") == b"AssertionError\n"


def test_a_dash_on_a_terminal_is_refused_rather_than_waiting_unseen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"", tty=True))
    with pytest.raises(GpuenvError, match="standard input is a terminal") as refused:
        read_user_file("-", "snapshot")
    assert "pipe the file in" in str(refused.value)


def test_a_refused_fifo_points_at_standard_input(fifo: Path) -> None:
    with pytest.raises(GpuenvError, match="give - to read standard input"):
        read_user_file(fifo, "snapshot")


def test_doctor_reads_a_snapshot_piped_into_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = machine(gpus=["RTX 3090"], driver="535.183.01")
    monkeypatch.setattr(sys, "stdin", _Stdin(json.dumps(to_dict(snapshot)).encode()))
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", "--json", "--from", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"].startswith("gpuenv-doctor")
    assert list(tmp_path.iterdir()) == []


# -- the commands that read a user's file ----------------------------------------------------


@needs_fifo
@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--from", "{fifo}"],
        ["plan", "torch", "--gpu", "RTX 3090", "--driver", "535.183.01", "-r", "{fifo}"],
        ["plan", "--gpu", "RTX 3090", "--driver", "535.183.01", "-r", "/dev/zero"],
    ],
    ids=["from", "requirements", "dev-zero"],
)
def test_commands_refuse_a_fifo_or_device_at_once(
    argv: list[str], fifo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([a.replace("{fifo}", str(fifo)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and ("FIFO" in err or "character device" in err)
    assert "Traceback" not in err


def test_an_included_file_that_is_not_a_requirements_file_is_not_echoed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    req = tmp_path / "requirements.txt"
    req.write_text(f"torch\n-r {secret}\n")
    code = main(["plan", "--gpu", "RTX 3090", "--driver", "535.183.01", "-r", str(req)])
    captured = capsys.readouterr()
    assert code == 2
    assert "secret-hash" not in captured.err + captured.out
    assert "shadow" in captured.err  # the file is named, its content is not


def test_a_file_name_read_from_a_file_reaches_the_terminal_only_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-r <name>` inside a requirements file: the name is someone else's text, and the error
    that quotes it must not retitle the terminal or clear it."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("torch\n-r \x1b]0;owned\x07\x1b[2Jnext.txt\n\u202eevil\n")
    argv = ["plan", "--gpu", "RTX 3090", "--driver", "535.183.01", "-r", str(requirements)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "\\x1b]0;owned\\x07" in err and err.count("\n") == 1


def test_a_requirements_file_with_a_byte_order_mark_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = tmp_path / "requirements.txt"
    req.write_bytes(b"\xef\xbb\xbftorch\n")
    code = main(["plan", "--gpu", "RTX 3090", "--driver", "535.183.01", "--json", "-r", str(req)])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["envs"][0]["packages"][0]["name"] == "torch"


def test_snapshot_from_file_still_works_through_the_gateway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(to_dict(machine(gpus=["RTX 3090"], driver="535.183.01"))))
    assert main(["snapshot", "--json", "--from", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"][0]["compute_capability"] == "8.6"


# -- probes on this machine with planted FIFOs ------------------------------------------------


@needs_fifo
@pytest.mark.real
def test_planted_fifos_do_not_hang_a_snapshot(tmp_path: Path) -> None:
    """A FIFO named nvcc on PATH, version.json under CUDA_HOME, a conda-meta JSON and a
    dist-info RECORD and METADATA: the snapshot finishes and names what it could not read."""
    import subprocess

    bin_dir = tmp_path / "bin"
    cuda = tmp_path / "cuda"
    conda = tmp_path / "conda"
    for folder in (bin_dir, cuda / "bin", conda / "conda-meta"):
        folder.mkdir(parents=True)
    os.mkfifo(bin_dir / "nvcc")
    os.mkfifo(cuda / "version.json")
    os.mkfifo(conda / "conda-meta" / "cuda-cudart-12.4.127-0.json")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    dist = site / "nvidia_cudnn_cu12-9.1.0.70.dist-info"
    dist.mkdir()
    os.mkfifo(dist / "RECORD")
    os.mkfifo(dist / "METADATA")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CUDA_HOME": str(cuda),
        "CONDA_PREFIX": str(conda),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuenv",
            "snapshot",
            "--json",
            "--python",
            str(venv / "bin/python"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    text = json.dumps(document)
    assert "FIFO" in text  # named as a fact somewhere (toolkit, library or distribution)
    names = [d["name"] for d in document["python_env"]["distributions"]]
    assert "nvidia_cudnn_cu12" in names or "nvidia-cudnn-cu12" in names
