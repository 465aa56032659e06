"""The curated framework tables (torch, tensorflow, jax, cupy, onnxruntime, mmcv, djl, conda): the
data loads strictly with provenance, the lookups give the sourced answers, unknowns stay unknown,
and the tables keep their internal consistency rules."""

from __future__ import annotations

import re
import shutil
from collections import defaultdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuenv.kb.loader import DATA_DIR, KnowledgeBase, Row, load_kb, parse_kb_file
from gpuenv.kb.query import frameworks as q
from gpuenv.kb.query._frameworks_util import release_tuple
from gpuenv.versions import ComputeCapability, CudaVersion

SUBJECTS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime", "mmcv", "djl", "conda")


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """A strict load of just these subjects, so other subjects' work cannot mask these tests."""
    folder = tmp_path_factory.mktemp("kb")
    for subject in SUBJECTS:
        shutil.copy(DATA_DIR / f"{subject}.toml", folder / f"{subject}.toml")
    return load_kb(folder, strict=True)


def cc(text: str) -> ComputeCapability:
    value = ComputeCapability.parse(text)
    assert value is not None
    return value


def ccs(*texts: str) -> frozenset[ComputeCapability]:
    return frozenset(cc(text) for text in texts)


def cuda(text: str) -> CudaVersion:
    value = CudaVersion.parse(text)
    assert value is not None
    return value


def version(text: object) -> tuple[int, ...]:
    value = release_tuple(text)
    assert value is not None, text
    return value


# ---- the data itself ----------------------------------------------------------------------


def test_the_packaged_knowledge_base_loads_strictly() -> None:
    loaded = load_kb(strict=True)
    assert loaded.problems == ()
    for subject in SUBJECTS:
        assert subject in loaded.files


@pytest.mark.parametrize("subject", SUBJECTS)
def test_each_file_parses_without_problems_and_every_table_has_rows(subject: str) -> None:
    kb_file, problems = parse_kb_file(DATA_DIR / f"{subject}.toml")
    assert problems == []
    assert kb_file is not None and kb_file.tables
    assert all(rows for rows in kb_file.tables.values())


@pytest.mark.parametrize("subject", SUBJECTS)
def test_every_row_is_sourced_and_inferred_rows_state_their_rule(
    kb: KnowledgeBase, subject: str
) -> None:
    kb_file = kb.files[subject]
    for table, rows in kb_file.tables.items():
        for row in rows:
            where = f"{subject}.{table} {dict(row)}"
            assert row["source"] in kb_file.sources, where
            assert str(row["locator"]).strip(), where
            if row["status"] != "official":
                assert str(row.get("note", "")).strip(), where
    for source in kb_file.sources.values():
        assert source.get("url"), source


# ---- torch lookups --------------------------------------------------------------------------


def test_torch_2_4_1_is_the_2_4_line(kb: KnowledgeBase) -> None:
    row = q.torch_release(kb, "2.4.1")
    assert row is not None
    assert row["torch"] == "2.4"
    assert row["cuda_variants"] == ["cu118", "cu121", "cu124"]
    assert row["pypi_linux_x86_64"] == "cu121"
    assert row["cudnn"] == "9.1.0.70"
    assert q.torchvision_for(kb, "2.4.1") == "0.19"
    assert q.torchaudio_for(kb, "2.4.1") == "2.4"


def test_local_labels_and_prereleases_find_their_line(kb: KnowledgeBase) -> None:
    assert q.torch_release(kb, "2.4.1+cu118") == q.torch_release(kb, "2.4")
    assert q.torch_release(kb, "2.10.0rc1") == q.torch_release(kb, "2.10.0")
    assert q.torch_release(kb, "2.1") != q.torch_release(kb, "2.10")


def test_default_variant_per_platform(kb: KnowledgeBase) -> None:
    assert q.torch_default_variant(kb, "2.4.1", "linux-x86_64") == "cu121"
    assert q.torch_default_variant(kb, "2.5.1", "linux") == "cu124"
    assert q.torch_default_variant(kb, "2.11.0", "linux-x86_64") == "cu130"
    assert q.torch_default_variant(kb, "2.13.0", "linux-aarch64") == "cu130"
    assert q.torch_default_variant(kb, "2.4.1", "windows") == "cpu"
    assert q.torch_default_variant(kb, "2.14.0", "win32") == "cpu"
    assert q.torch_default_variant(kb, "2.4.1", "macos") == "cpu"
    assert q.torch_default_variant(kb, "1.12.1", "linux") == "cu102"
    assert q.torch_default_variant(kb, "1.13.1", "linux") == "cu117"


