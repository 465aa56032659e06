"""kb refresh end to end against a real HTTP server on 127.0.0.1 (tests/wheel_server.py): real
wheels built with zipfile, a PEP 691 page, PEP 658 files for some wheels and range requests for
the others; plus (network) one small wheel of the real index."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from gpuenv.errors import GpuenvError
from gpuenv.index.remote_zip import Budget, RemoteZip
from gpuenv.kbtools import buildinfo
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools import refresh as rf
from tests.wheel_server import WheelServer, make_wheel, metadata_text, serving

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=timezone.utc)
PINS = ("cuda-toolkit[cudart]==13.2.2", "nvidia-cudnn-cu13==9.26.0.51", "nvidia-nccl-cu13==2.30.7")
TORCH_VERSION_PY = b"""from typing import Optional

__version__ = '2.15.0+cu132'
debug = False
cuda: Optional[str] = '13.2'
hip: Optional[str] = None
"""
TF_BUILD_INFO = b"""import collections

build_info = collections.OrderedDict([
 ('cuda_compute_capabilities', ['sm_60', 'sm_70', 'compute_90']),
 ('cuda_version', '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True)])
"""


def torch_wheel(version: str, platform: str) -> tuple[str, bytes]:
    name = f"torch-{version}-cp312-cp312-manylinux_2_28_{platform}.whl"
    meta = metadata_text("torch", version, tuple(f"{p} ; platform_system == 'Linux'" for p in PINS))
    members = {
        f"torch-{version}.dist-info/METADATA": meta,
        "torch/version.py": TORCH_VERSION_PY.replace(b"2.15.0", version.encode()),
        "torch/lib/libtorch_cuda.so": b"\0" * 200_000,
    }
    return name, make_wheel(members, stored=("torch/lib/libtorch_cuda.so",))


@pytest.fixture(scope="module")
def index() -> Iterator[WheelServer]:
    with serving() as server:
        for version in ("2.14.1", "2.15.0"):
            for platform in ("x86_64", "aarch64"):
                name, data = torch_wheel(version, platform)
                server.files[name] = data
        # 2.14.1's x86_64 wheel has a PEP 658 file too: that one is used for its metadata
        name = "torch-2.14.1-cp312-cp312-manylinux_2_28_x86_64.whl"
        server.metadata[name] = metadata_text("torch", "2.14.1", PINS)
        tf = "tensorflow-2.20.0-cp312-cp312-manylinux_2_17_x86_64.whl"
        server.files[tf] = make_wheel(
            {
                "tensorflow-2.20.0.dist-info/METADATA": metadata_text(
                    "tensorflow", "2.20.0", ("nvidia-cudnn-cu12>=9.3.0.75 ; extra == 'and-cuda'",)
                ),
                "tensorflow/python/platform/build_info.py": TF_BUILD_INFO,
            }
        )
        server.files["tensorflow-2.19.0-cp312-cp312-manylinux_2_17_x86_64.whl"] = b"not a zip"
        yield server


def refreshed(index: WheelServer, tmp_path: Path, packages: list[str], **kw: Any) -> Any:
    out = tmp_path / "wheels.toml"
    report = rf.refresh(packages, out, f"{index.base}/simple", now=NOW, workers=2, **kw)
    doc = tomllib.loads(out.read_text(encoding="utf-8"))
    return report, {(r["package"], r["version"]): r for r in doc["release"]}


def test_range_reads_fill_the_pins_and_the_build_facts(index: WheelServer, tmp_path: Path) -> None:
    index.log.clear()
    report, rows = refreshed(index, tmp_path, ["torch"])
    new, old = rows[("torch", "2.15.0")], rows[("torch", "2.14.1")]
    assert (new["cuda"], new["cuda_aarch64"], new["cudnn"], new["nccl"]) == (
        "13.2",
        "13.2",
        "9.26.0.51",
        "2.30.7",
    )
    assert (new["build_version"], new["build_cuda"]) == ("2.15.0+cu132", "13.2")
    assert new["metadata_via"] == "range" and new["metadata_read"] == [
        "linux-x86_64",
        "linux-aarch64",
    ]
    assert old["metadata_via"] == "pep658+range"  # PEP 658 for x86_64, range for aarch64
    assert old["build_cuda"] == "13.2"  # the build file still comes by range
    assert new["locator"] == "torch 2.15.0 files and core metadata and build file"
    assert report.via == {"pep658": 1, "range": 3} and report.gaps == ()
    # never a whole wheel: the 200 kB library in each wheel was not read
    assert report.bytes_read < 4 * 65536 + 20_000
    wheels = [(p, r) for p, r in index.log if p.startswith("/files/torch-") and p.endswith(".whl")]
    assert wheels and all(r.startswith("bytes=") for _, r in wheels)


def test_a_garbled_wheel_is_a_gap_and_the_rest_is_written(
    index: WheelServer, tmp_path: Path
) -> None:
    report, rows = refreshed(index, tmp_path, ["tensorflow"])
    tf = rows[("tensorflow", "2.20.0")]
    assert tf["build_cuda"] == "12.5.1" and tf["build_cudnn"] == "9"
    assert tf["build_archs"] == ["sm_60", "sm_70", "compute_90"]
    assert "metadata_read" not in rows[("tensorflow", "2.19.0")]
    garbled = [g for g in report.gaps if g.startswith("tensorflow-2.19.0-")]
    assert garbled and "no end of central directory record" in garbled[0]
    assert "tensorflow 2.19.0: no core metadata for linux-x86_64" in report.gaps


def test_the_run_cap_stops_reading_and_says_so(index: WheelServer, tmp_path: Path) -> None:
    report, _ = refreshed(index, tmp_path, ["torch"], budget=Budget(total=100_000))
    assert report.bytes_read <= 100_000
    assert any("would pass the cap of 100000 bytes" in g for g in report.gaps)


def test_the_report_summarises_and_lists_gaps_only_when_verbose(
    index: WheelServer, tmp_path: Path
) -> None:
    report, _ = refreshed(index, tmp_path, ["tensorflow"])
    short, full = report.summary(shown=1), report.summary(verbose=True)
    assert "core metadata read: 1 (1 via range)" in short
    assert short.count("gap: ") == 1 and "more gaps (-v shows them all)" in short
    assert full.count("gap: ") == len(report.gaps) == 2


def test_a_refresh_that_fails_keeps_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "wheels.toml"
    out.write_text("old", encoding="utf-8")
    with serving() as server, pytest.raises(GpuenvError) as caught:
        rf.refresh(None, out, f"{server.base}/broken", now=NOW)
    assert caught.value.code == "kb-refresh-failed" and "HTTP 503" in str(caught.value.cause)
    assert out.read_text(encoding="utf-8") == "old"


@pytest.mark.parametrize(
    ("kind", "source", "facts"),
    [
        ("torch", TORCH_VERSION_PY, {"build_version": "2.15.0+cu132", "build_cuda": "13.2"}),
        ("torch", b"cuda = None\n__version__ = '2.15.0+cpu'\n", {"build_version": "2.15.0+cpu"}),
        ("onnxruntime", b"__version__ = '1.31.1'\ncuda_version = '13.0'\n", {"build_cuda": "13.0"}),
        ("jax", b"_release_version: str = '0.12.0'\n", {"build_version": "0.12.0"}),
        ("tensorflow", b"build_info = {'is_cuda_build': False, 'cuda_version': '12'}\n", {}),
        ("torch", b"import os\ncuda = os.environ['X']\n", {}),  # never run, never guessed
        ("torch", b"def (:\n", {}),
    ],
)
def test_build_files_are_parsed_never_run(kind: str, source: bytes, facts: dict[str, str]) -> None:
    got = buildinfo.build_facts(kind, source)
    assert {k: v for k, v in got.items() if k in facts} == facts
    assert set(got) <= {"build_version", "build_cuda", "build_cudnn", "build_archs"}
    if not facts:
        assert got == {}


# -- the real index: one small wheel ----------------------------------------------------------


@pytest.mark.network
def test_the_real_index_answers_range_requests_for_a_small_wheel() -> None:
    try:
        base = ic.pip_index_url()
        answer = ic.urllib_fetch(f"{base}/jax-cuda13-plugin/", ic.JSON_ACCEPT)
    except ic.IndexUnavailable as exc:
        pytest.skip(f"the package index cannot be reached: {exc}")
    files = ic.parse_project_page(answer.body, answer.content_type, answer.url)
    wheels = [f for f in files if f.filename.endswith("manylinux_2_27_x86_64.whl")]
    wheel = max(wheels, key=lambda f: ic.parse_wheel(f).version)  # type: ignore[union-attr]
    budget = Budget(total=2 * 1024 * 1024)
    archive = RemoteZip(wheel.url, ic.urllib_range, budget).open()
    name = next(n for n in archive.members if n.endswith(".dist-info/METADATA"))
    meta = ic.parse_core_metadata(archive.read(name))
    assert meta.name == "jax-cuda13-plugin"
    assert meta.version == str(ic.parse_wheel(wheel).version)  # type: ignore[union-attr]
    assert archive.size == wheel.size and budget.used < 200_000 < archive.size


def test_the_cli_shows_progress_on_stderr_and_a_summary_on_stdout(
    index: WheelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gpuenv.cli import main

    monkeypatch.setattr(ic, "pip_index_url", lambda *a, **k: f"{index.base}/simple")
    out = tmp_path / "wheels.toml"
    code = main(["kb", "refresh", "--package", "tensorflow", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and out.exists()
    assert "kb refresh [" in captured.err and "tensorflow: 4/4 metadata reads done" in captured.err
    assert captured.out.startswith("wrote 2 release rows to ")
    assert "core metadata read: 1 (1 via range)" in captured.out
    assert len(captured.out.splitlines()) <= 16
    code = main(["kb", "refresh", "--package", "tensorflow", "--out", str(out), "-q"])
    assert code == 0 and capsys.readouterr().err == ""
