"""The CUDA-side knowledge base: data loads with provenance, lookups give the sourced answers,
and the compatibility rules hold as properties."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuenv.errors import GpuenvError
from gpuenv.kb.loader import DATA_DIR, KnowledgeBase, load_kb
from gpuenv.kb.query import containers, jetson
from gpuenv.kb.query import cuda as q
from gpuenv.versions import ComputeCapability, CudaVersion, DriverVersion

ROOT = Path(__file__).resolve().parents[1]

MY_SUBJECTS = ("cuda_driver", "archs", "cuda_libs", "jetson", "containers")
# The days rows were checked against their sources (one per curation pass).
CURATION_DATES = ("2026-11-21", "2026-11-23", "2026-11-24")
KB = load_kb()


def drv(text: str) -> DriverVersion:
    value = DriverVersion.parse(text)
    assert value is not None
    return value


def cu(text: str) -> CudaVersion:
    value = CudaVersion.parse(text)
    assert value is not None
    return value


def cc(text: str) -> ComputeCapability:
    value = ComputeCapability.parse(text)
    assert value is not None
    return value


# ---- the data itself ----------------------------------------------------------------------


def test_real_data_loads_strictly_with_every_subject() -> None:
    kb = load_kb(strict=True)
    assert kb.problems == ()
    for subject in MY_SUBJECTS:
        assert subject in kb.files
        assert all(rows for rows in kb.files[subject].tables.values())


@pytest.mark.parametrize("subject", MY_SUBJECTS)
def test_every_row_carries_provenance_and_inferred_rows_state_their_rule(subject: str) -> None:
    kb_file = KB.files[subject]
    for table, rows in kb_file.tables.items():
        for row in rows:
            where = f"{subject}.{table} {dict(row)}"
            assert row["source"] in kb_file.sources, where
            assert row["locator"].strip(), where
            assert row["verified"] in CURATION_DATES, where
            assert row["status"] in ("official", "observed", "inferred"), where
            if row["status"] == "inferred":
                assert "Rule" in row.get("note", "") or "rule" in row.get("note", ""), where
    for source in kb_file.sources.values():
        assert source["title"] and source["retrieved"] and source.get("url")


# Where sources may live: vendors' and projects' own sites. Package registries are never named
# (placeholders such as "{PYPI}/project/torch/" or "pip-configured index" stand for them).
SOURCE_HOSTS = {
    "anaconda.org",
    "catalog.ngc.nvidia.com",
    "conda.org",
    "developer.nvidia.com",
    "docs.conda.io",
    "docs.cupy.dev",
    "docs.jax.dev",
    "docs.nvidia.com",
    "forums.developer.nvidia.com",
    "github.com",
    "gitlab.com",
    "images.nvidia.com",
    "onnxruntime.ai",
    "pip.pypa.io",
    "pytorch.org",
    "resources.nvidia.com",
    "www.nvidia.com",
    "www.tensorflow.org",
}


@pytest.mark.parametrize("subject", sorted(KB.files))
def test_sources_live_on_vendor_or_project_sites(subject: str) -> None:
    for source_id, source in KB.files[subject].sources.items():
        url = str(source.get("url", ""))
        if not url or url.startswith("{") or url == "pip-configured index":
            continue
        if subject == "lexicon" and (ROOT / url).is_file():
            continue  # counted from the project's own corpus of public threads
        host = urlparse(url).netloc
        assert url.startswith("https://") and host in SOURCE_HOSTS, (source_id, host)


def _broken_copy(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for name in MY_SUBJECTS:
        shutil.copy(DATA_DIR / f"{name}.toml", folder / f"{name}.toml")
    target = folder / "cuda_driver.toml"
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    return folder


def test_a_row_without_provenance_is_reported(tmp_path: Path) -> None:
    folder = _broken_copy(tmp_path, 'source = "cuda-rn-13-2-2"\n', "")
    kb = load_kb(folder, strict=False)
    assert any("missing provenance field 'source'" in problem for problem in kb.problems)
    with pytest.raises(GpuenvError) as caught:
        load_kb(folder, strict=True)
    assert caught.value.code == "kb-invalid"


def test_a_bad_status_and_an_undeclared_source_are_reported(tmp_path: Path) -> None:
    folder = _broken_copy(tmp_path, 'status = "official"', 'status = "guessed"')
    folder_text = (folder / "cuda_driver.toml").read_text(encoding="utf-8")
    (folder / "cuda_driver.toml").write_text(
        folder_text.replace('source = "nvidia-smi-outputs"', 'source = "nowhere"', 1),
        encoding="utf-8",
    )
    problems = load_kb(folder, strict=False).problems
    assert any("status 'guessed'" in problem for problem in problems)
    assert any("source 'nowhere' is not declared" in problem for problem in problems)


# ---- driver <-> toolkit lookups -----------------------------------------------------------


def test_driver_reports_the_cuda_of_its_branch() -> None:
    assert q.driver_max_cuda(KB, drv("535.183.01")) == cu("12.2")
    assert q.driver_max_cuda(KB, drv("565.57.01")) == cu("12.7")
    assert q.driver_max_cuda(KB, drv("580.95.05")) == cu("13.0")


def test_unknown_driver_branch_is_unknown_not_guessed() -> None:
    assert q.driver_max_cuda(KB, drv("999.10")) is None
    assert q.driver_max_cuda(KB, drv("540.1")) is None
    assert q.driver_max_cuda(KB, drv("535.183.01"), os="plan9") is None


def test_windows_driver_numbers_map_to_their_branch() -> None:
    assert q.driver_max_cuda(KB, drv("576.02"), "windows") == cu("12.9")
    assert q.driver_max_cuda(KB, drv("581.42"), "windows") == cu("13.0")
    assert q.driver_max_cuda(KB, drv("596.36"), "windows") == cu("13.2")
    assert q.driver_max_cuda(KB, drv("537.13"), "windows") == cu("12.2")


def test_toolkit_driver_is_table_3() -> None:
    assert q.toolkit_min_driver(KB, cu("12.4"), "linux") == drv("550.54.14")
    assert q.toolkit_min_driver(KB, cu("12.4.1"), "linux") == drv("550.54.15")
    assert q.toolkit_min_driver(KB, cu("12.4.1"), "windows") == drv("551.78")
    assert q.toolkit_min_driver(KB, cu("12.4.127"), "linux") == drv("550.54.14")  # GA fallback
    assert q.toolkit_min_driver(KB, cu("11.0"), "linux") == drv("450.51.05")  # 11.0.2 is GA
    assert q.toolkit_min_driver(KB, cu("10.2"), "windows") == drv("441.22")
    assert q.toolkit_min_driver(KB, cu("13.0"), "windows") is None  # Table 3: N/A
    assert q.toolkit_min_driver(KB, cu("13.5"), "linux") is None  # not in the table


def test_mvc_minimums() -> None:
    assert q.mvc_min_driver(KB, 11, "linux") == drv("450.80.02")
    assert q.mvc_min_driver(KB, 11, "windows") == drv("452.39")
    assert q.mvc_min_driver(KB, 12, "linux") == drv("525.60.13")
    assert q.mvc_min_driver(KB, 12, "windows") == drv("528.33")
    assert q.mvc_min_driver(KB, 13, "linux") == drv("580.65.06")
    assert q.mvc_min_driver(KB, 13, "windows") == drv("580.88")
    assert q.mvc_min_driver(KB, 10, "linux") is None


def test_cuda_12_4_needs_550_54_14_natively() -> None:
    native = q.driver_supports_cuda(KB, drv("550.54.14"), cu("12.4"), "linux")
    assert (native.ok, native.how, native.min_driver) == (True, q.NATIVE, drv("550.54.14"))
    older = q.driver_supports_cuda(KB, drv("550.54.13"), cu("12.4"), "linux")
    assert (older.ok, older.how) == (True, q.MVC)


def test_cuda_12_8_on_535_runs_under_mvc_with_a_caveat() -> None:
    support = q.driver_supports_cuda(KB, drv("535.183.01"), cu("12.8"), "linux")
    assert (support.ok, support.how) == (True, q.MVC)
    assert support.min_driver == drv("525.60.13")
    assert support.full_driver == drv("570.26")
    assert support.caveat and "PTX" in support.caveat
    assert {row["source"] for row in support.rows} == {"cudnn-sm-9-17-0", "cuda-rn-13-2-2"}
    assert all(KB.cite("cuda_driver", row) for row in support.rows)


def test_cuda_13_on_535_is_too_old() -> None:
    support = q.driver_supports_cuda(KB, drv("535.183.01"), cu("13.0"), "linux")
    assert (support.ok, support.how, support.min_driver) == (False, q.TOO_OLD, drv("580.65.06"))


def test_cuda_11_8_on_450_80_02_is_mvc_ok() -> None:
    support = q.driver_supports_cuda(KB, drv("450.80.02"), cu("11.8"), "linux")
    assert (support.ok, support.how) == (True, q.MVC)
    assert q.driver_supports_cuda(KB, drv("450.51.06"), cu("11.8"), "linux").ok is False


def test_windows_support() -> None:
    assert q.driver_supports_cuda(KB, drv("527.41"), cu("12.0"), "windows").how == q.NATIVE
    assert q.driver_supports_cuda(KB, drv("527.41"), cu("12.1"), "windows").ok is False
    assert q.driver_supports_cuda(KB, drv("528.33"), cu("12.6"), "windows").how == q.MVC
    assert q.driver_supports_cuda(KB, drv("596.36"), cu("13.0"), "windows").how == q.NATIVE
    assert q.driver_supports_cuda(KB, drv("576.02"), cu("13.0"), "windows").ok is False


def test_r615_reports_cuda_13_4() -> None:
    assert q.driver_max_cuda(KB, drv("615.71.09")) == cu("13.4")
    support = q.driver_supports_cuda(KB, drv("615.71.09"), cu("13.4"), "linux")
    assert (support.ok, support.how) == (True, q.NATIVE)
    assert support.rows[0]["branch"] == 615
    # R610 (CUDA 13.3) runs 13.4 code only under minor-version compatibility
    older = q.driver_supports_cuda(KB, drv("610.43.02"), cu("13.4"), "linux")
    assert (older.ok, older.how) == (True, q.MVC)


def test_cuda_13_4_is_a_release_without_a_bundled_driver() -> None:
    ga = q.toolkit_row(KB, cu("13.4"))
    assert ga is not None and ga["label"] == "CUDA 13.4 GA" and ga["cuda"] == "13.4.1"
    assert (q.toolkit_row(KB, cu("13.4.2")) or {}).get("label") == "CUDA 13.4 Update 1"
    # not bundled: unknown, never guessed from a neighbouring release
    assert q.toolkit_min_driver(KB, cu("13.4"), "linux") is None
    assert q.toolkit_min_driver(KB, cu("13.4"), "windows") is None


@pytest.mark.parametrize(
    ("windows", "cuda"),
    [
        ("538.78", "12.2"),
        ("552.22", "12.4"),
        ("553.09", "12.4"),
        ("556.12", "12.5"),
        ("566.36", "12.7"),
        ("573.48", "12.8"),
        ("577.03", "12.9"),
        ("580.88", "13.0"),
        ("582.66", "13.0"),
        ("591.74", "13.1"),
        ("592.01", "13.1"),
        ("596.36", "13.2"),
        ("616.92", "13.4"),
    ],
)
def test_a_windows_driver_reports_the_cuda_of_its_branch(windows: str, cuda: str) -> None:
    assert q.driver_max_cuda(KB, drv(windows), "windows") == cu(cuda)
    assert q.driver_max_cuda(KB, drv(windows), "win32") == cu(cuda)
    # read as a Linux number the same text is another (or no) branch: never the Windows answer
    linux = q.driver_branch_row(KB, drv(windows), "linux")
    assert linux is None or linux["branch"] == drv(windows).branch


def test_windows_566_gives_cuda_12_7_and_plans_accordingly() -> None:
    assert q.driver_max_cuda(KB, drv("566.36"), "windows") == cu("12.7")
    assert q.driver_supports_cuda(KB, drv("566.36"), cu("12.6"), "windows").how == q.NATIVE
    assert q.driver_supports_cuda(KB, drv("566.36"), cu("12.8"), "windows").how == q.MVC
    assert q.driver_supports_cuda(KB, drv("566.36"), cu("13.0"), "windows").ok is False


def test_windows_cuda_13_minimum_and_the_580_row_agree() -> None:
    """Settled: Windows 580.xx reports CUDA 13.0 only from 580.88, the Windows CUDA 13 minimum."""
    minimum = q.mvc_min_driver(KB, 13, "windows")
    row = q.windows_branch_row(KB, drv("580.88"))
    assert minimum == drv("580.88") and row is not None and row["first_driver"] == "580.88"
    assert q.windows_branch_row(KB, drv("580.50")) is None
    assert q.driver_max_cuda(KB, drv("580.50"), "windows") is None
    below = q.driver_supports_cuda(KB, drv("580.50"), cu("13.0"), "windows")
    assert (below.ok, below.min_driver) == (False, drv("580.88"))
    assert q.driver_supports_cuda(KB, drv("580.88"), cu("13.0"), "windows").how == q.NATIVE
    # every Windows row the branch table maps to CUDA 13 starts at or above that minimum
    for windows_row in KB.rows("cuda_driver", "windows_branch"):
        first = drv(windows_row.get("first_driver") or f"{windows_row['windows']}.0")
        reported = q.driver_max_cuda(KB, first, "windows")
        if reported is not None and reported.major == 13:
            assert first >= minimum, windows_row


def test_every_windows_number_reaches_a_reported_cuda() -> None:
    branches = {row["branch"] for row in KB.rows("cuda_driver", "driver_branch")}
    for row in KB.rows("cuda_driver", "windows_branch"):
        assert row["branch"] in branches, row


def test_wsl_reads_the_windows_driver_through_the_windows_table() -> None:
    from gpuenv.diagnose.context import build_context
    from gpuenv.facts import DriverFacts, HostFacts, Observation, Snapshot

    host = HostFacts(
        os=Observation("linux", "platform"),
        arch=Observation("x86_64", "platform"),
        wsl=Observation(True, "/proc/version"),
    )
    driver = DriverFacts(versions=(Observation("566.36", "nvidia-smi"),))
    context = build_context(Snapshot(host=host, driver=driver), KB)
    assert context.driver_max_cuda == cu("12.7")
    assert context.driver_max_cuda_source == "kb: driver branch table"


def test_pre_mvc_toolkits_need_their_own_driver() -> None:
    support = q.driver_supports_cuda(KB, drv("418.39"), cu("10.2"), "linux")
    assert (support.ok, support.how, support.min_driver) == (False, q.TOO_OLD, drv("440.33"))


def test_unknowns_stay_unknown() -> None:
    assert q.driver_supports_cuda(KB, drv("999.1"), cu("14.0"), "linux").ok is None
    assert q.driver_supports_cuda(KB, drv("300.1"), cu("6.5"), "linux").how == q.UNKNOWN
    assert q.driver_supports_cuda(KB, drv("535.1"), cu("12.2"), "beos").ok is None


def test_backward_compatibility_through_the_branch() -> None:
    """A driver runs anything built with an older toolkit, even one Table 3 does not list."""
    old_toolkit = q.driver_supports_cuda(KB, drv("535.183.01"), cu("6.5"), "linux")
    assert (old_toolkit.ok, old_toolkit.how) == (True, q.NATIVE)
    assert old_toolkit.rows[0]["branch"] == 535
    unlisted_branch = q.driver_supports_cuda(KB, drv("540.1"), cu("6.5"), "linux")
    assert unlisted_branch.ok is True and unlisted_branch.rows[0]["branch"] == 535
    assert q.driver_supports_cuda(KB, drv("598.1"), cu("13.0"), "windows").how == q.NATIVE


def test_reported_cuda_never_falls_as_branches_rise() -> None:
    """Rule behind the lower bound for unlisted branches: the table is monotonic."""
    rows = sorted(KB.rows("cuda_driver", "driver_branch"), key=lambda row: row["branch"])
    reported = [cu(row["max_cuda"]) for row in rows]
    assert reported == sorted(reported)
    windows = sorted(KB.rows("cuda_driver", "windows_branch"), key=lambda row: row["windows"])
    assert [row["branch"] for row in windows] == sorted(row["branch"] for row in windows)


def test_table_3_and_the_branch_table_agree() -> None:
    """The GA driver of each release reports that release's CUDA version (where both are known)."""
    checked = 0
    for row in KB.rows("cuda_driver", "toolkit_driver"):
        release, linux = cu(row["cuda"]), row.get("linux_min_driver")
        reported = q.driver_max_cuda(KB, drv(linux)) if row.get("ga") and linux else None
        if reported is not None:
            checked += 1
            assert (reported.major, reported.minor) == (release.major, release.minor), row
    assert checked >= 25