def test_aarch64_default_is_unknown_where_not_established(kb: KnowledgeBase) -> None:
    assert q.torch_default_variant(kb, "2.10.0", "linux-aarch64") is None


def test_torch_2_13_cu130_starts_at_turing(kb: KnowledgeBase) -> None:
    result = q.torch_arch_list(kb, "2.13.0", "cu130")
    assert result is not None
    sass, _ptx = result
    assert min(sass) == cc("7.5")
    assert cc("7.0") not in sass
    assert {cc("8.6"), cc("9.0"), cc("10.0"), cc("12.0")} <= sass


def test_torch_2_5_cu121_includes_maxwell(kb: KnowledgeBase) -> None:
    result = q.torch_arch_list(kb, "2.5.1", "cu121")
    assert result is not None
    sass, ptx = result
    assert cc("5.0") in sass
    assert sass == ccs("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")
    assert ptx == frozenset()


def test_arch_lists_follow_the_volta_drops(kb: KnowledgeBase) -> None:
    def sass(torch: str, variant: str) -> frozenset[ComputeCapability]:
        result = q.torch_arch_list(kb, torch, variant)
        assert result is not None
        return result[0]

    assert cc("7.0") in sass("2.8.0", "cu128")  # Volta re-added for 2.8 (issue #157517)
    assert cc("7.0") in sass("2.10.0", "cu128")
    assert cc("7.0") not in sass("2.11.0", "cu128")  # dropped for 2.11
    assert cc("5.0") in sass("2.14.0", "cu126")  # the legacy build keeps Maxwell


def test_windows_cu118_carries_kepler_ptx(kb: KnowledgeBase) -> None:
    result = q.torch_arch_list(kb, "2.3.1", "cu118", "windows")
    assert result == (
        ccs("3.7", "5.0", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "9.0"),
        ccs("3.7"),
    )


def test_unestablished_ptx_is_absent_not_empty(kb: KnowledgeBase) -> None:
    row = q.torch_arch_row(kb, "2.13.0", "cu130")
    assert row is not None and "ptx" not in row
    result = q.torch_arch_list(kb, "2.13.0", "cu130")
    assert result is not None and result[1] == frozenset()


def test_index_urls(kb: KnowledgeBase) -> None:
    assert q.torch_index_url(kb, "cu121") == "https://download.pytorch.org/whl/cu121"
    assert q.torch_index_url(kb, "cpu") == "https://download.pytorch.org/whl/cpu"
    assert q.torch_index_url(kb, "rocm6.2.4") == "https://download.pytorch.org/whl/rocm6.2.4"
    assert q.torch_index_url(kb, "cu999") is None
    assert q.torch_index_url(kb, "rocm0.1") is None
    assert q.torch_index_url(kb, "nonsense") is None


def test_unknown_torch_versions_are_none(kb: KnowledgeBase) -> None:
    for text in ("9.9", "2.99.0", "1.7.1", "not a version", ""):
        assert q.torch_release(kb, text) is None
        assert q.torchvision_for(kb, text) is None
        assert q.torch_default_variant(kb, text, "linux") is None
        assert q.torch_variants(kb, text) == ()
    assert q.torch_default_variant(kb, "2.4.1", "solaris") is None
    assert q.torch_arch_list(kb, "2.6.0", "cu124") is None  # not established
    assert q.torch_arch_list(kb, "2.4.1", "cu130") is None  # no such variant
    assert q.torch_arch_list(kb, "2.4.1", "cu121", "plan9") is None


def test_torch_1_11_lists_cu115(kb: KnowledgeBase) -> None:
    assert q.torch_variants(kb, "1.11.0")[:3] == ("cu102", "cu113", "cu115")
    assert q.torch_index_url(kb, "cu115") == "https://download.pytorch.org/whl/cu115"
    linux = q.torch_arch_list(kb, "1.11.0+cu115", "cu115")
    windows = q.torch_arch_list(kb, "1.11.0", "cu115", "windows")
    assert linux == (ccs("3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6"), frozenset())
    assert windows is not None and windows[1] == ccs("3.7") and cc("6.1") in windows[0]
    assert "cu115" not in q.torch_variants(kb, "1.12.1")  # not established for 1.12


