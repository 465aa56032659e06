"""`gpuenv plan` on the command line: output, files, exit codes, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuenv import cli
from gpuenv.errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK
from gpuenv.kb import default_kb
from gpuenv.snapshot_io import snapshot_json
from gpuenv.whatif import WhatIf, declared_snapshot

RTX3090 = ["--driver", "535.183.01", "--gpu", "RTX 3090", "--python-version", "3.11"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_plan_for_a_declared_machine(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "torch", *RTX3090, "--json")
    document = json.loads(out)
    assert code == EXIT_OK and document["verdict"] == "fits" and document["exit_code"] == 0
    assert document["target"]["driver"] == "535.183.01"
    assert document["envs"][0]["packages"][0]["name"] == "torch"


def test_output_folder_receives_the_installer_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(capsys, "torch", *RTX3090, "--installer", "uv", "-o", str(tmp_path))
    assert code == EXIT_OK
    assert {p.name for p in tmp_path.iterdir()} == {"requirements.txt", "pyproject.gpuenv.toml"}
    assert "written:" in out


def test_requirements_and_pyproject_files_are_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "requirements.txt").write_text("torch<2.6\nnumpy>=1.26\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["jax"]\n', encoding="utf-8"
    )
    code, out, _ = _run(
        capsys,
        "-r",
        str(tmp_path / "requirements.txt"),
        "-r",
        str(tmp_path / "pyproject.toml"),
        *RTX3090,
        "--json",
    )
    document = json.loads(out)
    assert code == EXIT_OK
    packages = {p["name"]: p for env in document["envs"] for p in env["packages"]}
    assert {"torch", "jax"} <= set(packages)
    assert packages["torch"]["version"].startswith("2.5.")
    files = document["files"]
    carried = [f for f in files.values() if "numpy>=1.26" in f.splitlines()]
    assert len(carried) == len(document["envs"])


def test_a_plan_that_fits_nowhere_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "torch>=2.11",
        "--driver",
        "470.256.02",
        "--gpu",
        "RTX 3090",
        "--python-version",
        "3.11",
    )
    assert code == EXIT_FINDINGS and "smallest change:" in out


def test_a_snapshot_file_is_a_target(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    snapshot = declared_snapshot(
        WhatIf(driver="580.65.06", gpus=("RTX 5090",), python_version="3.12"), default_kb()
    )
    path = tmp_path / "snap.json"
    path.write_text(snapshot_json(snapshot), encoding="utf-8")
    code, out, _ = _run(capsys, "torch", "--from", str(path), "--json")
    assert code == EXIT_OK and json.loads(out)["target"]["gpus"][0].startswith(
        "NVIDIA GeForce RTX 5090"
    )


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["troch", *RTX3090], "unknown-package"),
        (["torch>=>2", *RTX3090], "bad-requirement"),
        (["torch", "--gpu", "RTX 9999 Ultra", "--driver", "535.183.01"], "unknown-gpu"),
        (["torch", "--driver", "not-a-driver"], "bad-argument"),
        (["-r", "/nonexistent/requirements.txt", *RTX3090], "file-not-found"),
        ([*RTX3090], "nothing-to-plan"),
        (["torch\n--index-url evil", *RTX3090], "bad-requirement"),
    ],
)
def test_bad_input_exits_2_with_a_clear_error(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    code, out, err = _run(capsys, *argv, "--json")
    assert code == EXIT_FAILED
    assert json.loads(out)["error"] == error
    assert "Traceback" not in err


def test_create_refuses_an_existing_env_before_running_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    code, _, err = _run(capsys, "torch", *RTX3090, "--create", str(tmp_path))
    assert code == EXIT_FAILED and "does not touch an existing env" in err


def test_create_does_not_make_docker_envs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(
        capsys, "torch", *RTX3090, "--installer", "docker", "--create", str(tmp_path / "new")
    )
    assert code == EXIT_FAILED and "--create does not make docker" in err