def test_windows_branch_table_agrees_with_table_3() -> None:
    for row in KB.rows("cuda_driver", "toolkit_driver"):
        if not row.get("windows_min_driver"):
            continue
        win, linux = drv(row["windows_min_driver"]), drv(row["linux_min_driver"])
        branch = q.driver_branch_row(KB, win, "windows")
        if branch is not None:
            assert branch["branch"] == linux.branch, row


def test_datacenter_branches_and_forward_compat() -> None:
    r535 = q.datacenter_branch(KB, 535)
    assert r535 and (r535["designation"], r535["end_of_life"]) == ("LTSB", "2026-06")
    assert r535["verified"] > r535["end_of_life"]  # checked after its end of life
    r620 = q.datacenter_branch(KB, 620)
    assert r620 and (r620["designation"], r620["end_of_life"]) == ("LTSB", "2029-09")
    assert r620["max_cuda_major"] == 13
    assert (q.datacenter_branch(KB, 580) or {}).get("max_cuda_major") == 13
    assert (q.datacenter_branch(KB, 450) or {}).get("designation") == "EOL"
    assert q.datacenter_branch(KB, 123) is None
    assert (q.forward_compat(KB, "datacenter") or {}).get("allowed") is True
    assert (q.forward_compat(KB, "other") or {}).get("allowed") is False


