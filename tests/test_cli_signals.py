"""Interrupting gpuenv as a user does, in a child process: Ctrl-C (SIGINT) and SIGTERM stop it at
once with their exit codes (130, 143) and kill the commands it was waiting for; a tool that leaves
a process behind holding its output pipe does not hold gpuenv. Times are hang guards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.real, pytest.mark.skipif(os.name != "posix", reason="POSIX signals")]


def _fake_smi(folder: Path, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body)
    smi.chmod(0o755)
    return smi


def _start(bin_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return subprocess.Popen(
        [sys.executable, "-m", "gpuenv", "snapshot", "--json", "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _wait_for(path: Path) -> int:
    for _ in range(200):
        if path.exists() and path.read_text().strip():
            return int(path.read_text().split()[0])
        time.sleep(0.05)
    raise AssertionError("the fake nvidia-smi never started")


def _gone(pid: int) -> bool:
    for _ in range(60):
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "State:\tZ" in state:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_a_signal_stops_a_hanging_probe_at_once_and_kills_its_commands(
    signum: int, code: int, word: str, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    _fake_smi(tmp_path / "bin", f"echo $$ >> {pids}\nexec sleep 300\n")
    proc = _start(tmp_path / "bin")
    smi = _wait_for(pids)
    start = time.monotonic()
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert time.monotonic() - start < 5  # not the 60 s timeout, nor a second nvidia-smi's
    assert word in err.decode() and b"Traceback" not in err
    assert _gone(smi)
    assert len(pids.read_text().split()) == 1  # no second nvidia-smi was started


def test_a_tool_that_leaves_a_process_holding_its_pipe_does_not_hold_the_snapshot(
    tmp_path: Path,
) -> None:
    left = tmp_path / "left"
    _fake_smi(
        tmp_path / "bin",
        f"setsid sleep 300 > /dev/stdout & echo $! > {left}\necho 'No devices were found'\n",
    )
    start = time.monotonic()
    proc = _start(tmp_path / "bin")
    _out, err = proc.communicate(timeout=120)
    took = time.monotonic() - start
    os.kill(_wait_for(left), signal.SIGKILL)
    assert proc.returncode == 0, err
    assert took < 30  # not the 300 s the left-behind process lives
