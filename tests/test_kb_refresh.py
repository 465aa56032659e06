"""kb refresh: index pages, core metadata, the rows built from them, the TOML writer, and (network)
the committed wheels.toml against a fresh read of the index."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import Requirement

from gpuenv.errors import GpuenvError
from gpuenv.index.http import RangeAnswer
from gpuenv.kb.loader import DATA_DIR, parse_kb_file
from gpuenv.kb.toml_writer import toml_document
from gpuenv.kbtools import index_client as ic
from gpuenv.kbtools import refresh as rf
from gpuenv.kbtools.wheel_reader import Tally, WheelRead, WheelReader

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

INDEX = Path(__file__).parent / "fixtures" / "index"
BASE = "https://index.example/simple"
NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=timezone.utc)
LINUX = ic.marker_environment("linux-x86_64", "3.11")
ARM = ic.marker_environment("linux-aarch64", "3.11")


class FakeIndex:
    """Serves recorded pages by project and recorded .metadata files by name; 404 otherwise,
    and 404 for every range request (no wheel is served: see test_kb_refresh_range.py)."""

    def __init__(self, pages: dict[str, str]) -> None:
        self.pages = pages
        self.requests: list[str] = []
        self.ranges: list[str] = []

    def range(self, url: str, first: int | None, last: int, limit: int) -> RangeAnswer:
        self.ranges.append(url)
        return RangeAnswer(404, b"", 0, None, url)

    def __call__(self, url: str, accept: str) -> ic.Response:
        self.requests.append(url)
        if url.startswith(BASE):
            name = self.pages.get(url[len(BASE) :].strip("/"))
            if name is None:
                return ic.Response(url, 404, "", b"")
            kind = "application/vnd.pypi.simple.v1+json" if name.endswith("json") else "text/html"
            return ic.Response(url, 200, kind, (INDEX / name).read_bytes())
        recorded = INDEX / url.rsplit("/", 1)[-1]
        if recorded.is_file():
            return ic.Response(url, 200, "application/octet-stream", recorded.read_bytes())
        return ic.Response(url, 404, "", b"")


def metadata(name: str) -> ic.CoreMetadata:
    return ic.parse_core_metadata((INDEX / name).read_bytes())


def cuda_summary(name: str, env: dict[str, str], extras: tuple[str, ...] = ()) -> dict[str, Any]:
    lines, problems = ic.applicable_requirements(metadata(name).requires_dist, env, extras)
    assert problems == []
    return ic.summarize_pins(lines)


# -- pages -------------------------------------------------------------------------------------


def test_json_page_gives_files_with_metadata_yanked_and_requires_python() -> None:
    body = (INDEX / "torch.json").read_bytes()
    files = ic.parse_project_page(body, "application/vnd.pypi.simple.v1+json", f"{BASE}/torch/")
    by_name = {f.filename: f for f in files}
    assert len(files) == 88
    wheel = by_name["torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl"]
    assert wheel.metadata is True and wheel.metadata_sha256
    assert wheel.requires_python == ">=3.8.0"
    assert by_name["torch-2.1.2-cp311-cp311-win_amd64.whl"].metadata is False
    assert by_name["torch-2.1.2-cp38-cp38-win_amd64.whl"].yanked
    assert sum(f.yanked for f in files) == 1


def test_html_page_without_metadata_attributes_leaves_metadata_unknown() -> None:
    body = (INDEX / "torchvision.html").read_bytes()
    files = ic.parse_project_page(body, "text/html", f"{BASE}/torchvision/")
    assert {f.metadata for f in files} == {None}
    yanked = {f.filename.split("-")[1] for f in files if f.yanked}
    assert yanked == {"0.15.0"}
    assert all(f.requires_python == ">=3.8" for f in files)
    assert all(f.url.startswith("https://files.example/") and "#" in f.url for f in files)
    assert ic.metadata_url(files[0]).endswith(".whl.metadata")


def test_html_page_reads_pep_714_attributes() -> None:
    page = (
        b'<a href="/f/x-1.0-py3-none-any.whl#sha256=ab" data-core-metadata="sha256=cd" '
        b'data-requires-python="&gt;=3.9">x-1.0-py3-none-any.whl</a>'
        b'<a href="/f/x-0.9-py3-none-any.whl" data-yanked="">x-0.9-py3-none-any.whl</a>'
    )
    new, old = ic.parse_project_page(page, "text/html", f"{BASE}/x/")
    assert (new.metadata, new.metadata_sha256, new.requires_python) == (True, "cd", ">=3.9")
    assert new.url == "https://index.example/f/x-1.0-py3-none-any.whl#sha256=ab"
    assert (old.metadata, old.yanked) == (False, True)


@pytest.mark.parametrize(
    "body",
    [(INDEX / "garbled.json").read_bytes(), b'{"files": 3}', b'{"files": [{"url": "x"}]}', b"\x00"],
)
def test_garbled_pages_raise(body: bytes) -> None:
    with pytest.raises(ic.IndexUnavailable):
        ic.parse_project_page(body, "application/vnd.pypi.simple.v1+json", f"{BASE}/torch/")


# -- wheel names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "platform"),
    [
        ("manylinux1_x86_64", "linux-x86_64"),
        ("manylinux2014_aarch64", "linux-aarch64"),
        ("manylinux_2_28_x86_64", "linux-x86_64"),
        ("musllinux_1_2_x86_64", "linux-musl-x86_64"),
        ("linux_x86_64", "linux-x86_64"),
        ("win_amd64", "windows-x86_64"),
        ("win_arm64", "windows-arm64"),
        ("macosx_11_0_arm64", "macos-arm64"),
        ("macosx_10_9_x86_64", "macos-x86_64"),
        ("any", "any"),
    ],
)
def test_platform_tags_are_normalised(tag: str, platform: str) -> None:
    assert ic.normalize_platform(tag) == platform


def test_wheel_names_give_version_build_python_and_platforms() -> None:
    def wheel(name: str) -> ic.Wheel:
        parsed = ic.parse_wheel(ic.IndexFile(name, f"https://f/{name}", None, False, None))
        assert parsed is not None
        return parsed

    built = wheel("torch-2.10.0-3-cp314-cp314t-manylinux_2_28_x86_64.whl")
    assert (str(built.version), built.build, built.python, built.free_threaded) == (
        "2.10.0",
        3,
        "3.14",
        True,
    )
    assert built.python_tags == {"cp314t"}
    tf = wheel("tensorflow-2.15.0.post1-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert tf.platforms == {"linux-x86_64"} and tf.python_tags == {"cp310"}
    assert wheel("x-1.0-cp39-abi3-macosx_10_9_universal2.whl").platforms == {
        "macos-arm64",
        "macos-x86_64",
    }
    # the older multi-architecture Mac formats hold no arm64 code
    assert wheel("x-0.1-cp37-cp37m-macosx_10_6_intel.whl").platforms == {"macos-x86_64"}
    assert wheel("x-0.1-cp37-cp37m-macosx_10_9_universal.whl").platforms == {"macos-x86_64"}
    assert wheel("jax-0.5.0-py3-none-any.whl").python_tags == {"py3"}
    assert ic.parse_wheel(ic.IndexFile("x-1.0.tar.gz", "u", None, False, None)) is None


# -- core metadata -------------------------------------------------------------------------------


def test_torch_cu12_pins_on_linux_x86_64_only() -> None:
    name = "torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl.metadata"
    assert metadata(name).requires_python == ">=3.8.0"
    summary = cuda_summary(name, LINUX)
    assert (summary["cuda"], summary["cudnn"], summary["nccl"]) == ("12.1", "8.9.2.26", "2.18.1")
    assert "nvidia-cuda-runtime-cu12 (==12.1.105)" in summary["pins"]
    assert not any("triton" in pin for pin in summary["pins"])
    assert cuda_summary(name, ARM) == {}  # the pins carry platform_machine == "x86_64"
    assert cuda_summary(name, ic.marker_environment("windows-x86_64", "3.11")) == {}


def test_torch_2_11_cuda_toolkit_pins_on_both_linux_platforms() -> None:
    for name, env in (
        ("torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl.metadata", LINUX),
        ("torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl.metadata", ARM),
    ):
        summary = cuda_summary(name, env)
        assert (summary["cuda"], summary["cudnn"], summary["nccl"]) == (
            "13.0",
            "9.19.0.56",
            "2.28.9",
        )
        assert summary["pins"][0].startswith("cuda-toolkit[cublas,cudart")
        assert not any(pin.startswith("cuda-bindings") for pin in summary["pins"])


def test_tensorflow_pins_count_only_with_the_and_cuda_extra() -> None:
    name = "tensorflow-2.19.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl.metadata"
    assert cuda_summary(name, LINUX) == {}
    summary = cuda_summary(name, LINUX, ("and-cuda",))
    assert (summary["cuda"], summary["cudnn"], summary["nccl"]) == ("12.5", "9.3.0.75", "2.23.4")
    assert len(summary["pins"]) == 12


def test_weird_markers() -> None:
    requires = metadata("weird-markers.metadata").requires_dist
    lines, problems = ic.applicable_requirements(requires, LINUX, ("and-cuda",))
    names = [Requirement(line).name for line in lines]
    assert names == [
        "numpy",
        "nvidia-cuda-runtime-cu12",
        "nvidia-cudnn-cu12",  # extra == "AND_CUDA" is the same extra
        "nvidia-nccl-cu12",  # parentheses, single quotes
        "nvidia-cusparselt-cu12",  # "linux" in sys_platform, extra spelled and_cuda
    ]
    assert len(problems) == 2 and all("does not parse" in p for p in problems)
    summary = ic.summarize_pins(lines)
    assert (summary["cuda"], summary["cudnn"], summary["nccl"]) == ("12.4", "9.3.0.75", "2.21")
    arm, _ = ic.applicable_requirements(requires, ic.marker_environment("linux-aarch64", "3.15"))
    assert ic.summarize_pins(arm)["cuda"] == "12.4"  # from cuda-toolkit[cudart]==12.4.1
    assert any(line.startswith("nvidia-nvshmem") for line in arm)  # python_version >= "3.15"


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("a==12.1.105", "12.1.105"),
        ("a>=9.3.0.75,<10.0", "9.3.0.75"),
        ("a~=12.0", "12.0"),
        ("a==12.*", "12"),
        ("a<13", None),
    ],
)
def test_pinned_version_is_the_pin_or_the_lower_bound(line: str, version: str | None) -> None:
    assert ic.pinned_version(Requirement(line).specifier) == version


def test_index_url_from_pip_config_list_prefers_the_environment() -> None:
    text = "global.index-url='https://a.example/simple'\n:env:.index-url='https://b.example/s'\n"
    assert ic.index_url_from_config(text) == "https://b.example/s"
    assert ic.index_url_from_config("global.index-url='https://a.example/simple'") == (
        "https://a.example/simple"
    )
    extra_only = "global.extra-index-url='file:///opt/wheels/simple file:///x'\nglobal.cert='/c'"
    assert ic.index_url_from_config(extra_only) is None


# -- refresh end to end on recorded responses ---------------------------------------------------


def refreshed(tmp_path: Path, pages: dict[str, str], packages: list[str]) -> rf.RefreshReport:
    fake = FakeIndex(pages)
    report = rf.refresh(
        packages, tmp_path / "wheels.toml", BASE, fetch=fake, fetch_range=fake.range, now=NOW
    )
    assert report.requests == len(fake.requests) + len(fake.ranges)
    assert not any(url.endswith(".metadata") for url in fake.ranges)
    return report


def rows_of(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    return {(r["package"], r["version"]): r for r in doc["release"]}


def test_refresh_from_a_json_page_reads_pep_658_files_where_advertised(tmp_path: Path) -> None:
    report = refreshed(tmp_path, {"torch": "torch.json"}, ["torch"])
    rows = rows_of(report.out)
    assert sorted(v for _, v in rows) == ["1.13.1", "2.1.2", "2.10.0", "2.11.0"]
    old, new = rows[("torch", "2.1.2")], rows[("torch", "2.11.0")]
    assert (old["cuda"], old["cudnn"], old["nccl"]) == ("12.1", "8.9.2.26", "2.18.1")
    assert "cuda_aarch64" not in old
    assert old["python_tags"] == ["cp38", "cp39", "cp310", "cp311"]
    assert old["platforms"] == [
        "linux-x86_64",
        "linux-aarch64",
        "windows-x86_64",
        "macos-arm64",
        "macos-x86_64",
    ]
    assert (new["cuda"], new["cuda_aarch64"], new["requires_python"]) == ("13.0", "13.0", ">=3.10")
    assert new["locator"] == "torch 2.11.0 files and core metadata"
    assert new["metadata_read"] == ["linux-x86_64", "linux-aarch64"]
    assert new["metadata_via"] == old["metadata_via"] == "pep658"
    assert old["metadata_read"] == ["linux-x86_64"]  # no aarch64 wheel of 2.1.2 could be read
    assert rows[("torch", "2.10.0")]["locator"] == "torch 2.10.0 files"
    assert "cuda" not in rows[("torch", "2.10.0")]
    assert "torch 2.10.0: no core metadata for linux-x86_64" in report.gaps
    assert "torch 2.1.2: no core metadata for linux-aarch64" in report.gaps
    # the wheels without a PEP 658 file were tried with range requests (the fake serves none)
    assert any("torch-2.10.0-" in g and "HTTP 404" in g for g in report.gaps)
    assert report.via == {"pep658": 3} and report.problems == ()
    kb_file, problems = parse_kb_file(report.out)
    assert problems == [] and kb_file is not None and kb_file.generated


def test_refresh_from_an_html_page_reads_wheels_by_range_only(tmp_path: Path) -> None:
    report = refreshed(tmp_path, {"torch": "torch.html", "torchvision": "torchvision.html"}, [])
    assert report.rows_refreshed == 0  # an empty package list refreshes nothing
    report = refreshed(
        tmp_path, {"torch": "torch.html", "torchvision": "torchvision.html"}, ["torch"]
    )
    rows = rows_of(report.out)
    assert sorted(v for _, v in rows) == ["1.13.1", "2.1.2", "2.10.0", "2.11.0"]
    assert report.metadata_read == 0 and report.via == {}
    assert all("metadata_read" not in row for row in rows.values())
    assert "torch 2.11.0: no core metadata for linux-aarch64" in report.gaps
    report = refreshed(tmp_path, {"torchvision": "torchvision.html"}, ["torchvision"])
    rows = rows_of(report.out)
    assert rows[("torchvision", "0.15.0")]["yanked"] is True
    assert ("torch", "2.11.0") in rows  # kept: only torchvision was refreshed
    assert "requires_torch" not in rows[("torchvision", "0.16.2")]
    assert "metadata_read" not in rows[("torchvision", "0.16.2")]


def test_release_row_reads_the_torch_pin_of_torchvision() -> None:
    file = ic.IndexFile(
        "torchvision-0.16.2-cp310-cp310-manylinux1_x86_64.whl", "u", ">=3.8", False, None
    )
    wheel = ic.parse_wheel(file)
    assert wheel is not None
    spec = rf.select_packages(["torchvision"])[0]
    release = rf.Release("torchvision", wheel.version, (wheel,), advertised=False)
    meta = metadata("torchvision-0.16.2-cp310-cp310-manylinux1_x86_64.whl.metadata")
    read = {"any": (wheel, WheelRead(meta, "range"))}
    row, problems = rf.release_row(spec, release, read, NOW.date())
    assert problems == []
    assert row["requires_torch"] == "==2.1.2" and "pins" not in row
    assert row["metadata_read"] == ["any"] and row["metadata_via"] == "range"


def test_a_garbled_page_fails_cleanly_and_keeps_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "wheels.toml"
    out.write_text("old", encoding="utf-8")
    with pytest.raises(GpuenvError) as caught:
        rf.refresh(None, out, BASE, fetch=FakeIndex({"torch": "garbled.json"}), now=NOW)
    assert caught.value.code == "kb-refresh-failed"
    assert "garbled" in str(caught.value.cause)
    assert out.read_text(encoding="utf-8") == "old"
    assert list(tmp_path.iterdir()) == [out]


def test_a_network_failure_is_a_gpuenv_error(tmp_path: Path) -> None:
    def offline(url: str, accept: str) -> ic.Response:
        raise ic.IndexUnavailable(f"{url}: [Errno -3] Temporary failure in name resolution")

    with pytest.raises(GpuenvError) as caught:
        rf.refresh(["torch"], tmp_path / "w.toml", BASE, fetch=offline, now=NOW)
    assert caught.value.code == "kb-refresh-failed"
    assert not (tmp_path / "w.toml").exists()


def test_unknown_package_is_refused() -> None:
    with pytest.raises(GpuenvError) as caught:
        rf.select_packages(["tensorflow", "leftpad"])
    assert caught.value.code == "kb-unknown-package"
    assert [s.name for s in rf.select_packages(["Torch", "torch"])] == ["torch"]


# -- the TOML writer -----------------------------------------------------------------------------

_scalars = st.one_of(st.text(), st.booleans(), st.integers(-(2**63), 2**63 - 1))
_values = st.one_of(_scalars, st.lists(st.text(), max_size=30))
_rows = st.lists(st.dictionaries(st.text(min_size=1), _values, max_size=6), max_size=4)


@given(
    meta=st.dictionaries(
        st.text(min_size=1).filter(lambda k: k != "sources"), _scalars, max_size=4
    ),
    rows=_rows,
)
def test_toml_writer_round_trips_through_tomllib(meta: dict[str, Any], rows: list[Any]) -> None:
    sources = {"a-source": {"title": 't\n"x"\\', "retrieved": "2026-11-21"}}
    meta = {k: v for k, v in meta.items() if k != "release"}
    text = toml_document("a header\nline two", list(meta.items()), sources, {"release": rows})
    doc = tomllib.loads(text)
    assert doc.pop("sources") == sources
    assert doc.pop("release", []) == rows
    assert doc == meta


def test_wheels_toml_is_sorted_and_stamped() -> None:
    rows = [
        {"package": "torch", "version": "2.10.0", "python_tags": [], "platforms": []},
        {"package": "torch", "version": "2.9.1", "python_tags": [], "platforms": []},
        {"package": "jax", "version": "0.5.0", "python_tags": ["py3"], "platforms": ["any"]},
    ]
    text = rf.wheels_toml(rows, NOW)
    doc = tomllib.loads(text)
    assert [r["version"] for r in doc["release"]] == ["0.5.0", "2.9.1", "2.10.0"]
    assert doc["generated_at"] == "2026-11-21T12:00:00Z" and doc["subject"] == "wheels"
    assert doc["sources"]["package-index"]["url"] == "pip-configured index"
    assert rf.wheels_toml(list(reversed(rows)), NOW) == text


# -- the committed file ----------------------------------------------------------------------------


def committed_rows() -> dict[tuple[str, str], dict[str, Any]]:
    return rows_of(DATA_DIR / "wheels.toml")


def test_committed_wheels_toml_is_valid_and_covers_torch_2() -> None:
    kb_file, problems = parse_kb_file(DATA_DIR / "wheels.toml")
    assert problems == [] and kb_file is not None
    assert str(kb_file.meta["generated_by"]).startswith("gpuenv kb refresh ")
    rows = committed_rows()
    torch = {v: r for (p, v), r in rows.items() if p == "torch"}
    assert {"2.0.0", "2.1.2", "2.4.1", "2.8.0", "2.11.0"} <= set(torch)
    assert torch["2.5.1"]["cuda"] == "12.4" and torch["2.4.1"]["cudnn"] == "9.1.0.70"
    assert torch["2.11.0"]["cuda"] == "13.0"
    assert all(r["python_tags"] and "linux-x86_64" in r["platforms"] for r in torch.values())
    assert set(p for p, _ in rows) == {spec.name for spec in rf.PACKAGES}


@pytest.mark.real
def test_pip_reports_an_index_url() -> None:
    url = ic.pip_index_url()
    assert url.startswith(("https://", "http://", "file://")) and not url.endswith("/")


@pytest.mark.network
def test_committed_torch_rows_match_the_index() -> None:
    """Every torch release on the index has its row, with the same files; the newest release's
    pins too (one wheel per Linux platform read with range requests: a few small requests)."""
    spec = rf.select_packages(["torch"])[0]
    try:
        base = ic.pip_index_url()
        answer = ic.urllib_fetch(f"{base}/torch/", ic.JSON_ACCEPT)
    except ic.IndexUnavailable as exc:
        pytest.skip(f"the package index cannot be reached: {exc}")
    releases, _ = rf.group_releases(
        spec, ic.parse_project_page(answer.body, answer.content_type, answer.url)
    )
    tally = Tally()
    reader = WheelReader(ic.urllib_fetch, ic.urllib_range, tally)
    newest = rf.read_metadata(spec, releases[-1:], reader, workers=2)[0]
    committed = {v: r for (p, v), r in committed_rows().items() if p == "torch"}
    page_fields = ("python_tags", "platforms", "requires_python", "yanked")
    pin_fields = ("cuda", "cuda_aarch64", "cudnn", "nccl", "pins", "metadata_read", "build_cuda")
    for release in releases:
        read = newest if release is releases[-1] else {}
        row, _ = rf.release_row(spec, release, read, NOW.date())
        version = row["version"]
        assert version in committed, f"torch {version} is on the index but not in wheels.toml"
        fields = page_fields + (pin_fields if read else ())
        for name in fields:
            assert committed[version].get(name) == row.get(name), f"torch {version} {name}"
    assert tally.budget.used < 8 * 1024 * 1024, "more than a few small range requests"