def test_torch_1_8_for_kepler_and_maxwell(kb: KnowledgeBase) -> None:
    row = q.torch_release(kb, "1.8.1+cu101")
    assert row is not None and row["cuda_variants"] == ["cu101", "cu102", "cu111"]
    assert (row["python_min"], row["python_max"]) == ("3.6", "3.9")
    assert q.torch_default_variant(kb, "1.8.0", "linux") == "cu102"
    assert (q.torchvision_for(kb, "1.8.1"), q.torchaudio_for(kb, "1.8.1")) == ("0.9", "0.8")
    # every 1.x Linux CUDA wheel carries Kepler (3.7) and Maxwell (5.0) SASS
    for torch, variant in [
        ("1.8.1", "cu101"),
        ("1.8.1", "cu102"),
        ("1.8.1", "cu111"),
        ("1.10.2", "cu113"),
        ("1.11.0", "cu115"),
        ("1.12.1", "cu116"),
        ("1.13.1", "cu117"),
    ]:
        arch = q.torch_arch_list(kb, torch, variant)
        assert arch is not None and ccs("3.7", "5.0") <= arch[0], (torch, variant)
    windows = q.torch_arch_list(kb, "1.9.1", "cu102", "windows")
    assert windows == (ccs("3.7", "5.0", "6.0", "6.1", "7.0", "7.5"), ccs("3.7"))


def test_torch_1_8_to_1_10_have_python_3_6_wheels(kb: KnowledgeBase) -> None:
    for line in ("1.8", "1.9", "1.10"):
        assert (q.torch_release(kb, line) or {}).get("python_min") == "3.6", line
    assert (q.torch_release(kb, "1.11") or {}).get("python_min") == "3.7"


@given(
    patch=st.integers(min_value=0, max_value=30),
    local=st.sampled_from(["", "+cpu", "+cu121", "+rocm6.2"]),
)
def test_any_patch_of_a_known_line_finds_that_line(
    kb: KnowledgeBase, patch: int, local: str
) -> None:
    """Rule: the release row depends only on major.minor, never on the patch or local label."""
    for row in q.torch_releases(kb):
        assert q.torch_release(kb, f"{row['torch']}.{patch}{local}") is row


# ---- other frameworks -------------------------------------------------------------------------


def test_tf_2_15_uses_cuda_12_2_and_cudnn_8_9(kb: KnowledgeBase) -> None:
    row = q.tf_release(kb, "2.15.1")
    assert row is not None
    assert (row["cuda"], row["cudnn"]) == ("12.2", "8.9")
    assert row["and_cuda"] is True
    assert (row["python_min"], row["python_max"]) == ("3.9", "3.11")
    tf_213 = q.tf_release(kb, "2.13.0")
    assert tf_213 is not None and tf_213["and_cuda"] is False


def test_tf_native_windows_gpu_ends_at_2_10(kb: KnowledgeBase) -> None:
    assert q.tf_native_windows_gpu(kb, "2.10.1") is True
    assert q.tf_native_windows_gpu(kb, "2.5.0") is True
    assert q.tf_native_windows_gpu(kb, "2.11.0") is False
    assert q.tf_native_windows_gpu(kb, "2.21.0") is False
    windows_210 = q.tf_release(kb, "2.10", "windows")
    assert windows_210 is not None and windows_210["cuda"] == "11.2"
    assert q.tf_release(kb, "2.11", "windows") is None
    assert max(
        version(r["tensorflow"])
        for r in _rows(kb, "tensorflow", "release")
        if r["platform"] == "windows"
    ) == (2, 10)