def test_ptx_isa_needs_a_driver_of_its_cuda() -> None:
    assert q.ptx_isa_cuda(KB, "8.7") == cu("12.8")
    assert q.min_driver_branch_for_ptx_isa(KB, "8.6") == 565  # 12.7: a driver-only version
    assert q.min_driver_branch_for_ptx_isa(KB, "9.0") == 580
    assert q.min_driver_branch_for_ptx_isa(KB, "99.9") is None


# ---- properties of the driver rules -------------------------------------------------------

RELEASES = sorted(
    {cu(row["cuda"]) for row in KB.rows("cuda_driver", "toolkit_driver")}
    | {cu(text) for text in ("6.5", "12.7", "13.4", "13.5.37", "14.0")}
)
drivers = st.builds(
    lambda b, m, p: DriverVersion((b, m, p)),
    st.integers(300, 700),
    st.integers(0, 200),
    st.integers(0, 99),
)


@given(drivers, drivers, st.sampled_from(RELEASES), st.sampled_from(q.OSES))
def test_a_newer_driver_never_supports_fewer_cuda_versions(
    a: DriverVersion, b: DriverVersion, release: CudaVersion, os: str
) -> None:
    """Rule: if driver A runs a CUDA release, every driver newer than A runs it too."""
    low, high = sorted((a, b))
    if q.driver_supports_cuda(KB, low, release, os).ok:
        assert q.driver_supports_cuda(KB, high, release, os).ok is True


