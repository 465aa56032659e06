"""`gpuenv check` as a user runs it, for real: the CPU torch venv (no GPU here: exit 3), and a venv
of fake frameworks whose import hangs, aborts, fails on a missing CUDA library or prints noise on
stdout, beside the real CPU torch. Real processes, real (short) timeouts; times are hang guards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.test_check_render import SCHEMA
from tests.test_cli import gpuenv

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.real

FAKES = {
    # package, distribution, the body of its __init__.py
    "tensorflow": (
        "tensorflow",
        "import os, time\n"
        "if os.environ.get('GPUENV_TEST_PIDS'):\n"
        "    with open(os.environ['GPUENV_TEST_PIDS'], 'a') as f:\n"
        "        f.write('%d\\n' % os.getpid())\n"
        "time.sleep(3600)\n",
    ),
    "jax": ("jax", "import os\nos.abort()\n"),
    "cupy": (
        "cupy-cuda12x",
        "raise ImportError('libcudnn.so.9: cannot open shared object file: No such file or "
        "directory')\n",
    ),
    "onnxruntime": (
        "onnxruntime-gpu",
        "import os, sys\n"
        "os.write(1, b'noise on fd 1 {\"check_version\": 1}\\n')\n"
        "print('noise through print')\n"
        "__version__ = '9.9.0'\n",
    ),
}


def site_packages(python: Path) -> Path:
    [site] = (python.parent.parent / "lib").glob("python3*/site-packages")
    return site


def venv_beside_torch(folder: Path, cpu_torch_venv: Path) -> Path:
    """A venv without pip whose site-packages links everything of the CPU torch venv's."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=60
    )
    python = folder / "bin" / "python"
    site = site_packages(python)
    for entry in site_packages(cpu_torch_venv).iterdir():
        if not entry.name.startswith(("pip", "_distutils_hack", "distutils-", "setuptools")):
            (site / entry.name).symlink_to(entry)
    return python


def fake_package(site: Path, package: str, distribution: str, body: str) -> None:
    (site / package).mkdir()
    (site / package / "__init__.py").write_text(body)
    info = site / f"{distribution.replace('-', '_')}-9.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 9.9.0\n")
    (info / "RECORD").write_text(f"{package}/__init__.py,,\n")


@pytest.fixture(scope="module")
def fake_venv(cpu_torch_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = venv_beside_torch(tmp_path_factory.mktemp("fakes") / "venv", cpu_torch_venv)
    for package, (distribution, body) in FAKES.items():
        fake_package(site_packages(python), package, distribution, body)
    return python


def check_json(*args: str, **env: str) -> tuple[int, dict[str, Any], str]:
    done = gpuenv("check", "--json", *args, **env)
    assert done.returncode in (0, 1, 3), done.stderr
    document = json.loads(done.stdout)
    jsonschema.validate(document, SCHEMA)
    return done.returncode, document, done.stderr


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in document["frameworks"]}


def steps(framework: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in framework["steps"]}


def test_the_cpu_torch_imports_reports_its_build_and_exits_3(cpu_torch_venv: Path) -> None:
    code, document, _err = check_json("--python", str(cpu_torch_venv))
    assert code == 3 and document["verdict"] == "no_gpu" and document["driver_gpus"] == []
    [torch] = document["frameworks"]
    assert (torch["name"], torch["outcome"], torch["status"]) == ("torch", "finished", "no_gpu")
    assert torch["build"]["version"] == "2.13.0+cpu" and torch["build"]["gpu_build"] is False
    assert torch["build"]["framework_cuda"] is None
    assert "Torch not compiled with CUDA enabled" in torch["device_error"]
    assert steps(torch)["import"]["status"] == "pass"
    assert steps(torch)["sees the GPUs"]["detail"] == "no GPU on this machine"
    text = gpuenv("check", "--python", str(cpu_torch_venv))
    assert text.returncode == 3
    assert "torch 2.13.0+cpu (CPU-only build) — no GPU to check" in text.stdout
    assert "gpuenv: checking torch (at most 180 s)" in text.stderr
    assert "Traceback" not in text.stdout + text.stderr


