"""gpuenv lock, pin, unpin, guard, diff and restore on real envs with real installers.

The stand-ins (a torch 2.12.0, a package that needs torch==2.12.*, nvidia-cudnn-cu12 wheels) are
tiny wheels made here and installed from a local folder with --no-index: nothing is downloaded.
The real CPU torch 2.13.0 comes from the local file pip's configuration points at.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuenv.cli import main
from tests.wheels import make_unpackable_wheel, make_wheel

pytestmark = pytest.mark.real


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheelhouse")
    make_wheel(folder, "torch", "2.12.0")
    make_wheel(folder, "needs-old-torch", "1.0", ["torch==2.12.*"])
    make_wheel(folder, "nvidia-cudnn-cu12", "9.1.0.70")
    make_wheel(folder, "nvidia-cudnn-cu12", "8.9.7.29")
    make_wheel(folder, "plain-tool", "1.0")
    make_unpackable_wheel(folder, "breaks-cudnn", "1.0", ["nvidia-cudnn-cu12==8.9.7.29"])
    make_wheel(folder, "nvidia-nccl-cu12", "2.20.5")
    make_wheel(folder, "needs-nccl", "1.0", ["nvidia-nccl-cu12"])
    return folder


def _run(
    argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**(env or os.environ), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


def _venv(path: Path, *packages: str, find_links: Path | None = None, pip: bool = True) -> Path:
    python = path / "bin" / "python"
    done = _run([sys.executable, "-m", "venv", *([] if pip else ["--without-pip"]), str(path)])
    assert done.returncode == 0, done.stderr
    if packages:
        links = ["--no-index", "--find-links", str(find_links)] if find_links else []
        done = _run([str(python), "-m", "pip", "install", "-q", *links, *packages])
        assert done.returncode == 0, done.stderr[-2000:]
    return python


@pytest.fixture(scope="session")
def torch_venv(tmp_path_factory: pytest.TempPathFactory, cpu_torch_venv: Path) -> Path:
    """A sibling of conftest's cpu_torch_venv (the real CPU torch 2.13.0) that these tests may
    change: its files hard-linked, not copied (pip replaces files, never writes into them)."""
    source = cpu_torch_venv.parent.parent
    target = tmp_path_factory.mktemp("guard-torch") / "venv"
    shutil.copytree(source, target, symlinks=True, copy_function=_link)
    return target / "bin" / "python"


def _link(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


@pytest.fixture(scope="session")
def cudnn_venv(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Path:
    return _venv(
        tmp_path_factory.mktemp("guard-cudnn") / "venv",
        "nvidia-cudnn-cu12==9.1.0.70",
        find_links=wheelhouse,
    )


@pytest.fixture(scope="session")
def offline_find_links(wheelhouse: Path) -> str:
    """The find-links folders pip is configured with here, and the wheelhouse."""
    from gpuenv.guard.envs import config_find_links

    listed = _run([sys.executable, "-m", "pip", "config", "list"]).stdout
    return " ".join([*config_find_links(listed), str(wheelhouse)])


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline_find_links: str) -> None:
    """Every pip run by these tests (and by gpuenv for them) stays off the package index: a
    stand-in's name is a real package there, and a restore would fetch the real one."""
    monkeypatch.setenv("GPUENV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", offline_find_links)