@pytest.mark.parametrize("os", q.OSES)
def test_minimum_driver_never_falls_as_cuda_rises(os: str) -> None:
    """Rule: across Table 3, a later CUDA release never bundles an older driver (per OS)."""
    rows = sorted(KB.rows("cuda_driver", "toolkit_driver"), key=lambda row: cu(row["cuda"]))
    drivers_in_order = [drv(row[f"{os}_min_driver"]) for row in rows if row.get(f"{os}_min_driver")]
    assert len(drivers_in_order) > 30
    assert drivers_in_order == sorted(drivers_in_order)


# ---- SASS / PTX rules ---------------------------------------------------------------------

plain_ccs = st.builds(ComputeCapability, st.integers(2, 13), st.integers(0, 9))


def suffixed(suffix: str) -> st.SearchStrategy[ComputeCapability]:
    return st.builds(ComputeCapability, st.integers(9, 13), st.integers(0, 9), st.just(suffix))


@given(plain_ccs, plain_ccs)
def test_sass_runs_only_within_its_major_on_equal_or_higher_minor(
    target: ComputeCapability, gpu: ComputeCapability
) -> None:
    """Rule: SASS for X.y runs on X.z exactly when z >= y; never on another major."""
    expected = target.major == gpu.major and gpu.minor >= target.minor
    assert q.sass_runs_on(target, gpu) is expected