def test_hang_abort_and_missing_library_are_each_reported_while_the_others_run(
    fake_venv: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    start = time.monotonic()
    code, document, err = check_json(
        "--python", str(fake_venv), "--timeout", "4", GPUENV_TEST_PIDS=str(pids)
    )
    assert time.monotonic() - start < 60  # four short-lived children and one 4 s timeout
    assert code == 1
    found = by_name(document)
    assert list(found) == ["torch", "tensorflow", "jax", "cupy", "onnxruntime"]
    assert found["torch"]["status"] == "no_gpu"  # the real one ran, before and beside the fakes
    assert steps(found["torch"])["import"]["status"] == "pass"

    tf = found["tensorflow"]
    assert (tf["outcome"], tf["status"]) == ("timed_out", "failed")
    assert tf["error"] == "did not finish within 4 s during step 'import'; killed"
    assert [(s["name"], s["status"]) for s in tf["steps"]] == [("import", "fail")]
    assert 3.5 < tf["seconds"] < 30
    [pid] = pids.read_text().split()
    assert (
        not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    )

    jax = found["jax"]
    assert (jax["outcome"], jax["status"]) == ("crashed", "failed")
    assert jax["error"] == "crashed (SIGABRT, aborted) during step 'import'"

    cupy = found["cupy"]
    assert (cupy["outcome"], cupy["status"]) == ("finished", "failed")
    imported = steps(cupy)["import"]
    assert imported["status"] == "fail"
    assert imported["detail"] == (
        "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
    )
    assert "Traceback" in imported["error"]
    assert imported["cause"] == "missing_cuda_lib"  # through gpuenv.explain
    assert imported["explanation"]["cause"] == "missing_cuda_lib"

    ort = found["onnxruntime"]  # its noise went to stderr; stdout stayed one document
    assert steps(ort)["import"]["status"] == "pass" and ort["status"] == "failed"
    assert "noise on fd 1" in ort["stderr_tail"] and "noise through print" in ort["stderr_tail"]
    for name in ("tensorflow", "jax", "cupy", "onnxruntime"):
        assert f"gpuenv: {name}:" in err


def test_only_the_frameworks_asked_for_and_one_not_installed(cpu_torch_venv: Path) -> None:
    code, document, _err = check_json("--python", str(cpu_torch_venv), "--framework", "cupy")
    assert code == 1
    [cupy] = document["frameworks"]
    assert (cupy["outcome"], cupy["status"]) == ("not_installed", "failed")
    assert cupy["error"] == f"cupy is not installed in {cpu_torch_venv}"


def test_bad_arguments_and_a_missing_interpreter_exit_2(tmp_path: Path) -> None:
    for args in (["--framework", "mxnet"], ["--device", "-1"], ["--timeout", "0"]):
        done = gpuenv("check", *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    done = gpuenv("check", "--python", str(tmp_path / "no-python"))
    assert done.returncode == 2
    assert "cannot check" in done.stderr and "[target-unreadable]" in done.stderr


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_stops_a_hanging_check_at_once_and_kills_its_child(
    fake_venv: Path, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "GPUENV_TEST_PIDS": str(pids)}
    argv = [sys.executable, "-m", "gpuenv", "check", "--python", str(fake_venv)]
    proc = subprocess.Popen(
        [*argv, "--framework", "tensorflow", "--timeout", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
        cwd=ROOT,
    )
    for _ in range(400):
        if pids.exists() and pids.read_text().strip():
            break
        time.sleep(0.05)
    [pid] = pids.read_text().split()
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - start < 5 and b"interrupted" in err and b"Traceback" not in err
    for _ in range(60):
        if (
            not Path(f"/proc/{pid}").exists()
            or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
        ):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the hanging child outlived gpuenv")