def gpuenv(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def gpuenv_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, err = gpuenv(capsys, argv[0], "--json", *argv[1:])
    assert out.strip(), err
    return code, json.loads(out)


def freeze(python: Path) -> str:
    done = _run([str(python), "-m", "pip", "freeze", "--all"])
    assert done.returncode == 0, done.stderr
    return done.stdout


def pip_install(python: Path, wheelhouse: Path, *names: str) -> subprocess.CompletedProcess[str]:
    return _run(
        [str(python), "-m", "pip", "install", "--no-index", "--find-links", str(wheelhouse), *names]
    )


def test_pin_makes_pip_refuse_and_guard_diff_restore_bring_the_env_back(
    torch_venv: Path, wheelhouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python, prefix = str(torch_venv), torch_venv.parent.parent
    lock = tmp_path / "gpuenv.lock"
    worked = freeze(torch_venv)
    assert "torch==2.13.0+cpu" in worked

    code, out, _ = gpuenv(capsys, "lock", "--python", python, "-o", str(lock))
    assert code == 0 and "torch 2.13.0+cpu" in out
    text = lock.read_text()
    assert 'name = "torch"\nversion = "2.13.0+cpu"' in text and "critical = true" in text
    assert 'source = "find-links"' in text  # taken from the local file pip's config points at

    code, out, _ = gpuenv(capsys, "pin", "--python", python, "--dry-run")
    assert code == 0 and "+torch==2.13.0+cpu" in out and "+[install]" in out
    assert not (prefix / "pip.conf").exists()  # a dry run writes nothing

    code, data = gpuenv_json(capsys, "pin", "--python", python, "--lock", str(lock))
    assert code == 0 and {Path(f["path"]).name for f in data["files"]} == {
        "pip.conf",
        "gpuenv-constraints.txt",
    }

    # a plain pip install, run as anyone would: refused by pip itself
    refused = pip_install(torch_venv, wheelhouse, "needs-old-torch")
    assert refused.returncode != 0
    assert "(constraint) torch==2.13.0+cpu" in refused.stdout + refused.stderr
    assert freeze(torch_venv) == worked

    code, data = gpuenv_json(
        capsys, "guard", "--python", python, "--", "pip", "install", "--no-index",
        "--find-links", str(wheelhouse), "needs-old-torch",
    )  # fmt: skip
    assert code == 1 and data["refused"] and data["conflict"] and not data["ran"]

    code, data = gpuenv_json(capsys, "unpin", "--python", python)
    assert code == 0
    for name in ("pip.conf", "gpuenv-constraints.txt", "gpuenv-pin.json"):
        assert not (prefix / name).exists()

    code, out, _ = gpuenv(
        capsys, "guard", "--python", python, "--", "pip", "install", "--no-index",
        "--find-links", str(wheelhouse), "needs-old-torch",
    )  # fmt: skip
    assert code == 1
    assert "torch 2.13.0+cpu → 2.12.0" in out and "Refused" in out
    assert "needs-old-torch torch==2.13.0+cpu" in out  # the safe command
    assert freeze(torch_venv) == worked

    assert pip_install(torch_venv, wheelhouse, "needs-old-torch").returncode == 0

    code, data = gpuenv_json(capsys, "diff", "--python", python, str(lock))
    assert code == 1
    first = data["changes"][0]
    assert (first["name"], first["before"], first["after"]) == ("torch", "2.13.0+cpu", "2.12.0")
    assert first["critical"] and data["changes"][1]["name"] == "needs-old-torch"
    code, out, _ = gpuenv(capsys, "diff", "--python", python)  # against the env's last lock
    assert code == 1 and "torch 2.13.0+cpu → 2.12.0" in out

    code, out, _ = gpuenv(capsys, "restore", "--python", python, str(lock), "--dry-run")
    assert code == 0 and "uninstall --yes needs-old-torch" in out
    assert "torch==2.13.0+cpu" in out and "--find-links /opt/wheels" in out
    code, out, _ = gpuenv(capsys, "restore", "--python", python, str(lock))
    assert code == 0 and "Verified: the env matches the lock." in out
    assert freeze(torch_venv) == worked
    # after the restore, the env is as it last worked (not as it was just before the restore)
    code, out, _ = gpuenv(capsys, "diff", "--python", python)
    assert code == 0 and "No package changed." in out


def test_pin_and_unpin_leave_an_existing_pip_conf_byte_identical(
    cudnn_venv: Path, wheelhouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python, prefix = str(cudnn_venv), cudnn_venv.parent.parent
    other = tmp_path / "mine.txt"
    other.write_text("plain-tool==1.0\n")
    original = f"[global]\r\ntimeout = 30\r\n[install]\r\nconstraint = {other}".encode()
    (prefix / "pip.conf").write_bytes(original)
    try:
        assert gpuenv(capsys, "pin", "--python", python)[0] == 0
        config = _run([python, "-m", "pip", "config", "list"]).stdout
        assert f"install.constraint='{other}\\n{prefix}/gpuenv-constraints.txt'" in config
        down = _run([python, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links",
                     str(wheelhouse), "nvidia-cudnn-cu12==8.9.7.29"])  # fmt: skip
        assert down.returncode != 0 and "conflicting dependencies" in down.stdout + down.stderr
        assert gpuenv(capsys, "unpin", "--python", python)[0] == 0
        assert (prefix / "pip.conf").read_bytes() == original
        assert sorted(p.name for p in prefix.iterdir() if p.name.startswith("gpuenv")) == []
    finally:
        (prefix / "pip.conf").unlink()


def test_an_installer_that_fails_half_way_is_told_exactly(
    cudnn_venv: Path, wheelhouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = str(cudnn_venv)
    lock = tmp_path / "gpuenv.lock"
    worked = freeze(cudnn_venv)
    assert gpuenv(capsys, "lock", "--python", python, "-o", str(lock))[0] == 0
    code, data = gpuenv_json(
        capsys, "guard", "--allow", "--python", python, "--lock", str(lock), "--", "pip",
        "install", "--no-index", "--find-links", str(wheelhouse), "breaks-cudnn",
    )  # fmt: skip
    assert code == 1 and data["install_exit_code"] == 1
    assert "exited with 1" in data["install_problem"]
    assert Path(data["saved"]).is_file()  # the env as it was just before, to restore from
    titles = [c["title"] for c in data["changes_since_lock"]]
    assert titles[0] == "nvidia-cudnn-cu12 9.1.0.70 → 8.9.7.29: cuDNN 9 → 8"
    # what pip left: the requirement replaced, the failing package half there or not at all
    half = "breaks-cudnn==1.0" in freeze(cudnn_venv)
    assert titles[1:] == (["breaks-cudnn 1.0 (new): new package"] if half else [])
    code, data = gpuenv_json(capsys, "diff", "--python", python, str(lock))
    assert code == 1 and [c["title"] for c in data["changes"]] == titles
    # an install that moves nothing GPU-critical goes through; the lock's drift is told
    code, out, _ = gpuenv(
        capsys, "guard", "--python", python, "--lock", str(lock), "--", "pip", "install",
        "plain-tool",
    )  # fmt: skip
    assert code == 0 and "no GPU-critical package changed" in out
    assert "Against the lock" in out and "cuDNN 9 → 8" in out
    assert "plain-tool==1.0" in freeze(cudnn_venv)
    assert gpuenv(capsys, "restore", "--python", python, str(lock))[0] == 0
    assert freeze(cudnn_venv) == worked
    site = next((cudnn_venv.parent.parent / "lib").glob("python*/site-packages"))
    assert (site / "nvidia_cudnn_cu12").is_dir() and not (site / "nvidia").exists()  # stand-in


def test_a_pin_holds_a_version_without_a_local_label_to_its_own_build(
    cudnn_venv: Path, wheelhouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The index's CUDA torch has no local label (torch 2.5.1): a pin written `==2.5.1` lets pip
    swap in 2.5.1+cpu, which it prefers. The stand-in: nvidia-cudnn-cu12 9.1.0.70 and a package
    that needs a 9.1.0.70+local build of it."""
    python, prefix = str(cudnn_venv), cudnn_venv.parent.parent
    builds = tmp_path / "builds"
    make_wheel(builds, "nvidia-cudnn-cu12", "9.1.0.70+local")
    make_wheel(builds, "wants-local-cudnn", "1.0", ["nvidia-cudnn-cu12==9.1.0.70+local"])
    worked = freeze(cudnn_venv)
    lock = tmp_path / "worked.lock"
    assert gpuenv(capsys, "lock", "--python", python, "-o", str(lock))[0] == 0
    assert gpuenv(capsys, "pin", "--python", python)[0] == 0
    try:
        assert "nvidia-cudnn-cu12===9.1.0.70" in (prefix / "gpuenv-constraints.txt").read_text()
        swap = pip_install(cudnn_venv, builds, "wants-local-cudnn")
        assert swap.returncode != 0 and "ResolutionImpossible" in swap.stdout + swap.stderr
        assert freeze(cudnn_venv) == worked
        assert pip_install(cudnn_venv, wheelhouse, "plain-tool").returncode == 0  # the rest goes
    finally:
        assert gpuenv(capsys, "unpin", "--python", python)[0] == 0
    code, out, _ = gpuenv(
        capsys, "guard", "--python", python, "--lock", str(lock), "--", "pip", "install",
        "--no-index", "--find-links", str(builds), "wants-local-cudnn",
    )  # fmt: skip
    assert code == 1 and "9.1.0.70 → 9.1.0.70+local" in out
    # what it prints instead runs in this env, whatever pip is first on PATH
    assert f"{python} -m pip install --no-index --find-links {builds} wants-local-cudnn" in out
    assert "nvidia-cudnn-cu12===9.1.0.70" in out
    assert f"gpuenv guard --allow --python {python} --lock {lock} -- pip install" in out

    # a new GPU-critical package (a CUDA wheel a new package needs) moves nothing: it goes on
    code, out, _ = gpuenv(
        capsys, "guard", "--python", python, "--", "pip", "install", "--no-index",
        "--find-links", str(wheelhouse), "needs-nccl",
    )  # fmt: skip
    assert code == 0, out
    assert "+ nvidia-nccl-cu12 2.20.5 (new)" in out and "1 new GPU-critical package(s)" in out
    assert "nvidia-nccl-cu12==2.20.5" in freeze(cudnn_venv)

    # restore without --python: the lock's own env, named before anything is done
    broken = tmp_path / "broken.lock"
    broken.write_text(lock.read_text() + '\n[[packages]]\nname = "not-anywhere"\nversion = "1.0"\n')
    code, out, _ = gpuenv(capsys, "restore", str(broken))
    assert f"env: {prefix}" in out
    assert code == 1 and "failed: pip exited with 1: ERROR: " in out  # not-anywhere: nowhere
    assert gpuenv(capsys, "restore", str(lock))[0] == 0
    assert freeze(cudnn_venv) == worked
    elsewhere = tmp_path / "elsewhere.lock"
    elsewhere.write_text(lock.read_text().replace(str(prefix), str(tmp_path / "gone")))
    code, _, err = gpuenv(capsys, "restore", str(elsewhere))
    assert code == 2 and "which is not on this machine" in err and "--python" in err


def test_bad_and_foreign_locks(
    cudnn_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    python = str(cudnn_venv)
    corrupt = tmp_path / "corrupt.lock"
    corrupt.write_text("schema_version = 1\n[[packages]]\nname = 'torch'\n")
    code, out, err = gpuenv(capsys, "diff", "--python", python, str(corrupt))
    assert code == 2 and "is not a usable gpuenv lock: [env] is missing" in err
    assert "Traceback" not in err
    lock = tmp_path / "gpuenv.lock"
    assert gpuenv(capsys, "lock", "--python", python, "-o", str(lock))[0] == 0
    foreign = (
        lock.read_text().replace("[machine]\n", '[machine]\ndriver = "535.183.01"\n')
        + '\n[[machine.gpus]]\nname = "NVIDIA A100-SXM4-80GB"\ncompute_capability = "8.0"\n'
    )
    lock.write_text(foreign)
    code, out, _ = gpuenv(capsys, "restore", "--python", python, str(lock), "--dry-run")
    assert code == 0 and "was verified on another machine" in out
    assert "driver 535.183.01 → none found" in out and "The env already matches" in out
    code, data = gpuenv_json(capsys, "diff", "--python", python, str(lock))
    assert code == 0 and data["changes"] == [] and len(data["machine_changes"]) == 2
    snapshot = tmp_path / "snapshot.json"
    assert gpuenv(capsys, "snapshot", "--python", python, "-o", str(snapshot))[0] == 0
    code, out, _ = gpuenv(capsys, "diff", "--python", python, str(snapshot))
    assert code == 0 and "No package changed." in out


# -- uv -------------------------------------------------------------------------------------------


def _uv() -> str:
    beside = Path(sys.executable).parent / "uv"  # the test extras' uv
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        pytest.skip("uv is not installed (pip install -e '.[test]')")
    return found


def test_uv_project_pin_is_honoured_by_uv_add_and_uv_pip(
    wheelhouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    uv = _uv()
    links = tmp_path / "links"
    shutil.copytree(wheelhouse, links)
    make_wheel(links, "torch", "2.13.0+cpu")  # a stand-in: uv installs it in milliseconds
    project = tmp_path / "proj"
    project.mkdir()
    original = (
        '[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.9"\n'
        'dependencies = ["torch"]\n\n[tool.uv]\npackage = false\n'
    )
    (project / "pyproject.toml").write_text(original)
    offline = ["--no-index", "--find-links", str(links), "--offline"]
    env = {**os.environ, "UV_NO_CACHE": "1", "UV_PYTHON": sys.executable}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    monkeypatch.setenv("UV_NO_CACHE", "1")
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")
    done = _run([uv, "sync", *offline], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    python = str(project / ".venv" / "bin" / "python")
    monkeypatch.chdir(project)

    assert gpuenv(capsys, "pin", "--python", python)[0] == 0
    assert (
        'constraint-dependencies = [\n    "torch==2.13.0+cpu",\n]'
        in (project / "pyproject.toml").read_text()
    )
    added = _run([uv, "add", "needs-old-torch", *offline], cwd=project, env=env)
    assert added.returncode != 0 and "torch==2.13.0+cpu" in added.stderr
    code, data = gpuenv_json(
        capsys, "guard", "--python", python, "--", uv, "pip", "install", *offline,
        "needs-old-torch",
    )  # fmt: skip
    assert code == 1 and data["refused"] and data["conflict"]

    assert gpuenv(capsys, "unpin", "--python", python)[0] == 0
    assert (project / "pyproject.toml").read_text() == original
    code, data = gpuenv_json(
        capsys, "guard", "--python", python, "--", uv, "pip", "install", *offline,
        "needs-old-torch",
    )  # fmt: skip
    assert code == 1 and data["refused"] and not data["conflict"]
    assert (
        data["planned_changes"][0]["title"]
        == "torch 2.13.0+cpu → 2.12.0: build variant cpu → (none)"
    )
    listed = _run([uv, "pip", "list", "--python", python], env=env).stdout
    assert "2.13.0+cpu" in listed  # nothing was installed


# -- conda ----------------------------------------------------------------------------------------


CONDA_DRY_RUN = {  # the shape of `conda install --dry-run --json` (conda 24)
    "actions": {
        "FETCH": [],
        "LINK": [{"base_url": "https://conda.anaconda.org/conda-forge", "build_number": 0,
                  "build_string": "cpu_generic_py311_h0", "channel": "conda-forge",
                  "dist_name": "pytorch-2.3.0-cpu_generic_py311_h0", "name": "pytorch",
                  "platform": "linux-64", "version": "2.3.0"}],
        "PREFIX": "",
        "UNLINK": [{"base_url": "https://conda.anaconda.org/pytorch", "build_number": 0,
                    "build_string": "py3.11_cuda12.1_cudnn8.9.2_0", "channel": "pytorch",
                    "dist_name": "pytorch-2.1.0-py3.11_cuda12.1_cudnn8.9.2_0", "name": "pytorch",
                    "platform": "linux-64", "version": "2.1.0"}],
    },
    "dry_run": True,
    "prefix": "",
    "success": True,
}  # fmt: skip


def _conda_record(meta: Path, name: str, version: str, build: str, channel: str) -> None:
    record = {
        "build": build, "build_number": 0, "channel": f"https://conda.anaconda.org/{channel}/linux-64",
        "files": [], "name": name, "subdir": "linux-64", "version": version,
        "url": f"https://conda.anaconda.org/{channel}/linux-64/{name}-{version}-{build}.conda",
    }  # fmt: skip
    (meta / f"{name}-{version}-{build}.json").write_text(json.dumps(record, sort_keys=True))


def test_conda_env_pins_through_conda_meta_and_guard_reads_conda_dry_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rattler = pytest.importorskip("rattler")
    python = _venv(tmp_path / "env", pip=False)  # an interpreter whose prefix holds conda-meta
    prefix = tmp_path / "env"
    meta = prefix / "conda-meta"
    meta.mkdir()
    _conda_record(meta, "pytorch", "2.1.0", "py3.11_cuda12.1_cudnn8.9.2_0", "pytorch")
    _conda_record(meta, "cudnn", "8.9.7.29", "h092f7fd_3", "conda-forge")
    _conda_record(meta, "zlib", "1.3.1", "hb9d3cd8_2", "conda-forge")
    (meta / "pinned").write_bytes(b"numpy 1.26.*")
    lock = tmp_path / "gpuenv.lock"
    assert gpuenv(capsys, "lock", "--python", str(python), "-o", str(lock))[0] == 0
    assert 'build = "py3.11_cuda12.1_cudnn8.9.2_0"' in lock.read_text()

    assert gpuenv(capsys, "pin", "--python", str(python))[0] == 0
    lines = [x for x in (meta / "pinned").read_text().splitlines() if not x.startswith("#")]
    assert lines == [
        "numpy 1.26.*",
        "cudnn ==8.9.7.29 h092f7fd_3",
        "pytorch ==2.1.0 py3.11_cuda12.1_cudnn8.9.2_0",
    ]
    assert all(rattler.MatchSpec(x) for x in lines)
    assert gpuenv(capsys, "unpin", "--python", str(python))[0] == 0
    assert (meta / "pinned").read_bytes() == b"numpy 1.26.*"

    # conda itself is not on this machine: a stand-in answers the dry run as conda does
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "conda").write_text(
        "#!/bin/sh\ncat <<'EOF'\n" + json.dumps(CONDA_DRY_RUN) + "\nEOF\n"
    )
    (bin_dir / "conda").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code, data = gpuenv_json(
        capsys, "guard", "--python", str(python), "--", "conda", "install", "-c", "conda-forge",
        "some-tool",
    )  # fmt: skip
    assert code == 1 and data["refused"]
    change = data["planned_changes"][0]
    assert change["title"] == (
        "pytorch 2.1.0=py3.11_cuda12.1_cudnn8.9.2_0 → 2.3.0=cpu_generic_py311_h0: CUDA build lost"
    )
    assert data["safe_commands"][0] == (
        f"conda install --prefix {prefix} -c conda-forge some-tool "
        "pytorch==2.1.0=py3.11_cuda12.1_cudnn8.9.2_0"
    )
