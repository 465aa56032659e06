"""`kb refresh --archs`: the GPU code of one wheel, read from real nvcc 13.0 fatbins
(tests/fixtures/fatbin) inside minimal ELF libraries, inside small wheels served on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from gpuenv.cli import main
from gpuenv.errors import GpuenvError
from gpuenv.kb.loader import parse_kb_file
from gpuenv.kbtools import archs
from tests.test_fatbin import fake_container, make_elf, recorded
from tests.wheel_server import WheelServer, make_wheel, metadata_text, serving

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TODAY = date(2026, 11, 23)
WHEEL = "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"


@pytest.fixture(scope="module")
def index() -> Iterator[WheelServer]:
    with serving() as server:
        server.files[WHEEL] = make_wheel(
            {
                "torch-2.15.0.dist-info/METADATA": metadata_text("torch", "2.15.0"),
                "torch/version.py": b"__version__ = '2.15.0+cu132'\ncuda = '13.2'\n",
                "torch/lib/libtorch_cuda.so": make_elf(recorded("sm80_sm90_compute90")),
                "torch/lib/libtorch_cpu.so": b"\0" * 300_000,
            }
        )
        server.files["onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl"] = make_wheel(
            {
                "onnxruntime/capi/libonnxruntime_providers_cuda.so": make_elf(
                    recorded("sm100a_compute100a_compute103f")
                ),
            },
            stored=("onnxruntime/capi/libonnxruntime_providers_cuda.so",),
        )
        sass_only = make_elf(fake_container((2, 80, 0), (2, 90, 0)))
        server.files["cupy_cuda13x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl"] = make_wheel(
            {"cupy/cuda/cub.cpython-312-x86_64-linux-gnu.so": sass_only}
        )
        yield server


def test_the_plan_names_the_members_and_their_size_before_fetching(index: WheelServer) -> None:
    index.log.clear()
    plan = archs.plan_archs("torch==2.15.0", index_url=f"{index.base}/simple")
    assert plan.wheel.filename == WHEEL
    assert [name for name, _ in plan.members] == ["torch/lib/libtorch_cuda.so"]
    assert plan.build_member == "torch/version.py"
    assert (
        "torch 2.15.0 (linux-x86_64)" in plan.describe() and "libtorch_cuda.so" in plan.describe()
    )
    fetched = [r for p, r in index.log if p.endswith(".whl")]
    assert fetched == ["bytes=-65536"]  # planning reads only the end of the archive


def test_the_row_holds_the_fatbin_archs_and_the_build_cuda(index: WheelServer) -> None:
    plan = archs.plan_archs("torch==2.15.0", index_url=f"{index.base}/simple")
    row = archs.read_archs(plan, today=TODAY)
    assert (row["sass"], row["ptx"], row["cuda"]) == (["8.0", "9.0"], ["9.0"], "13.2")
    assert row["variant"] == "index" and row["wheel"] == WHEEL
    assert row["libraries"] == ["torch/lib/libtorch_cuda.so"]
    assert row["status"] == "observed" and "torch/version.py" in row["locator"]


def test_without_a_build_file_the_cuda_is_that_of_the_ptx_isa(index: WheelServer) -> None:
    plan = archs.plan_archs("onnxruntime-gpu==1.31.1", index_url=f"{index.base}/simple")
    row = archs.read_archs(plan, today=TODAY)
    assert (row["sass"], row["ptx"]) == (["10.0a"], ["10.0a", "10.3f"])
    assert row["cuda"] == "13.0"  # nvcc 13.0 wrote PTX ISA 9.0
    assert "PTX ISA 9.0" in row["locator"]
    assert row["ptx_isa"] == "9.0"  # recorded beside cuda: a clang build writes an older one


def test_a_wheel_that_says_nothing_of_its_cuda_gives_no_row(index: WheelServer) -> None:
    plan = archs.plan_archs("cupy-cuda13x==14.2.0", index_url=f"{index.base}/simple")
    with pytest.raises(GpuenvError, match="does not say which CUDA toolkit built it"):
        archs.read_archs(plan, today=TODAY)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("torch>=2.0", "one exact version"),
        ("leftpad==1.0", "no known GPU libraries"),
        ("=", "is not PACKAGE==VERSION"),
    ],
)
def test_bad_targets_are_refused(target: str, message: str) -> None:
    with pytest.raises(GpuenvError, match=message) as caught:
        archs.parse_target(target)
    assert caught.value.code == "kb-archs-target"


def test_rows_merge_into_binaries_toml(index: WheelServer, tmp_path: Path) -> None:
    out = tmp_path / "binaries.toml"
    plan = archs.plan_archs("torch==2.15.0", index_url=f"{index.base}/simple")
    row = archs.read_archs(plan, today=TODAY)
    archs.write_rows([row], out)
    archs.write_rows([{**row, "platform": "linux-aarch64"}, row], out)  # same key: replaced
    kb_file, problems = parse_kb_file(out)
    assert problems == [] and kb_file is not None
    rows = kb_file.tables["build"]
    assert [r["platform"] for r in rows] == ["linux-aarch64", "linux-x86_64"]
    assert tomllib.loads(out.read_text(encoding="utf-8"))["subject"] == "binaries"


def test_cc_names() -> None:
    assert [archs.cc_of(a) for a in ("sm_90a", "compute_100f", "sm_120", "sm_75")] == [
        "9.0a",
        "10.0f",
        "12.0",
        "7.5",
    ]


def test_the_cli_asks_first_and_fetches_nothing_without_yes(
    index: WheelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(archs.ic, "pip_index_url", lambda *a, **k: f"{index.base}/simple")
    out = tmp_path / "binaries.toml"
    index.log.clear()
    code = main(["kb", "refresh", "--archs", "torch==2.15.0", "--out", str(out)])
    assert code == 1 and not out.exists()
    assert "nothing is fetched without --yes" in capsys.readouterr().err
    assert len([p for p, _ in index.log if p.endswith(".whl")]) == 1  # the end record only
    code = main(["kb", "refresh", "--archs", "torch==2.15.0", "--out", str(out), "--yes"])
    captured = capsys.readouterr()
    assert code == 0 and "SASS 8.0, 9.0; PTX 9.0" in captured.out
    assert "MB to fetch" in captured.err and out.exists()


def test_sass_beyond_the_build_files_list_is_flagged(index: WheelServer) -> None:
    """TensorFlow's build_info.py names the archs of its own kernels: SASS found beyond them is
    not taken for every kernel (it stays out of sass and is said in the note)."""
    info = b"build_info = {'is_cuda_build': True, 'cuda_version': '12.5.1', "
    info += b"'cuda_compute_capabilities': ['sm_80', 'compute_90']}\n"
    index.files["tensorflow-2.20.0-cp312-cp312-manylinux_2_17_x86_64.whl"] = make_wheel(
        {
            "tensorflow/python/platform/build_info.py": info,
            "tensorflow/libtensorflow_cc.so.2": make_elf(recorded("sm80_sm90_compute90")),
        }
    )
    plan = archs.plan_archs("tensorflow==2.20.0", index_url=f"{index.base}/simple")
    row = archs.read_archs(plan, today=TODAY)
    assert (row["sass"], row["ptx"], row["cuda"]) == (["8.0"], ["9.0"], "12.5.1")
    assert "lists sm_80, compute_90" in row["note"]
    assert "SASS for 9.0 is in the library too" in row["note"]
