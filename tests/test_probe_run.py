"""probe_machine as a whole on a hostile machine: a probe that raises, a command that never stops
printing, a hanging interpreter under --timeout; and the names redaction hides here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gpuenv.probe.run as run
from gpuenv.api import take_snapshot
from gpuenv.diagnose import diagnose
from gpuenv.kb import default_kb
from gpuenv.probe.access import LiveMachine, RecordedMachine
from gpuenv.probe.run import ProbeOptions, here_names, probe_machine
from gpuenv.redact import redact_snapshot, redact_text
from tests.conftest import MACHINES

ROOT = Path(__file__).resolve().parents[1]


def _boom(*_args: object, **_kwargs: object) -> object:
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("probe", "what"),
    [
        ("probe_host", "host"),
        ("probe_driver", "driver"),
        ("probe_toolkits", "toolkit"),
        ("probe_pci_gpus", "PCI"),
        ("probe_python_env", "Python environment"),
        ("probe_libraries", "library"),
    ],
)
def test_a_probe_that_raises_becomes_a_problem_not_a_crash(
    probe: str, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, probe, _boom)
    machine = RecordedMachine.load(MACHINES / "rtx3090_driver535")

    snapshot = probe_machine(machine, ProbeOptions())

    assert f"the {what} probe failed: RuntimeError: boom" in snapshot.problems
    assert snapshot.gpus or probe == "probe_driver"  # the other probes still answered
    diagnose(snapshot, default_kb())  # and the stand-in facts can be judged


def test_the_target_interpreter_gets_three_times_the_command_timeout() -> None:
    machine = RecordedMachine.load(MACHINES / "no_driver")
    machine.commands["/srv/py -c {target-script}"] = {"timed_out": True}

    snapshot = take_snapshot(python="/srv/py", timeout=2, machine=machine, redact=False)

    assert snapshot.python_env is not None
    assert snapshot.python_env.problems == ("/srv/py timed out after 6 s",)  # not 30 s


# ---- redaction of this machine's names ----------------------------------------------------------


def test_here_names_find_the_login_when_user_is_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    pwd = pytest.importorskip("pwd")
    for key in ("USER", "USERNAME", "LOGNAME", "SUDO_USER"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", lambda _uid: type("E", (), {"pw_name": "alice"})())
    monkeypatch.setattr(os, "uname", lambda: type("U", (), {"nodename": "node7.lab.example"})())
    names = here_names()
    assert "alice" in names and "node7.lab.example" in names and "node7" in names


def test_here_names_keep_the_user_behind_sudo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "root")
    monkeypatch.setenv("SUDO_USER", "bob")
    names = here_names()
    assert "bob" in names and "root" not in names


def test_a_two_letter_host_name_is_hidden_where_it_cannot_be_a_word() -> None:
    text = "/scratch/vm/env root@vm:~# vm libnvvm.so.4 535.183.01 /vm"
    assert redact_text(text, ["vm"]) == (
        "/scratch/<redacted>/env root@<redacted>:~# vm libnvvm.so.4 535.183.01 /<redacted>"
    )


def test_a_host_named_like_a_fact_does_not_change_the_facts() -> None:
    machine = RecordedMachine.load(MACHINES / "container_require_cuda")
    snapshot = probe_machine(machine, ProbeOptions(probe_python=False))
    redacted = redact_snapshot(snapshot, ["linux", "docker", "cuda"])
    assert redacted.host.os.value == snapshot.host.os.value == "linux"
    assert redacted.host.container.value == snapshot.host.container.value
    rules = [f.rule for f in diagnose(snapshot, default_kb()).findings]
    assert [f.rule for f in diagnose(redacted, default_kb()).findings] == rules


def test_windows_home_folders_are_hidden_whatever_their_case() -> None:
    assert redact_text(r"c:\users\alice\env C:\Users\bob") == r"c:\users\<user>\env C:\Users\<user>"


@pytest.mark.real
def test_this_machines_snapshot_hides_host_and_user_names(tmp_path: Path) -> None:
    """`gpuenv snapshot --json` here (root, a short host name): the host name, a user's name and
    GPU UUIDs put where a snapshot keeps them are gone; `--no-redact` keeps them."""
    host = os.uname().nodename
    uuid = "GPU-5b2b9d3e-1c2f-4a7e-9d3b-0f1e2d3c4b5a"
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "USER": "alice-tester",
        "LD_LIBRARY_PATH": f"/scratch/{host}/lib:/home/alice-tester/lib:/data/alice-tester/x",
        "CUDA_VISIBLE_DEVICES": uuid,
        "CUDA_HOME": f"/scratch/{host}/cuda-12.4",
        **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
    }

    def snapshot(*flags: str) -> str:
        argv = [sys.executable, "-m", "gpuenv", "snapshot", "--json", "--python", sys.executable]
        done = subprocess.run(
            [*argv, *flags], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    redacted = snapshot()
    assert json.loads(redacted)["redacted"] is True
    assert not re.search(rf"(?<![\w.-]){re.escape(host)}(?=[/\\:\"])", redacted)
    assert "alice-tester" not in redacted and uuid not in redacted
    assert "/scratch/<redacted>/lib" in redacted and "/home/<user>/lib" in redacted
    kept = snapshot("--no-redact")
    assert f"/scratch/{host}/lib" in kept and "/data/alice-tester/x" in kept and uuid in kept


@pytest.mark.real
@pytest.mark.parametrize(
    ("kind", "message"), [("dir", "is a directory"), ("file", "not executable")]
)
def test_an_interpreter_that_is_not_a_program_says_why(
    kind: str, message: str, tmp_path: Path
) -> None:
    target = tmp_path / "python"
    if kind == "dir":
        target.mkdir()
    else:
        target.write_text("#!/bin/sh\necho hi\n")  # no execute bit
    env = take_snapshot(python=str(target), machine=LiveMachine(), redact=False).python_env
    assert env is not None and len(env.problems) == 1
    assert message in env.problems[0] and "Errno" not in env.problems[0]


@pytest.mark.real
def test_interrupting_a_snapshot_stops_the_commands_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the target interpreter hangs: gpuenv stops now, not after the timeout."""
    hang = tmp_path / "python"
    hang.write_text("#!/bin/sh\nsleep 60\n")
    hang.chmod(0o755)

    def interrupted(_what: str, result: object, _stand_in: object) -> object:
        time.sleep(1)  # the probes are running
        raise KeyboardInterrupt

    monkeypatch.setattr(run._Failures, "settle", lambda self, *a: interrupted(*a))
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        probe_machine(LiveMachine(), ProbeOptions(interpreter=str(hang), python_timeout=50))
    assert time.monotonic() - start < 20
