"""The GPU table (kb/data/gpus.toml) and its lookups (kb/query/gpus.py)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuenv.kb import KnowledgeBase, Row, load_kb
from gpuenv.kb.loader import DATA_DIR, parse_kb_file
from gpuenv.kb.query.gpus import (
    all_gpus,
    gpu_by_name,
    gpu_by_pci_id,
    gpu_candidates,
    gpu_cc,
    normalise_gpu_name,
    resolve_gpu,
)
from gpuenv.versions import ComputeCapability

GPUS_TOML = DATA_DIR / "gpus.toml"
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pasted-reports.dev.jsonl"
PEAKS = ("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "bandwidth_gbs")
# The architecture each compute capability belongs to (NVIDIA's architecture matrix).
ARCH_OF_CC = {
    "2.0": "Fermi",
    "2.1": "Fermi",
    "3.0": "Kepler",
    "3.5": "Kepler",
    "3.7": "Kepler",
    "5.0": "Maxwell",
    "5.2": "Maxwell",
    "5.3": "Maxwell",
    "6.0": "Pascal",
    "6.1": "Pascal",
    "6.2": "Pascal",
    "7.0": "Volta",
    "7.2": "Volta",
    "7.5": "Turing",
    "8.0": "Ampere",
    "8.6": "Ampere",
    "8.7": "Ampere",
    "8.9": "Ada",
    "9.0": "Hopper",
    "10.0": "Blackwell",
    "10.3": "Blackwell",
    "11.0": "Blackwell",
    "12.0": "Blackwell",
    "12.1": "Blackwell",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """The GPU table alone, loaded strictly (a problem in another subject's file is not ours)."""
    folder = tmp_path_factory.mktemp("kb")
    shutil.copy(GPUS_TOML, folder / "gpus.toml")
    return load_kb(folder, strict=True)


@pytest.fixture(scope="module")
def rows(kb: KnowledgeBase) -> tuple[Row, ...]:
    return all_gpus(kb)


def _cc(kb: KnowledgeBase, text: str) -> str | None:
    resolved = resolve_gpu(kb, text)
    return None if resolved is None else str(resolved.cc)


# --- the data ------------------------------------------------------------------------------


def test_file_validates_with_no_problems() -> None:
    kb_file, problems = parse_kb_file(GPUS_TOML)
    assert problems == []
    assert kb_file is not None and len(kb_file.tables["gpu"]) >= 60


def test_every_cc_is_a_plain_compute_capability(rows: tuple[Row, ...]) -> None:
    for row in rows:
        cc = gpu_cc(row)
        assert cc is not None and cc.suffix == "", row["name"]
        assert str(cc) == row["cc"] and re.fullmatch(r"\d{1,2}\.\d", row["cc"]), row["name"]


def test_architecture_agrees_with_cc(rows: tuple[Row, ...]) -> None:
    for row in rows:
        assert ARCH_OF_CC[row["cc"]] == row["architecture"], row["name"]


def test_names_unique_and_no_spelling_names_two_rows(rows: tuple[Row, ...]) -> None:
    names = [row["name"] for row in rows]
    assert len(names) == len(set(names))
    owner: dict[str, str] = {}
    for row in rows:
        for spelling in [row["name"], *row.get("aliases", [])]:
            key = normalise_gpu_name(spelling)
            assert key, spelling
            assert owner.setdefault(key, row["name"]) == row["name"], (spelling, owner[key])


def test_pci_ids_well_formed_and_unique(rows: tuple[Row, ...]) -> None:
    seen: dict[str, str] = {}
    for row in rows:
        for pci in row.get("pci_device_ids", []):
            assert re.fullmatch(r"0x[0-9a-f]{4}", pci), (row["name"], pci)
            assert seen.setdefault(pci, row["name"]) == row["name"], pci
    assert len(seen) > 80


def test_sources_named_in_notes_are_declared(kb: KnowledgeBase, rows: tuple[Row, ...]) -> None:
    declared = set(kb.files["gpus"].sources)
    for row in rows:
        for cited in re.findall(r"\[([a-z0-9][a-z0-9.-]*)\]", row.get("note", "")):
            assert cited in declared, (row["name"], cited)


def test_inferred_rows_state_their_rule(rows: tuple[Row, ...]) -> None:
    for row in rows:
        if row["status"] == "inferred":
            assert "Rule:" in row.get("note", ""), row["name"]
        assert row["verified"] in ("2026-11-21", "2026-11-23", "2026-11-24"), row["name"]


def test_rows_with_peaks_say_where_they_come_from(kb: KnowledgeBase, rows: tuple[Row, ...]) -> None:
    documents = {s for s in kb.files["gpus"].sources if s.startswith("nv-") and "cuda" not in s}
    for row in rows:
        if any(field in row for field in PEAKS):
            cited = set(re.findall(r"\[([a-z0-9][a-z0-9.-]*)\]", row["note"]))
            assert cited & documents, row["name"]


def test_peak_figures_are_sane(rows: tuple[Row, ...]) -> None:
    """Rule: tensor-core GPUs (cc >= 8.0) run BF16 at least as fast as FP32, TF32 no faster than
    BF16; tensor FP16 (cc >= 7.0) is at least FP32; every figure is positive."""
    for row in rows:
        for field in (*PEAKS, "memory_gib"):
            assert row.get(field, 1) > 0, (row["name"], field)
        cc = gpu_cc(row)
        assert cc is not None
        if cc >= ComputeCapability(8, 0) and "bf16_tflops" in row:
            assert row["bf16_tflops"] >= row.get("fp32_tflops", 0), row["name"]
            assert row.get("tf32_tflops", 0) <= row["bf16_tflops"], row["name"]
        if cc >= ComputeCapability(7, 0) and "fp16_tflops" in row:
            assert row["fp16_tflops"] >= row.get("fp32_tflops", 0), row["name"]


def test_tensor_rates_only_where_tensor_cores_exist(rows: tuple[Row, ...]) -> None:
    for row in rows:
        cc = gpu_cc(row)
        assert cc is not None
        if cc < ComputeCapability(8, 0):
            assert "tf32_tflops" not in row and "bf16_tflops" not in row, row["name"]


REQUIRED = [
    "GTX 1080 Ti",
    "GTX 1080",
    "GTX 1070",
    "GTX 1060 6GB",
    "TITAN Xp",
    "RTX 2080 Ti",
    "RTX 2080",
    "RTX 2070",
    "RTX 2060",
    "GTX 1660 Ti",
    "RTX 3060",
    "RTX 3070",
    "RTX 3080",
    "RTX 3080 Ti",
    "RTX 3090",
    "RTX 3090 Ti",
    "RTX 4060",
    "RTX 4070",
    "RTX 4080",
    "RTX 4090",
    "RTX 5070",
    "RTX 5080",
    "RTX 5090",
    "RTX A4000",
    "RTX A5000",
    "RTX A6000",
    "RTX 6000 Ada",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "Tesla K80",
    "Tesla P100-PCIE-16GB",
    "Tesla P40",
    "Tesla P4",
    "Tesla V100-SXM2-16GB",
    "Tesla V100-SXM2-32GB",
    "Tesla V100-PCIE-16GB",
    "Tesla T4",
    "A10",
    "A30",
    "A40",
    "A100 PCIe 40GB",
    "A100 80GB PCIe",
    "A100 SXM4 40GB",
    "A100 SXM4 80GB",
    "H100 PCIe",
    "H100 SXM",
    "H100 NVL",
    "H200",
    "H800",
    "L4",
    "L40",
    "L40S",
    "B200",
    "GB200",
    "B300",
    "GB300",
    "RTX 5050",
    "A2",
    "A16",
    "RTX PRO 4500 Blackwell",
    "RTX PRO 4000 Blackwell",
    "RTX PRO 2000 Blackwell",
    "Jetson AGX Orin",
    "Jetson Orin NX",
    "Jetson Orin Nano",
    "Jetson AGX Xavier",
    "Jetson Nano",
    "Jetson TX2",
    "Jetson Thor",
]


@pytest.mark.parametrize("text", REQUIRED)
def test_covers_the_models_people_ask_about(kb: KnowledgeBase, text: str) -> None:
    assert gpu_by_name(kb, text) is not None, text


# --- lookups by name -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cc"),
    [
        ("NVIDIA GeForce RTX 3090", "8.6"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA A100 80GB PCIe", "8.0"),
        ("NVIDIA H200", "9.0"),
        ("NVIDIA H200 NVL", "9.0"),
        ("NVIDIA H100 PCIe", "9.0"),
        ("Tesla V100S-PCIE-32GB", "7.0"),
        ("Tesla P100-PCIE-12GB", "6.0"),
        ("Tesla P100-SXM2-16GB", "6.0"),
        ("Tesla K80", "3.7"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA GeForce RTX 5090 Laptop GPU", "12.0"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "12.0"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9"),
        ("NVIDIA GB200", "10.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA B300 SXM6 AC", "10.3"),
        ("NVIDIA GB300", "10.3"),
        ("NVIDIA GeForce RTX 5050", "12.0"),
        ("NVIDIA GeForce RTX 5050 Laptop GPU", "12.0"),
        ("NVIDIA A2", "8.6"),
        ("NVIDIA A16", "8.6"),
        ("NVIDIA RTX PRO 5000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 5000 72GB Blackwell", "12.0"),
        ("NVIDIA RTX PRO 4500 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 4000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "12.0"),
        ("NVIDIA RTX PRO 2000 Blackwell", "12.0"),
        ("NVIDIA RTX PRO 5000 Blackwell Generation Laptop GPU", "12.0"),
        ("NVIDIA RTX PRO 500 Blackwell Generation Laptop GPU", "12.0"),
        ("NVIDIA GB10", "12.1"),
        ("NVIDIA Thor", "11.0"),
        ("Orin (nvgpu)", "8.7"),
        ("Orin", "8.7"),
        ("Xavier", "7.2"),
        ("NVIDIA Tegra X2", "6.2"),
        ("NVIDIA Tegra X1", "5.3"),
        ("NVIDIA GeForce GTX 1060 6GB", "6.1"),
        ("NVIDIA TITAN Xp", "6.1"),
    ],
)
def test_driver_names_resolve(kb: KnowledgeBase, text: str, cc: str) -> None:
    row = gpu_by_name(kb, text)
    assert row is not None and row["cc"] == cc
    assert _cc(kb, text) == cc


def _corpus_names() -> Iterator[tuple[str, dict[str, Any]]]:
    """(GPU name as printed, its report) for every GPU in the corpus of pasted reports."""
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for gpu in record["expected"].get("gpus") or []:
            yield (gpu if isinstance(gpu, str) else gpu["name"]), record


# Every GPU name printed in the corpus of pasted reports, with the CC a careful reader knows.
# None: not in the table (a GeForce 210 is CC 1.2 and CUDA-10-era; "Device 66a1" is an AMD GPU).
CORPUS_CC = {
    "NVIDIA GeForce GTX 1070": "6.1",
    "TITAN Xp": "6.1",
    "NVIDIA GeForce RTX 3060 Laptop GPU": "8.6",
    "NVIDIA GeForce RTX 3090": "8.6",
    "NVIDIA GeForce RTX 4070 Laptop GPU": "8.9",
    "Tesla V100-PCIE...": "7.0",  # nvidia-smi's table truncated the name; both PCIe rows are 7.0
    "A100-SXM4-40GB": "8.0",
    "Tesla P4": "6.1",
    "Quadro RTX 6000": "7.5",
    "NVIDIA L40S": "8.9",
    "GeForce GTX 1080 Ti": "6.1",
    "GeForce 210": None,
    "Device 66a1": None,
}


@pytest.mark.skipif(not CORPUS.exists(), reason="shared corpus not present")
def test_every_corpus_gpu_name_resolves_as_expected(kb: KnowledgeBase) -> None:
    names = {name for name, _ in _corpus_names()}
    assert names == set(CORPUS_CC)
    for name in names:
        assert _cc(kb, name) == CORPUS_CC[name], name


@pytest.mark.skipif(not CORPUS.exists(), reason="shared corpus not present")
def test_corpus_pci_ids_agree_with_names(kb: KnowledgeBase) -> None:
    checked = 0
    for _name, record in _corpus_names():
        for gpu in record["expected"]["gpus"]:
            if not (isinstance(gpu, dict) and gpu.get("pci_device_id")):
                continue
            row = gpu_by_pci_id(kb, gpu["pci_device_id"])
            if gpu["pci_device_id"].lower().startswith("0x1e30"):
                # Quadro RTX 6000, but a Quadro RTX 8000 under subsystem 129e: ids cannot tell.
                assert row is None
            else:
                named = gpu_by_name(kb, gpu["name"])
                assert row is not None and named is not None and row["name"] == named["name"]
            checked += 1
    assert checked >= 2


def test_3090_is_not_the_3090_ti(kb: KnowledgeBase) -> None:
    plain = gpu_by_name(kb, "RTX 3090")
    ti = gpu_by_name(kb, "RTX 3090 Ti")
    assert plain is not None and plain["name"] == "NVIDIA GeForce RTX 3090"
    assert ti is not None and ti["name"] == "NVIDIA GeForce RTX 3090 Ti"
    for text in ("3090", "rtx3090", "GeForce RTX 3090", "NVIDIA GeForce RTX 3090"):
        row = gpu_by_name(kb, text)
        assert row is not None and row["name"] == "NVIDIA GeForce RTX 3090", text
    for text in ("3090 Ti", "RTX3090Ti", "geforce rtx 3090 ti"):
        row = gpu_by_name(kb, text)
        assert row is not None and row["name"] == "NVIDIA GeForce RTX 3090 Ti", text


def test_old_driver_names_without_nvidia_prefix(kb: KnowledgeBase) -> None:
    for old, new in [
        ("GeForce GTX 1080 Ti", "NVIDIA GeForce GTX 1080 Ti"),
        ("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"),
        ("TITAN Xp", "NVIDIA TITAN Xp"),
    ]:
        row = gpu_by_name(kb, old)
        assert row is not None and row["name"] == new


def test_laptop_parts_are_not_the_desktop_cards(kb: KnowledgeBase) -> None:
    laptop = gpu_by_name(kb, "NVIDIA GeForce RTX 4070 Laptop GPU")
    assert laptop is not None and laptop["name"] == "NVIDIA GeForce RTX 4070 Laptop GPU"
    assert "fp32_tflops" not in laptop
    assert gpu_by_name(kb, "RTX 4070")["name"] == "NVIDIA GeForce RTX 4070"  # type: ignore[index]


def test_families_give_a_cc_but_no_model(kb: KnowledgeBase) -> None:
    for text, cc, count in [("A100", "8.0", 4), ("H100", "9.0", 3), ("GTX 1060", "6.1", 2)]:
        assert gpu_by_name(kb, text) is None
        assert len(gpu_candidates(kb, text)) == count
        resolved = resolve_gpu(kb, text)
        assert resolved is not None and resolved.name is None and resolved.row is None
        assert str(resolved.cc) == cc and len(resolved.candidates) == count
    resolved = resolve_gpu(kb, "A100 80GB")
    assert resolved is not None and resolved.name is None and str(resolved.cc) == "8.0"


def test_truncated_nvidia_smi_names(kb: KnowledgeBase) -> None:
    assert gpu_by_name(kb, "Tesla V100-PCIE...") is None  # 16 GB or 32 GB: cannot tell
    assert _cc(kb, "Tesla V100-PCIE...") == "7.0"
    assert _cc(kb, "NVIDIA GeForce RTX 309\u2026") == "8.6"
    assert resolve_gpu(kb, "NVIDIA GeForce ...") is None  # no model number left
    assert resolve_gpu(kb, "Quadro RTX...") is None


@pytest.mark.parametrize(
    "text",
    [
        "RTX 9090",
        "GeForce 210",
        "Radeon RX 7900 XTX",
        "Device 66a1",
        "RTX 6000",  # Quadro RTX 6000 (7.5) or RTX 6000 Ada (8.9): not a guess
        "RTX 4000",
        "RTX PRO 6000",
        "Quadro",
        "RTX",
        "NVIDIA",
        "A100X",
        "Intel Arc A770",
    ],
)
def test_unknown_or_ambiguous_names_give_none(kb: KnowledgeBase, text: str) -> None:
    assert gpu_by_name(kb, text) is None
    assert resolve_gpu(kb, text) is None


# --- lookups by PCI id ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["0x2204", "2204", "0x220410DE", "0x220410de", "220410DE", "10de:2204", "[10de:2204]"]
)
def test_pci_id_spellings(kb: KnowledgeBase, text: str) -> None:
    row = gpu_by_pci_id(kb, text)
    assert row is not None and row["name"] == "NVIDIA GeForce RTX 3090"


@pytest.mark.parametrize(
    "text", ["0x220410AB", "1002:2204", "0x0000", "22O4", "0x22041", "", "x" * 10_000, "22\x0004"]
)
def test_bad_or_foreign_pci_ids_give_none(kb: KnowledgeBase, text: str) -> None:
    assert gpu_by_pci_id(kb, text) is None


def test_pci_ids_point_back_to_their_rows(kb: KnowledgeBase, rows: tuple[Row, ...]) -> None:
    for row in rows:
        for pci in row.get("pci_device_ids", []):
            found = gpu_by_pci_id(kb, pci)
            assert found is not None and found["name"] == row["name"]


# --- resolve_gpu ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cc"),
    [("8.6", "8.6"), ("sm_90", "9.0"), ("sm_90a", "9.0"), ("compute_120", "12.0"), ("86", "8.6")],
)
def test_resolve_bare_compute_capability(kb: KnowledgeBase, text: str, cc: str) -> None:
    resolved = resolve_gpu(kb, text)
    assert resolved is not None
    assert resolved.name is None and resolved.row is None and str(resolved.cc) == cc