@given(suffixed("a"), plain_ccs)
def test_an_a_target_runs_only_on_exactly_that_cc(
    target: ComputeCapability, gpu: ComputeCapability
) -> None:
    """Rule: arch-specific ('a') SASS and PTX run only on a GPU of exactly that CC."""
    same = (gpu.major, gpu.minor) == (target.major, target.minor)
    assert q.sass_runs_on(target, gpu) is same
    assert q.ptx_runs_on(target, gpu) is same


@given(suffixed("f"), plain_ccs)
def test_an_f_target_runs_within_its_family(
    target: ComputeCapability, gpu: ComputeCapability
) -> None:
    """Rule: family ('f') code runs on the same major with an equal or higher minor."""
    expected = gpu.major == target.major and gpu.minor >= target.minor
    assert q.sass_runs_on(target, gpu) is expected
    assert q.ptx_runs_on(target, gpu) is expected


@given(plain_ccs, plain_ccs)
def test_ptx_runs_on_every_equal_or_newer_cc(
    ptx: ComputeCapability, gpu: ComputeCapability
) -> None:
    """Rule: plain PTX is JIT-compiled for any GPU of equal or newer CC, across majors."""
    expected = (gpu.major, gpu.minor) >= (ptx.major, ptx.minor)
    assert q.ptx_runs_on(ptx, gpu) is expected


@given(st.lists(plain_ccs, max_size=5), st.lists(plain_ccs, max_size=3), plain_ccs)
def test_coverage_runs_exactly_when_some_target_serves_the_gpu(
    sass: list[ComputeCapability], ptx: list[ComputeCapability], gpu: ComputeCapability
) -> None:
    """Rule: a binary runs when one SASS target runs, or else one PTX target can be JIT-compiled."""
    result = q.coverage(sass, ptx, gpu)
    by_sass = any(q.sass_runs_on(target, gpu) for target in sass)
    by_ptx = any(q.ptx_runs_on(target, gpu) for target in ptx)
    assert result.runs is (by_sass or by_ptx)
    if result.native:
        assert result.kind == "native"


def test_coverage_examples() -> None:
    blackwell = q.coverage([cc("8.0"), cc("9.0a")], [cc("9.0")], cc("12.0"))
    assert (blackwell.kind, blackwell.via_ptx) == ("ptx-jit", (cc("9.0"),))
    ampere = q.coverage([cc("8.0"), cc("9.0a")], [cc("9.0")], cc("8.6"))
    assert (ampere.kind, ampere.native) == ("native", (cc("8.0"),))
    assert q.coverage([cc("9.0a")], [], cc("9.0")).kind == "native"
    assert q.coverage([cc("8.6")], [cc("8.6")], cc("7.5")).kind == "none"