def test_jax_rows_per_cuda_major(kb: KnowledgeBase) -> None:
    rows = q.jax_rows(kb, "0.9.1")
    assert [row["cuda_major"] for row in rows] == [12, 13]
    cuda13 = q.jax_row(kb, "0.9.1", 13)
    assert cuda13 is not None
    assert (cuda13["cuda_min"], cuda13["min_cc"], cuda13["min_driver"]) == ("13.0", "7.5", "580")
    old = q.jax_row(kb, "0.4.35", 12)
    assert old is not None and old["cudnn_min"] == "9.1" and old["python_min"] == "3.10"
    assert [row["cuda_major"] for row in q.jax_rows(kb, "0.6.2")] == [12]
    newest = q.jax_rows(kb, "0.12.0.1")
    assert [row["python_min"] for row in newest] == ["3.12", "3.12"]


def test_cupy_package_for_cuda(kb: KnowledgeBase) -> None:
    assert q.cupy_package_for_cuda(kb, cuda("12.4")) == "cupy-cuda12x"
    assert q.cupy_package_for_cuda(kb, cuda("13.1")) == "cupy-cuda13x"
    assert q.cupy_package_for_cuda(kb, cuda("11.5")) == "cupy-cuda11x"  # not v10's cupy-cuda115
    assert q.cupy_package_for_cuda(kb, cuda("11.1")) == "cupy-cuda111"
    assert q.cupy_package_for_cuda(kb, cuda("10.2")) == "cupy-cuda102"
    assert q.cupy_package_for_cuda(kb, cuda("9.2")) is None
    assert q.cupy_package_for_cuda(kb, cuda("14.0")) is None
    names = [row["package"] for row in q.cupy_packages_for_cuda(kb, cuda("11.5"))]
    assert names == ["cupy-cuda11x", "cupy-cuda115"]


def test_cupy_cuda12x_exists_from_cupy_11_5(kb: KnowledgeBase) -> None:
    def names(cuda_text: str, cupy: str) -> list[str]:
        rows = q.cupy_packages_for_cuda(kb, cuda(cuda_text), cupy)
        return [str(row["package"]) for row in rows]

    assert names("12.0", "11.5.0") == ["cupy-cuda12x"]
    assert names("12.0", "11.4.0") == []  # CuPy 11.4 had no CUDA 12 package
    assert names("12.4", "13.6.0") == ["cupy-cuda12x"]


def test_cupy_cuda11x_serves_cuda_11_2_to_11_8_until_cupy_13_6(kb: KnowledgeBase) -> None:
    for text in ("11.2", "11.4", "11.8"):
        assert q.cupy_package_for_cuda(kb, cuda(text)) == "cupy-cuda11x", text
        assert [r["package"] for r in q.cupy_packages_for_cuda(kb, cuda(text), "13.6.0")] == [
            "cupy-cuda11x"
        ]
        assert q.cupy_packages_for_cuda(kb, cuda(text), "14.0.0") == ()
    # CuPy 10 shipped one package per CUDA 11 minor instead
    assert [r["package"] for r in q.cupy_packages_for_cuda(kb, cuda("11.4"), "10.6.0")] == [
        "cupy-cuda114"
    ]


def test_onnxruntime_builds(kb: KnowledgeBase) -> None:
    ort_118 = q.onnxruntime_release(kb, "1.18.1")
    assert ort_118 is not None and ort_118["cuda"] == "11.8"  # CUDA 11.8 stayed on the index
    ort_119 = q.onnxruntime_release(kb, "1.19.2")
    assert ort_119 is not None and (ort_119["cuda_major"], ort_119["cudnn"]) == (12, "9")
    ort_127 = q.onnxruntime_release(kb, "1.27.0")
    assert ort_127 is not None and ort_127["cuda_major"] == 13
    builds = q.onnxruntime_builds(kb, "1.20.1")
    assert [(b["cuda_major"], b["pypi_default"]) for b in builds] == [(12, True), (11, False)]
    assert q.onnxruntime_release(kb, "0.5.0") is None
    assert q.onnxruntime_release(kb, "garbage") is None


def test_mmcv_wheels_and_find_links(kb: KnowledgeBase) -> None:
    wheels = q.mmcv_wheels(kb, "2.1.2")
    assert [w["mmcv"] for w in wheels] == ["2.2.0", "2.1.0"]
    assert wheels[0]["cuda_variants"] == ["cu118", "cu121"] and wheels[0]["cpu"] is True
    assert q.mmcv_wheels(kb, "2.5.1") == ()  # no prebuilt mmcv for torch >= 2.5
    windows = q.mmcv_wheels(kb, "2.4.0", "windows")
    assert windows == ()  # Windows wheels stop at torch 2.3
    full = q.mmcv_wheels(kb, "1.13.1", package="mmcv-full")
    assert full and full[0]["mmcv"] == "1.7.1"
    assert (
        q.mmcv_find_links(kb, "cu121", "2.1.2")
        == "https://download.openmmlab.com/mmcv/dist/cu121/torch2.1/index.html"
    )


