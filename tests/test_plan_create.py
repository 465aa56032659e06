"""--create: a real env from a plan (the CPU torch 2.13.0 wheel on this machine), then checked
against the plan; and the checks themselves on recorded snapshots."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pytest

from gpuenv import cli
from gpuenv.apply import create_env, verify
from gpuenv.errors import EXIT_OK, GpuenvError
from gpuenv.facts import (
    DistributionFacts,
    FrameworkBuild,
    HostFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
)
from gpuenv.plan.model import Plan
from tests.test_plan_scenarios import Scenario, plan_for

PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _cpu_plan() -> Plan:
    return plan_for(Scenario("cpu", ("torch==2.13.0",), python=PYTHON, platform="linux-x86_64"))


def _snapshot(version: str, variant: str | None, cuda: str | None) -> Snapshot:
    env = PythonEnvFacts(
        interpreter="/env/bin/python",
        python_version=PYTHON,
        distributions=(DistributionFacts("torch", version),),
        frameworks=(
            FrameworkBuild(
                "torch",
                version,
                framework_cuda=cuda,
                variant=variant,
                is_gpu_build=cuda is not None,
            ),
        ),
    )
    host = HostFacts(os=Observation("linux", "test"), arch=Observation("x86_64", "test"))
    return Snapshot(host=host, python_env=env)


def test_the_check_accepts_the_planned_build_and_flags_another() -> None:
    plan = _cpu_plan()
    env = plan.envs[0]
    good = verify(env, _snapshot("2.13.0+cpu", "cpu", None))
    assert all(c.ok for c in good)
    bad = verify(env, _snapshot("2.13.0", "cu130", "13.0"))
    assert [c.ok for c in bad] == [False, False]


def test_create_with_a_fake_installer_runs_the_steps_in_order(tmp_path: Path) -> None:
    plan = _cpu_plan()
    calls: list[list[str]] = []

    def runner(argv: Sequence[str], timeout: float, progress: TextIO, env: object) -> int:
        calls.append(list(argv))
        if "venv" in argv:
            (tmp_path / "env" / "bin").mkdir(parents=True)
        return 0

    progress = io.StringIO()
    result = create_env(
        plan,
        tmp_path / "env",
        progress=progress,
        runner=runner,
        prober=lambda python: _snapshot("2.13.0+cpu", "cpu", None),
    )
    assert [c[1:3] for c in calls] == [["-m", "venv"], ["-m", "pip"]]
    assert calls[1][-1].endswith("gpuenv-plan-requirements.txt")
    assert "[1/3]" in progress.getvalue() and "[3/3]" in progress.getvalue()
    assert result.ok and result.tool == "venv"


@pytest.mark.parametrize("stderr", ["ascii", None])
def test_installer_progress_goes_through_the_writing_gateway(
    stderr: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip's progress bar (━) on an ASCII stderr, or no stderr at all: shown as it can be,
    never an exception halfway through creating the env."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=stderr) if stderr else None
    monkeypatch.setattr("sys.stderr", stream)

    def runner(argv: Sequence[str], timeout: float, progress: TextIO, env: object) -> int:
        progress.write("Downloading torch ━━━━━━━━ 100%\n")
        if "venv" in argv:
            (tmp_path / "env" / "bin").mkdir(parents=True)
        return 0

    result = create_env(
        _cpu_plan(),
        tmp_path / "env",
        runner=runner,
        prober=lambda python: _snapshot("2.13.0+cpu", "cpu", None),
    )
    assert result.ok
    if stream is not None:
        stream.flush()
        assert "[1/3]" in raw.getvalue().decode("ascii") and b"100%" in raw.getvalue()


def test_a_failed_install_is_an_error_that_keeps_the_env(tmp_path: Path) -> None:
    def runner(argv: Sequence[str], timeout: float, progress: TextIO, env: object) -> int:
        return 0 if "venv" in argv else 1

    with pytest.raises(GpuenvError) as caught:
        create_env(
            _cpu_plan(),
            tmp_path / "env",
            progress=io.StringIO(),
            runner=runner,
        )
    assert caught.value.code == "install-failed"


@pytest.mark.real
def test_create_a_real_env_from_a_plan_for_the_cpu_torch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpuenv plan 'torch==2.13.0' --platform linux-x86_64 --create PATH: PyTorch's CPU index is
    unreachable here, so pip takes the same wheel from the local wheel folder pip is set up with."""
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    path = tmp_path / "env"
    code = cli.main(["plan", "torch==2.13.0", "--platform", "linux-x86_64", "--create", str(path)])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "torch==2.13.0+cpu" in out
    assert f"{path} matches the plan" in out
    written = (path / "gpuenv-plan-requirements.txt").read_text(encoding="utf-8").splitlines()
    assert [line for line in written if line.startswith("torch")] == ["torch==2.13.0+cpu"]


def test_conda_create_solves_with_the_targets_driver_cuda(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = plan_for(
        Scenario("c", ("torch",), "535.183.01", ("RTX 3090",), PYTHON, installer="conda")
    )
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    seen: list[tuple[list[str], dict[str, str]]] = []

    def runner(argv: Sequence[str], timeout: float, progress: TextIO, env: object) -> int:
        assert isinstance(env, dict)
        seen.append((list(argv), dict(env)))
        return 0

    create_env(
        plan,
        tmp_path / "env",
        progress=io.StringIO(),
        runner=runner,
        prober=lambda python: _snapshot("2.13.0", None, "12.9"),
    )
    ((argv, env),) = seen
    assert argv[:3] == ["conda", "env", "create"] and env == {"CONDA_OVERRIDE_CUDA": "12.2"}
    written = Path(argv[-1]).read_text(encoding="utf-8")
    assert "  - pytorch=" in written


def test_json_stays_one_document_when_create_fails_after_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json --create: the plan is on stdout when the path turns out taken; the error goes to
    stderr only, so stdout is still one valid JSON document."""
    taken = tmp_path / "env"
    taken.mkdir()
    (taken / "file").write_text("x")
    argv = ["plan", "torch", "--platform", "linux-x86_64", "--json", "--create", str(taken)]
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["schema"] == "gpuenv-plan/1"
    assert "[env-exists]" in err