def test_toolkit_sass_targets() -> None:
    cuda_128 = q.toolkit_sass_targets(KB, cu("12.8"))
    assert {cc("12.0"), cc("10.0a"), cc("9.0a"), cc("5.0")} <= cuda_128
    assert cc("3.5") not in cuda_128
    cuda_130 = q.toolkit_sass_targets(KB, cu("13.0.88"))
    assert cc("7.5") in cuda_130 and cc("7.0") not in cuda_130 and cc("11.0") in cuda_130
    assert q.toolkit_sass_targets(KB, cu("13.5")) == q.toolkit_sass_targets(KB, cu("13.4"))
    assert q.toolkit_sass_targets(KB, cu("11.4")) == frozenset()  # sources disagree: unknown
    assert q.toolkit_sass_targets(KB, cu("13.1")) == frozenset()  # not checked


def test_architecture_last_cuda_matches_the_toolkit_targets() -> None:
    """An architecture's last toolkit still targets it; the next major toolkit does not. Fermi's
    last toolkit (8.0) is older than the toolkits the targets table lists (10.0 on): checked
    apart."""
    checked = set()
    for row in KB.rows("archs", "architecture"):
        if not row.get("last_cuda") or row["name"] == "Fermi":
            continue
        last = cu(row["last_cuda"])
        later = cu(f"{last.major + 1}.0")
        checked.add(row["name"])
        for text in row["ccs"]:
            assert cc(text) in q.toolkit_sass_targets(KB, last), (row["name"], text)
            assert cc(text) not in q.toolkit_sass_targets(KB, later), (row["name"], text)
    assert checked == {"Kepler", "Maxwell", "Pascal", "Volta"}
    fermi = q.architecture(KB, cc("2.1")) or {}
    assert (fermi.get("last_cuda"), fermi.get("last_driver_branch")) == ("8.0", 390)
    assert not q.toolkit_sass_targets(KB, cu("10.0")) & {cc("2.0"), cc("2.1")}


def test_architecture_lookup() -> None:
    assert (q.architecture(KB, cc("8.6")) or {}).get("name") == "Ampere"
    assert (q.architecture(KB, cc("9.0a")) or {}).get("name") == "Hopper"
    assert (q.architecture(KB, cc("7.0")) or {}).get("last_cuda") == "12.9"
    assert (q.architecture(KB, cc("7.2")) or {}).get("name") == "Volta"  # Xavier, from the CC page
    assert q.architecture(KB, cc("8.8")) is None  # a target with no known product


# ---- libraries ----------------------------------------------------------------------------


def test_sonames_and_wheels() -> None:
    assert q.soname(KB, "cudart", 11) == "libcudart.so.11.0"
    assert q.soname(KB, "cudart", 12) == "libcudart.so.12"
    assert q.soname(KB, "nvJitLink", 13) == "libnvJitLink.so.13"
    assert q.soname(KB, "cusparse", 13) == "libcusparse.so.12"
    assert q.soname(KB, "cudnn", 12) == "libcudnn.so.9"
    assert [r["soname"] for r in q.soname_rows(KB, "cudnn", 12)] == [
        "libcudnn.so.9",
        "libcudnn.so.8",
    ]
    assert q.soname(KB, "cusparse", 11) is None  # not verified, left out
    assert (q.pip_package(KB, "cudart", 13) or {}).get("package") == "nvidia-cuda-runtime"
    assert (q.pip_package(KB, "cudart", 13) or {}).get("lib_dir") == "nvidia/cu13/lib"
    assert (q.pip_package(KB, "cudnn", 13) or {}).get("lib_dir") == "nvidia/cudnn/lib"
    assert (q.pip_package(KB, "cudart", 12) or {}).get("lib_dir") == "nvidia/cuda_runtime/lib"
    assert q.pip_package(KB, "cudart", 10) is None


def test_cudnn_and_nccl_rows() -> None:
    # (kept first: the releases after the last support matrix read)
    newest_13 = [row["cudnn"] for row in q.cudnn_releases(KB, 13)]
    newest_12 = [row["cudnn"] for row in q.cudnn_releases(KB, 12)]
    assert newest_13[:2] == ["9.28.1.4", "9.28.0.42"] and newest_12[0] == "9.28.0.42"
    assert "9.19.1.2" in newest_13 and "9.19.1.2" not in newest_12
    minors = {".".join(v.split(".")[:2]) for v in newest_13}
    assert {f"9.{m}" for m in range(18, 29)} <= minors
    assert q.cudnn_releases(KB, 11) == ()  # no CUDA 11 build after 9.10.2
    cuda13 = q.cudnn_rows(KB, 13)
    assert [(r["cudnn"], r["linux_min_driver"], r["min_cc"]) for r in cuda13] == [
        ("9.17.0", "580.65.06", "7.5")
    ]
    assert {r["cudnn"] for r in q.cudnn_rows(KB, 11)} >= {"9.10.2", "8.9.6"}
    assert q.cudnn_rows(KB, 14) == ()
    nccl11 = q.nccl_row(KB, 11)
    assert nccl11 and (nccl11["last_seen"], nccl11["final"]) == ("2.21.5", True)