def test_djl_releases_and_settings(kb: KnowledgeBase) -> None:
    assert q.djl_default_pytorch(kb, "0.36.0") == "2.7.1"
    rows = {row["pytorch"]: row["cuda_flavors"] for row in q.djl_releases(kb, "0.31.0")}
    assert rows == {
        "1.13.1": ["cu117"],
        "2.1.2": ["cu121"],
        "2.3.1": ["cu121"],
        "2.4.0": ["cu124"],
        "2.5.1": ["cu124"],
    }
    for name in ("PYTORCH_LIBRARY_PATH", "PYTORCH_VERSION", "PYTORCH_FLAVOR"):
        setting = q.djl_setting(kb, name)
        assert setting is not None and setting["meaning"]
    assert q.djl_releases(kb, "0.1.0") == ()
    assert q.djl_setting(kb, "NOT_A_SETTING") is None


def test_conda_facts(kb: KnowledgeBase) -> None:
    cuda_vp = q.conda_virtual_package(kb, "__cuda")
    assert cuda_vp is not None and cuda_vp["override_env"] == "CONDA_OVERRIDE_CUDA"
    assert "driver" in str(cuda_vp["meaning"])
    assert q.conda_virtual_package(kb, "__nothing") is None
    tegra = [
        b for b in q.conda_pytorch_builds(kb, "linux-aarch64") if b.get("arm_variant") == "tegra"
    ]
    assert [b["sass"] for b in tegra] == [["8.7"]]
    names = {row["name"] for row in _rows(kb, "conda", "package")}
    assert {"cuda-version", "pytorch-gpu", "pytorch-cpu"} <= names


# ---- consistency properties -----------------------------------------------------------------


def _rows(kb: KnowledgeBase, subject: str, table: str) -> tuple[Row, ...]:
    rows = kb.rows(subject, table)
    assert rows, f"{subject}.{table} is empty"
    return rows


@pytest.mark.parametrize(("subject", "table"), [("torch", "release"), ("tensorflow", "release")])
def test_python_min_is_at_most_python_max(kb: KnowledgeBase, subject: str, table: str) -> None:
    for row in _rows(kb, subject, table):
        assert version(row["python_min"]) <= version(row["python_max"]), dict(row)


def test_torch_rows_are_one_per_minor_line_newest_first(kb: KnowledgeBase) -> None:
    lines = [version(row["torch"]) for row in _rows(kb, "torch", "release")]
    assert all(len(line) == 2 for line in lines)
    assert all(a > b for a, b in zip(lines, lines[1:])), "file order must be strictly newest first"
    assert [version(row["torch"]) for row in q.torch_releases(kb)] == lines


def test_torch_release_rows_agree_with_themselves(kb: KnowledgeBase) -> None:
    """Rule: the package-index Linux build is one of the line's download.pytorch.org variants,
    variant labels are well formed, and Windows/macOS get the CPU build from the index."""
    for row in _rows(kb, "torch", "release"):
        assert row["cuda_variants"] and all(
            re.fullmatch(r"cu\d{2,3}", v) for v in row["cuda_variants"]
        ), dict(row)
        assert all(re.fullmatch(r"rocm\d+(\.\d+)*", v) for v in row.get("rocm_variants", ()))
        assert row["pypi_linux_x86_64"] in row["cuda_variants"], dict(row)
        assert (row["pypi_windows"], row["pypi_macos"]) == ("cpu", "cpu")
        cuda_label = CudaVersion.parse(row["pypi_linux_x86_64"])
        assert cuda_label is not None


