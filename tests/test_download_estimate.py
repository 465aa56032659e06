"""How much `plan --create` downloads, from index pages (recorded here as file lists with sizes):
the planned wheel for the target's Python and platform, the CUDA wheels it pins, the wheels a
`cuda-toolkit[...]` pin brings for its extras, local files at no cost, and what cannot be sized
named. And the command: asked on a terminal, refused without --yes elsewhere."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from gpuenv.apply.download import Download, Estimate, Target, choose_by_spec, estimate, human_size
from gpuenv.cli import main
from gpuenv.index.metadata import CoreMetadata
from gpuenv.index.pages import IndexFile
from gpuenv.plan.model import EnvPlan, PackageChoice

INDEX = "https://index.example/simple"
MB = 1_000_000


def _file(name: str, size: int | None = None) -> IndexFile:
    return IndexFile(name, f"https://files.example/{name}", None, False, None, size=size)


PAGES = {
    "torch": [
        _file("torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl", 539 * MB),
        _file("torch-2.15.0-cp311-cp311-manylinux_2_28_aarch64.whl", 483 * MB),
        _file("torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl", 540 * MB),
        _file("torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl", 530 * MB),
    ],
    "nvidia-cudnn-cu13": [
        _file("nvidia_cudnn_cu13-9.26.0.51-py3-none-manylinux_2_27_x86_64.whl", 519 * MB)
    ],
    "cuda-toolkit": [_file("cuda_toolkit-13.2.2-py2.py3-none-any.whl", 3000)],
    "nvidia-cublas": [
        _file("nvidia_cublas-13.4.1.3-py3-none-manylinux_2_27_x86_64.whl", 405 * MB),
        _file("nvidia_cublas-13.4.1.2-py3-none-manylinux_2_27_x86_64.whl", 404 * MB),
        _file("nvidia_cublas-13.5.0.1-py3-none-manylinux_2_27_x86_64.whl", 410 * MB),
    ],
    "nvidia-cuda-runtime": [
        _file("nvidia_cuda_runtime-13.2.75-py3-none-manylinux_2_27_x86_64.whl")
    ],
}
TOOLKIT_METADATA = CoreMetadata(
    "cuda-toolkit",
    "13.2.2",
    None,
    (
        "nvidia-cublas==13.4.1.*; extra == 'cublas'",
        "nvidia-cuda-runtime==13.2.75.*; extra == 'cudart'",
        "nvidia-cufft==12.2.0.57.*; extra == 'cufft'",
        "nvidia-cublas==13.4.1.*; sys_platform == 'win32' and extra == 'cublas'",
    ),
)


class Reader:
    def __init__(self, unreachable: bool = False) -> None:
        self.unreachable = unreachable
        self.heads: list[str] = []

    def files(self, index: str, name: str) -> list[IndexFile] | None:
        if self.unreachable:
            raise OSError("connection refused")
        return PAGES.get(name)

    def link_page(self, url: str) -> list[IndexFile]:
        return []

    def size(self, url: str) -> int | None:
        self.heads.append(url)
        return 12 * MB if "cuda_runtime" in url else None

    def metadata(self, file: IndexFile) -> CoreMetadata | None:
        return TOOLKIT_METADATA if file.filename.startswith("cuda_toolkit") else None


def _env(*packages: PackageChoice) -> EnvPlan:
    return EnvPlan(name="env", python="3.11", packages=packages)


TORCH = PackageChoice(
    "torch",
    "2.15.0",
    "torch",
    "index",
    cuda="13.2",
    pins=("cuda-toolkit[cublas,cudart]==13.2.2", "nvidia-cudnn-cu13==9.26.0.51"),
)
TARGET = Target("linux-x86_64", "3.11", INDEX, {})


def test_the_planned_wheel_and_every_cuda_wheel_it_pins_are_sized() -> None:
    found = estimate(_env(TORCH), TARGET, Reader())
    sizes = {d.name: (d.version, d.size) for d in found.items}
    assert sizes["torch"] == ("2.15.0", 539 * MB)  # cp311 x86_64, not aarch64 or cp312
    assert sizes["nvidia-cudnn-cu13"] == ("9.26.0.51", 519 * MB)
    assert sizes["nvidia-cublas"] == ("13.4.1.3", 405 * MB)  # the newest 13.4.1.*, not 13.5
    assert sizes["nvidia-cuda-runtime"] == ("13.2.75", 12 * MB)  # no size on the page: HEAD
    assert "nvidia-cufft" not in sizes  # an extra that was not asked for
    assert found.total == (539 + 519 + 405 + 12) * MB + 3000
    assert found.needs_asking and not found.unknown and not found.problems
    assert {d.pinned_by for d in found.items if d.name != "torch"} == {"torch"}


def test_a_local_wheel_costs_nothing() -> None:
    local = Target("linux-x86_64", "3.11", INDEX, {("torch", "2.15.0"): "/opt/wheels/t.whl"})
    cpu = PackageChoice("torch", "2.15.0+cpu", "torch", "cpu")
    found = estimate(_env(cpu), local, Reader())
    assert [d.where for d in found.items] == ["local file"] and found.total == 0
    assert not found.needs_asking


def test_an_unreachable_index_leaves_the_size_unknown_and_says_why() -> None:
    found = estimate(_env(TORCH), TARGET, Reader(unreachable=True))
    assert found.unknown and found.problems and found.needs_asking
    assert "connection refused" in found.problems[0]


def test_a_wheel_for_another_python_is_not_taken() -> None:
    found = estimate(_env(TORCH), Target("linux-x86_64", "3.13", INDEX, {}), Reader())
    assert found.items[0].size is None
    assert any("no wheel for Python 3.13" in p for p in found.problems)


def test_abi3_and_pure_wheels_fit_a_newer_python() -> None:
    files = [
        _file("x-1.0-cp39-abi3-manylinux_2_17_x86_64.whl", 5),
        _file("x-1.0-py3-none-any.whl", 1),
    ]
    wheel = choose_by_spec(files, "x", "==1.0", Target("linux-x86_64", "3.12", INDEX, {}))
    assert wheel is not None and wheel.file.size in (5, 1)


@pytest.mark.parametrize(
    ("size", "text"), [(999, "999 B"), (12_400_000, "12.4 MB"), (2_700_000_000, "2.7 GB")]
)
def test_sizes_read_as_people_write_them(size: int, text: str) -> None:
    assert human_size(size) == text


# -- the command -------------------------------------------------------------------------------

BIG = Estimate((Download("torch", "2.15.0", 2_700 * MB, "index"),))


@pytest.fixture
def big_download(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuenv.cli.downloads._estimate", lambda plan, args: BIG)


ARGV = ["plan", "torch", "--gpu", "RTX 4090", "--driver", "580.65.06", "--python-version", "3.11"]


def test_without_a_terminal_a_big_download_needs_yes_and_nothing_is_created(
    big_download: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*ARGV, "--create", str(tmp_path / "env")]) == 2
    err = capsys.readouterr().err
    assert (
        "about 2.7 GB" in err and "torch 2.15.0 (2.7 GB)" in err and "[needs-confirmation]" in err
    )
    assert not (tmp_path / "env").exists()


def test_on_a_terminal_the_user_is_asked_and_no_means_nothing_is_created(
    big_download: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    monkeypatch.setattr("gpuenv.cli.ui_from_args", _interactive)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main([*ARGV, "--create", str(tmp_path / "env")]) == 2
    err = capsys.readouterr().err
    assert "Download about 2.7 GB and create the environment? [y/N]" in err
    assert "[not-confirmed]" in err and not (tmp_path / "env").exists()


def _interactive(args: argparse.Namespace) -> object:
    from dataclasses import replace

    from gpuenv.cli.options import ui_from_args

    return replace(ui_from_args(args), interactive=True)


@pytest.mark.network
def test_the_real_index_sizes_a_cuda_torch_plan() -> None:
    """torch 2.15.0 from the index for Python 3.11 on Linux x86_64: the wheel and its CUDA
    libraries (read from the pages and from cuda-toolkit's metadata by byte ranges)."""
    from gpuenv.apply.index_reader import NetworkReader
    from gpuenv.index.http import IndexUnavailable, pip_index_url

    try:
        index = pip_index_url()
        found = estimate(_env(TORCH), Target("linux-x86_64", "3.11", index, {}), NetworkReader())
    except (IndexUnavailable, OSError) as exc:
        pytest.skip(f"the package index cannot be reached: {exc}")
    names = {d.name for d in found.items}
    assert {"torch", "nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-cuda-runtime"} <= names
    assert found.total > 1_000_000_000 and not found.unknown, found