def test_resolve_model_name(kb: KnowledgeBase) -> None:
    resolved = resolve_gpu(kb, "Tesla V100-SXM2-16GB")
    assert resolved is not None and resolved.cc == ComputeCapability(7, 0)
    assert resolved.name == "Tesla V100-SXM2-16GB" and resolved.row is not None
    assert resolved.row["fp16_tflops"] == 125.0
    assert resolve_gpu(kb, "4090") == resolve_gpu(kb, "NVIDIA GeForce RTX 4090")


def test_b300_and_gb300_are_10_3_not_10_0(kb: KnowledgeBase) -> None:
    for text in ("B300", "GB300", "NVIDIA B300 SXM6 AC", "NVIDIA GB300"):
        resolved = resolve_gpu(kb, text)
        assert resolved is not None and resolved.cc == ComputeCapability(10, 3), text
    for pci in ("10de:3182", "0x31c2"):
        assert gpu_cc(gpu_by_pci_id(kb, pci) or {}) == ComputeCapability(10, 3), pci
    b200 = resolve_gpu(kb, "B200")
    assert b200 is not None and b200.cc == ComputeCapability(10, 0)


def test_new_blackwell_and_ampere_parts_by_pci_id(kb: KnowledgeBase) -> None:
    named = {
        "0x2d83": "NVIDIA GeForce RTX 5050",
        "0x2dd8": "NVIDIA GeForce RTX 5050 Laptop GPU",
        "0x2c58": "NVIDIA GeForce RTX 5090 Laptop GPU",
        "0x2c33": "NVIDIA RTX PRO 4000 Blackwell SFF Edition",
        "0x2d30": "NVIDIA RTX PRO 2000 Blackwell",
        "0x2901": "NVIDIA B200",
        "0x3182": "NVIDIA B300 SXM6 AC",
    }
    for pci, name in named.items():
        assert (gpu_by_pci_id(kb, pci) or {}).get("name") == name, pci
    # one device id, two products told apart only by subsystem: no answer from the id alone
    assert gpu_by_pci_id(kb, "0x25b6") is None  # A2 / A16
    assert gpu_by_pci_id(kb, "0x2bb3") is None  # RTX PRO 5000 / RTX PRO 5000 72GB