def test_arch_lists_are_sorted_and_well_formed(kb: KnowledgeBase) -> None:
    for row in _rows(kb, "torch", "arch_list"):
        for field in ("sass", "ptx"):
            values = [cc(text) for text in row.get(field, [])]
            assert [str(value) for value in values] == list(row.get(field, [])), dict(row)
            assert values == sorted(values) and len(set(values)) == len(values), dict(row)
        assert set(map(cc, row.get("ptx", []))) <= set(map(cc, row["sass"])), dict(row)
    for row in _rows(kb, "conda", "pytorch_build"):
        values = [cc(text) for text in row["sass"]]
        assert values == sorted(values), dict(row)


def test_arch_list_ranges_do_not_overlap_and_name_released_variants(kb: KnowledgeBase) -> None:
    """Rule: one arch list per (torch line, variant, platform), and it belongs to a variant the
    release matrix lists for every line it covers."""
    releases = {version(row["torch"]): row for row in _rows(kb, "torch", "release")}
    seen: dict[tuple[str, str], list[tuple[tuple[int, ...], tuple[int, ...]]]] = defaultdict(list)
    for row in _rows(kb, "torch", "arch_list"):
        low, high = version(row["torch_min"]), version(row["torch_max"])
        assert low <= high, dict(row)
        spans = seen[(row["variant"], row["platform"])]
        assert all(high < other_low or low > other_high for other_low, other_high in spans)
        spans.append((low, high))
        for line, release in releases.items():
            if low <= line <= high:
                assert row["variant"] in release["cuda_variants"], (line, dict(row))


def test_index_templates_name_the_variant(kb: KnowledgeBase) -> None:
    kinds = {row["variant_kind"] for row in _rows(kb, "torch", "index")}
    assert kinds == {"cuda", "rocm", "cpu", "xpu"}
    for row in _rows(kb, "torch", "index"):
        # an index per variant; before 1.11 one page of links for every variant
        assert "{variant}" in row["url_template"] or row.get("form") == "find-links"
        assert row["url_template"].startswith("https://download.pytorch.org/whl/")


def test_jax_rows_do_not_overlap_within_a_cuda_major(kb: KnowledgeBase) -> None:
    by_major: dict[int, list[Row]] = defaultdict(list)
    for row in _rows(kb, "jax", "release"):
        assert cuda(row["cuda_min"]).major == row["cuda_major"], dict(row)
        assert all(extra.startswith(f"cuda{row['cuda_major']}") for extra in row["extras"])
        if "jax_max" in row:
            assert version(row["jax_min"]) <= version(row["jax_max"])
        by_major[int(row["cuda_major"])].append(row)
    for rows in by_major.values():
        rows.sort(key=lambda r: version(r["jax_min"]))
        for earlier, later in zip(rows, rows[1:]):
            assert "jax_max" in earlier
            assert version(earlier["jax_max"]) < version(later["jax_min"])


def test_cupy_rows_are_consistent(kb: KnowledgeBase) -> None:
    for row in _rows(kb, "cupy", "package"):
        assert cuda(row["cuda_min"]).major == row["cuda_major"], dict(row)
        if "cuda_max" in row:
            assert cuda(row["cuda_min"]) <= cuda(row["cuda_max"]), dict(row)
        if "cupy_max" in row:
            assert version(row["cupy_min"]) <= version(row["cupy_max"]), dict(row)


def test_onnxruntime_has_one_index_build_per_line(kb: KnowledgeBase) -> None:
    defaults: dict[tuple[int, ...], int] = defaultdict(int)
    for row in _rows(kb, "onnxruntime", "release"):
        assert version(row["cuda"])[0] == row["cuda_major"], dict(row)
        defaults[version(row["onnxruntime"])] += 1 if row["pypi_default"] else 0
    assert set(defaults.values()) == {1}


def test_mmcv_and_djl_rows_are_consistent(kb: KnowledgeBase) -> None:
    for row in _rows(kb, "mmcv", "wheel"):
        assert all(re.fullmatch(r"cu\d{2,3}", v) for v in row["cuda_variants"]), dict(row)
        assert row["cuda_variants"] or row["cpu"], dict(row)
    defaults: dict[str, int] = defaultdict(int)
    for row in _rows(kb, "djl", "release"):
        assert all(re.fullmatch(r"cu\d{3}", v) for v in row["cuda_flavors"]), dict(row)
        defaults[str(row["djl"])] += 1 if row.get("default") else 0
    assert set(defaults.values()) == {1}