# ---- Jetson -------------------------------------------------------------------------------


def test_jetpack_for_l4t() -> None:
    tegra_release = "# R35 (release), REVISION: 3.1, GCID: 32827747, BOARD: t186ref, EABI: aarch64"
    assert (jetson.jetpack_for_l4t(KB, tegra_release) or {}).get("jetpack") == "5.1.1"
    assert (jetson.jetpack_for_l4t(KB, "R36.4.7") or {}).get("jetpack") == "6.2.1"
    assert (jetson.jetpack_for_l4t(KB, "35.1") or {}).get("jetpack") == "5.0.2"
    assert (jetson.jetpack_for_l4t(KB, "38.2.1") or {}).get("jetpack") == "7.0"
    assert jetson.jetpack_for_l4t(KB, "36.4.2") is None  # sources disagree: left out
    assert jetson.jetpack_for_l4t(KB, "36.5.0") is None
    assert jetson.jetpack_for_l4t(KB, "not a release") is None
    assert jetson.jetpack_for_l4t(KB, "") is None


def test_jetpack_row_and_wheels() -> None:
    jp61 = jetson.jetpack_row(KB, "6.1")
    assert jp61 and (jp61["cuda"], jp61["l4t"], jp61["python"]) == ("12.6", "36.4.0", "3.10")
    assert (jetson.jetpack_row(KB, "JetPack 5.1.2") or {}).get("cudnn") == "8.6.0"
    assert jetson.jetpack_row(KB, "9.9") is None
    assert len(jetson.torch_wheel_rows(KB, "6.1")) == 2
    assert {tuple(r["torch_versions"]) for r in jetson.torch_wheel_rows(KB, "5.1.2")} == {
        ("2.1.0",),
        ("2.1.0a0+41361538.nv23.06",),
    }
    assert jetson.torch_wheel_rows(KB, "4.6") == ()


def test_jetpack_6_2_x_resolves_with_its_stack_and_wheels() -> None:
    for text, l4t in (("6.2", "36.4.3"), ("6.2.1", "36.4.4")):
        row = jetson.jetpack_row(KB, text)
        assert row and (row["l4t"], row["cuda"], row["python"]) == (l4t, "12.6", "3.10"), text
        assert (jetson.jetpack_for_l4t(KB, f"R{l4t}") or {}).get("jetpack") == text
        assert row["device_ccs"] == ["8.7"]
        wheels = jetson.torch_wheel_rows(KB, text)
        assert [w["where"] for w in wheels] == [
            "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/",
            "Jetson AI Lab pip index, path /jp6/cu126 (project torch)",
        ]


def test_jetpack_4_6_1_5_1_2_and_7_stacks() -> None:
    jp461 = jetson.jetpack_row(KB, "4.6.1")
    assert jp461 and (jp461["l4t"], jp461["cuda"], jp461.get("cudnn")) == (
        "32.7.1",
        "10.2",
        "8.2.1",
    )
    old = jetson.torch_wheel_rows(KB, "4.6.1")
    assert [(w["where"], w["torch_versions"]) for w in old] == [
        ("NGC container nvidia/l4t-pytorch:r32.7.1-pth1.10-py3", ["1.10.0"])
    ]
    jp512 = jetson.jetpack_row(KB, "5.1.2")
    assert jp512 and (jp512["l4t"], jp512["cuda"], jp512["tensorrt"]) == ("35.4.1", "11.4", "8.5.2")
    for text, cuda in (("7.0", "13.0"), ("7.1", "13.0"), ("7.2", "13.2")):
        row = jetson.jetpack_row(KB, text)
        assert row and row["cuda"] == cuda and "11.0" in row["device_ccs"], text
    assert jetson.torch_wheel_rows(KB, "7.1") == ()  # no NVIDIA source read for JetPack 7


def test_parse_l4t() -> None:
    assert jetson.parse_l4t("r36.4") == (36, 4)
    assert jetson.parse_l4t("R32 (release), REVISION: 7.1") == (32, 7, 1)
    assert jetson.parse_l4t("x" * 1000) is None


# ---- containers ---------------------------------------------------------------------------

REQUIRE_12_8_HEAD = (
    "cuda>=12.8 brand=unknown,driver>=470,driver<471 brand=grid,driver>=470,driver<471"
)


