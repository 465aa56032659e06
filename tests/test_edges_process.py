"""The process gateway with real children: deadlines that hold even when a descendant keeps the
pipe open, whole process groups killed, bounded output, stop-all on an interrupt.

Times asserted here are hang guards (seconds against the minutes a regression would take), not
performance figures."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from gpuenv.edges import process

pytestmark = pytest.mark.real


@pytest.fixture(autouse=True)
def _runs_allowed() -> object:
    process.allow_runs()
    yield
    process.allow_runs()


def _alive(pid: int) -> bool:
    """Whether `pid` still runs, allowing a moment for a SIGKILL to land (a zombie is dead)."""
    for _ in range(40):
        status = Path(f"/proc/{pid}/status")
        try:
            if "State:\tZ" in status.read_text():
                return False
        except FileNotFoundError:
            return False
        time.sleep(0.05)
    return True


def _pid_from(path: Path) -> int:
    for _ in range(100):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


@pytest.mark.parametrize(
    ("script", "timeout", "stdout"),
    [
        # quiet: it only holds the pipe open
        ("echo first; setsid sleep 300 & echo $! > {pid}; echo last", 10, "first\nlast\n"),
        # chatty: it never stops writing into it (read for EXIT_DRAIN_S at most)
        ('setsid sh -c "while :; do echo x; done" & echo $! > {pid}; exit 0', 60, None),
    ],
    ids=["quiet", "chatty"],
)
def test_a_descendant_that_left_the_group_and_holds_the_pipe_does_not_hold_us(
    script: str, timeout: float, stdout: str | None, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    start = time.monotonic()
    result = process.run(["sh", "-c", script.format(pid=pidfile)], timeout=timeout)
    took = time.monotonic() - start
    os.kill(_pid_from(pidfile), 9)  # it left our reach on purpose (setsid); tidy up here
    assert result.returncode == 0 and result.ok
    assert stdout is None or result.stdout == stdout
    assert took < timeout / 2  # not the 300 s of the sleep, nor the timeout


def test_at_the_deadline_the_whole_group_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 300 & echo $! > {pidfile}; echo started; wait"
    start = time.monotonic()
    result = process.run(["sh", "-c", script], timeout=1)
    assert result.timed_out and result.returncode is None and not result.ok
    assert result.stdout == "started\n"  # what it said before the deadline is kept
    assert time.monotonic() - start < 5
    assert not _alive(_pid_from(pidfile))
    assert "timed out after 1 s" in (result.problem() or "")


def test_descendants_left_in_the_group_are_killed_when_the_child_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    result = process.run(["sh", "-c", f"sleep 300 & echo $! > {pidfile}; exit 3"], timeout=10)
    assert result.returncode == 3 and not result.timed_out
    assert not _alive(_pid_from(pidfile))


def test_huge_output_keeps_a_head_and_a_tail_and_says_what_was_cut() -> None:
    chatty = (
        "import sys; w = sys.stdout.write; w('HEAD\\n'); "
        "[w('x' * 1023 + '\\n') for _ in range(100 * 1024)]; w('TAIL\\n')"
    )
    result = process.run([sys.executable, "-c", chatty], timeout=60, keep=1024 * 1024)
    assert result.ok and result.cut_bytes > 90 * 1024 * 1024
    assert result.stdout.startswith("HEAD\n") and result.stdout.endswith("TAIL\n")
    assert f"[gpuenv: {result.cut_bytes} bytes of output cut here]" in result.stdout
    assert len(result.stdout) < 1024 * 1024 + 200


def test_a_child_that_never_stops_printing_ends_at_its_deadline_with_bounded_output() -> None:
    result = process.run(["yes"], timeout=1, keep=64 * 1024)
    assert result.timed_out and len(result.stdout) <= 64 * 1024 + 100 and result.cut_bytes > 0


def test_stdin_and_both_streams() -> None:
    echo = "import sys; data = sys.stdin.read(); print(len(data)); print('e', file=sys.stderr)"
    result = process.run([sys.executable, "-c", echo], timeout=60, stdin=b"abc" * 300_000)
    assert result.ok and result.stdout.strip() == "900000" and result.stderr.strip() == "e"
    assert result.cut_bytes == 0


def test_streaming_hands_over_merged_output_as_it_comes() -> None:
    seen: list[str] = []
    script = "echo one; echo two >&2; sleep 0.3; echo three"
    result = process.run_streaming(["sh", "-c", script], timeout=10, on_text=seen.append)
    assert "".join(seen) == "one\ntwo\nthree\n" == result.stdout
    assert len(seen) >= 2  # the first lines came before the child ended


def test_streaming_child_that_hangs_is_killed_at_its_deadline() -> None:
    start = time.monotonic()
    result = process.run_streaming(["sleep", "300"], timeout=1, on_text=lambda _t: None)
    assert result.timed_out and time.monotonic() - start < 5


def test_stop_all_ends_running_children_now_and_starts_no_new_one() -> None:
    results: list[process.CommandResult] = []
    worker = threading.Thread(
        target=lambda: results.append(process.run(["sleep", "300"], timeout=200))
    )
    worker.start()
    time.sleep(0.5)
    start = time.monotonic()
    process.stop_all()
    worker.join(10)
    assert not worker.is_alive() and time.monotonic() - start < 5
    assert results[0].stopped and results[0].returncode is None
    assert "stopped" in (results[0].problem() or "")
    refused = process.run(["true"], timeout=5)
    assert refused.stopped and refused.returncode is None
    process.allow_runs()
    assert process.run(["true"], timeout=5).ok


@pytest.mark.parametrize(
    ("make", "words"),
    [
        ("missing", "not found"),
        ("directory", "is a directory"),
        ("no-exec", "not executable"),
    ],
)
def test_a_program_that_cannot_start_says_why(make: str, words: str, tmp_path: Path) -> None:
    program = tmp_path / "prog"
    if make == "directory":
        program.mkdir()
    elif make == "no-exec":
        program.write_text("#!/bin/sh\n")
    result = process.run([str(program)], timeout=5)
    assert result.returncode is None and words in (result.problem() or "")


def test_a_nul_byte_in_an_argument_is_a_start_error_not_an_exception() -> None:
    result = process.run(["echo", "a\x00b"], timeout=5)
    assert result.returncode is None and result.error


@pytest.mark.skipif(os.name != "posix", reason="process groups")
def test_stop_all_never_signals_a_group_whose_leader_was_already_reaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C landing just after a child was reaped: its pid may already belong to someone
    else, so its group must not be killed again."""
    reaped: set[int] = set()
    late: list[int] = []
    real_waitpid, real_killpg = os.waitpid, os.killpg

    def waitpid(pid: int, options: int) -> tuple[int, int]:
        result = real_waitpid(pid, options)
        if result[0] == pid:
            reaped.add(pid)
            process.stop_all()
        return result

    def killpg(pgid: int, signum: int) -> None:
        if pgid in reaped:
            late.append(pgid)
        real_killpg(pgid, signum)

    monkeypatch.setattr(os, "waitpid", waitpid)
    monkeypatch.setattr(os, "killpg", killpg)
    result = process.run([sys.executable, "-c", "pass"], timeout=60)
    assert reaped and late == [] and result.returncode == 0