def test_rtx_pro_5000_memory_variants_stay_apart(kb: KnowledgeBase) -> None:
    assert resolve_gpu(kb, "RTX PRO 5000") is None  # two cards: never guess which
    big = gpu_by_name(kb, "NVIDIA RTX PRO 5000 72GB Blackwell")
    assert big is not None and big["memory_gib"] == 72.0
    assert "memory_gib" not in (gpu_by_name(kb, "NVIDIA RTX PRO 5000 Blackwell") or {"x": 1})


def test_model_numbers_beat_compute_capability_reading(kb: KnowledgeBase) -> None:
    resolved = resolve_gpu(kb, "3090")  # a GPU, not compute capability 309.0
    assert resolved is not None and resolved.name == "NVIDIA GeForce RTX 3090"


HOSTILE = [
    "",
    "   ",
    "x" * 10_000,
    "RTX 3090" + " " * 10_000,
    "RTX\x003090",
    "RTX 3090\x1b[31m",
    "\u200bRTX 3090",
    "RTX 3090\r\nRTX 3080",
    "8.6\x00",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_input_gives_none(kb: KnowledgeBase, text: str) -> None:
    assert gpu_by_name(kb, text) is None
    assert gpu_by_pci_id(kb, text) is None
    assert resolve_gpu(kb, text) is None


@given(st.text(max_size=300))
def test_lookups_never_raise(kb: KnowledgeBase, text: str) -> None:
    """Rule: any text gives a row, a resolution or None, never an exception."""
    row = gpu_by_name(kb, text)
    assert row is None or row in all_gpus(kb)
    gpu_by_pci_id(kb, text)
    resolved = resolve_gpu(kb, text)
    assert resolved is None or 1 <= resolved.cc.major <= 20


def test_normalise_gpu_name() -> None:
    assert normalise_gpu_name("NVIDIA GeForce RTX 3090 Ti") == "rtx 3090 ti"
    assert normalise_gpu_name("Tesla V100-SXM2-16GB") == "v 100 sxm 2 16 gb"
    assert normalise_gpu_name("geforce  rtx3090TI") == "rtx 3090 ti"
    assert normalise_gpu_name("NVIDIA\u2122 TITAN Xp") == "titan xp"
    assert normalise_gpu_name("") == ""