def test_parse_the_real_12_8_require_cuda() -> None:
    text = containers.image_require_cuda(KB, "12.8.1")
    assert text and text.startswith(REQUIRE_12_8_HEAD)
    parsed = containers.parse_require_cuda(text)
    assert parsed.invalid == ()
    assert parsed.cuda_min == cu("12.8")
    assert parsed.driver_branches() == (470, 535, 550, 560, 565)
    assert {"tesla", "geforce"} & parsed.brands() == {"tesla"}
    assert parsed.allows(driver_cuda=cu("12.8"), driver=drv("570.86.15")) is True
    assert parsed.allows(cu("12.2"), drv("535.183.01"), brand="tesla") is True  # forward compat
    assert parsed.allows(cu("12.2"), drv("535.183.01"), brand="geforce") is False
    assert parsed.allows(cu("12.4"), drv("550.54.14")) is None  # brand unknown


def test_parse_require_cuda_tolerates_garbage() -> None:
    parsed = containers.parse_require_cuda("garbage cuda>>12 ☃ driver>=abc brand=tesla,,")
    assert parsed.invalid == ("garbage", "cuda>>12", "☃", "driver>=abc")
    assert parsed.terms == ((containers.Condition("brand", "=", "tesla"),),)
    assert parsed.cuda_min is None
    assert parsed.allows(cu("13.0"), drv("580.65.06"), "tesla") is None
    empty = containers.parse_require_cuda("")
    assert (empty.terms, empty.invalid, empty.allows()) == ((), (), True)
    assert containers.parse_require_cuda('"CUDA>=12.3"').cuda_min == cu("12.3")


@given(st.text(max_size=300))
def test_parse_require_cuda_never_raises(text: str) -> None:
    """Rule: any text parses; every whitespace-separated term is a condition set or invalid."""
    parsed = containers.parse_require_cuda(text)
    assert len(parsed.terms) + len(parsed.invalid) == len(parsed.text.split())


def test_image_lookups() -> None:
    assert containers.image_require_cuda(KB, "11.8.0", arch="arm64") == "cuda>=11.8"
    x86 = containers.image_require_cuda(KB, cu("13.0.0"))
    assert x86 and x86 == containers.image_require_cuda(KB, "13.0.0", arch="aarch64")
    assert containers.image_require_cuda(KB, "12.7.0") is None
    assert containers.image_require_cuda(KB, "12.8.1", arch="ppc64le") is None
    tag = containers.image_tag(KB, "12.8.1", "cudnn-runtime", "ubuntu24.04")
    assert tag == "12.8.1-cudnn-runtime-ubuntu24.04"
    assert containers.image_tag(KB, "12.8.1", "slim", "ubuntu24.04") is None


def test_cudnn_images_carry_their_own_tag_word() -> None:
    """Up to CUDA 12.2 NVIDIA's cuDNN tags say cudnn8, 12.3 says cudnn9, from 12.4.1 cudnn."""
    runtime = "cudnn-runtime"
    assert containers.image_tag(KB, "11.8.0", runtime, "ubuntu22.04") == (
        "11.8.0-cudnn8-runtime-ubuntu22.04"
    )
    assert containers.image_tag(KB, "12.2.2", "cudnn-devel", "ubuntu22.04") == (
        "12.2.2-cudnn8-devel-ubuntu22.04"
    )
    assert containers.image_tag(KB, "12.3.2", runtime, "ubuntu22.04") == (
        "12.3.2-cudnn9-runtime-ubuntu22.04"
    )
    assert containers.image_cudnn(KB, "12.2.2") == ("8.9.6.50", "cudnn8")
    assert containers.image_cudnn(KB, "13.0.0", arch="arm64") == ("9.12.0.46", "cudnn")
    # no cuDNN image of 12.5.0 at all, and 12.5.1 has none on Ubuntu 24.04
    assert containers.image_cudnn(KB, "12.5.0") is None
    assert containers.image_tag(KB, "12.5.0", runtime, "ubuntu22.04") is None
    assert containers.image_tag(KB, "12.5.1", runtime, "ubuntu24.04") is None
    assert containers.image_tag(KB, "12.5.1", runtime, "ubuntu22.04") == (
        "12.5.1-cudnn-runtime-ubuntu22.04"
    )
    for row in KB.rows("containers", "cuda_image"):
        if "cudnn" not in row:
            continue
        major = row["cudnn"].split(".")[0]
        assert row["cudnn_tag"] in ("cudnn", f"cudnn{major}"), row["cuda"]
        assert set(row["cudnn_distros"]) <= set(row["distros"]), row["cuda"]


def test_every_image_value_parses_cleanly_and_names_its_own_cuda() -> None:
    for row in KB.rows("containers", "cuda_image"):
        parsed = containers.parse_require_cuda(row["require_cuda"])
        release = cu(row["cuda"])
        assert parsed.invalid == (), row["cuda"]
        assert parsed.cuda_min == CudaVersion(release.major, release.minor), row["cuda"]


def test_kb_type_is_the_loader_type() -> None:
    assert isinstance(KB, KnowledgeBase)
