"""The pure parsers of driver-tool output, on every pasted report of the corpus and edge cases."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuenv.parse.jetson import parse_jetson_release, parse_nv_tegra_release
from gpuenv.parse.smi import (
    SMI_ERRORS,
    SmiGpu,
    find_smi_errors,
    normalize_pci_device_id,
    parse_module_version,
    parse_proc_driver_version,
    parse_smi_header,
    parse_smi_query_csv,
)
from gpuenv.parse.smi_q import parse_smi_list, parse_smi_q
from tests.conftest import SHARED

CORPUS = SHARED / "corpus" / "pasted-reports.dev.jsonl"
KINDS = ("nvidia_smi", "nvidia_smi_query", "nvidia_smi_q", "jetson_release")
# The expected keys each test below compares; a record with another key fails test_keys_mapped.
MAPPED = {
    "nvidia_smi": {
        "driver_version",
        "cuda_version",
        "gpus",
        "error",
        "error_bus_id",
        "mig_devices",
    },
    "nvidia_smi_query": {"query_fields", "format", "driver_version", "gpus"},
    "nvidia_smi_q": {"driver_version", "cuda_version", "attached_gpus", "gpus"},
    "jetson_release": {"model", "l4t_version", "jetpack", "ubuntu", "kernel", "cuda_version"},
}
GPU_KEYS = {
    "name": "name",
    "memory_total_mib": "memory_mib",
    "mig_mode": "mig_mode",
    "bus_id": "bus_id",
    "pci_device_id": "pci_id",  # the corpus keeps nvidia-smi's spelling: 0x1E3010DE
    "uuid": "uuid",
    "driver_model": "driver_model",
    "vbios_version": "vbios_version",
}


def _records(kind: str) -> list[Any]:
    if not CORPUS.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CORPUS} not present"))]
    with CORPUS.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [pytest.param(r, id=r["id"]) for r in rows if r["kind"] == kind]


def _compare_gpus(parsed: tuple[SmiGpu, ...], expected: list[dict[str, Any]]) -> None:
    assert len(parsed) >= len(expected)
    for gpu, want in zip(parsed, expected):
        for key, value in want.items():
            assert getattr(gpu, GPU_KEYS[key]) == value, key


@pytest.mark.parametrize("kind", KINDS)
def test_corpus_has_records_and_keys_mapped(kind: str) -> None:
    if not CORPUS.is_file():
        pytest.skip(f"{CORPUS} not present")
    records = [p.values[0] for p in _records(kind)]
    assert records, kind
    for record in records:
        unmapped = set(record["expected"]) - MAPPED[kind]
        assert not unmapped, f"{record['id']}: expected keys without a parser counterpart"
        for gpu in record["expected"].get("gpus", []):
            assert set(gpu) <= set(GPU_KEYS), record["id"]


@pytest.mark.parametrize("record", _records("nvidia_smi"))
def test_header_on_corpus(record: dict[str, Any]) -> None:
    expected = record["expected"]
    parsed = parse_smi_header(record["text"])
    assert parsed.driver_version == expected["driver_version"]
    assert parsed.driver_max_cuda == expected["cuda_version"]
    assert len(parsed.gpus) == len(expected["gpus"])
    _compare_gpus(parsed.gpus, expected["gpus"])
    codes = [e.code for e in parsed.errors]
    assert codes == ([expected["error"]] if "error" in expected else [])
    if "error_bus_id" in expected:
        assert parsed.errors[0].bus_id == expected["error_bus_id"]
    if "mig_devices" in expected:
        got = [
            {
                "gpu": d.gpu,
                "gi_id": d.gi_id,
                "ci_id": d.ci_id,
                "mig_dev": d.mig_dev,
                "memory_total_mib": d.memory_mib,
            }
            for d in parsed.mig_devices
        ]
        assert got == expected["mig_devices"]


@pytest.mark.parametrize("record", _records("nvidia_smi_query"))
def test_query_csv_on_corpus(record: dict[str, Any]) -> None:
    expected = record["expected"]
    parsed = parse_smi_query_csv(record["text"])
    assert list(parsed.fields) == expected["query_fields"]
    assert parsed.format == expected["format"]
    assert parsed.problem is None
    versions = {g.driver_version for g in parsed.gpus}
    assert versions == {expected["driver_version"]}
    assert len(parsed.gpus) == len(expected["gpus"])
    _compare_gpus(parsed.gpus, expected["gpus"])


@pytest.mark.parametrize("record", _records("nvidia_smi_q"))
def test_q_on_corpus(record: dict[str, Any]) -> None:
    expected = record["expected"]
    parsed = parse_smi_q(record["text"])
    assert parsed.driver_version == expected["driver_version"]
    assert parsed.driver_max_cuda == expected["cuda_version"]
    assert parsed.attached_gpus == expected["attached_gpus"]
    _compare_gpus(parsed.gpus, expected["gpus"])


@pytest.mark.parametrize("record", _records("jetson_release"))
def test_jetson_release_on_corpus(record: dict[str, Any]) -> None:
    expected = record["expected"]
    parsed = parse_jetson_release(record["text"])
    assert parsed.model == expected["model"]
    assert parsed.l4t_release == expected["l4t_version"]
    assert parsed.jetpack == expected["jetpack"]
    assert parsed.ubuntu == expected["ubuntu"]
    assert parsed.kernel == expected["kernel"]
    assert parsed.cuda == expected["cuda_version"]


# ---- banner -------------------------------------------------------------------------------------

WSL_BANNER = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 595.71.01              Driver Version: 596.36         CUDA Version: 13.2     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GeForce RTX 4070        On  |   00000000:01:00.0  On |                  N/A |
|  0%   36C    P8              8W /  200W |    1079MiB /  12282MiB |      2%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""
WINDOWS_ROW = (
    "|   0  NVIDIA GeForce RTX 4090      WDDM  |   00000000:01:00.0  On |                  Off |\n"
    "|  0%   38C    P8             21W /  450W |    1826MiB /  24564MiB |      3%      Default |\n"
)
BANNER_384 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 384.111                Driver Version: 384.111                   |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 108...  Off  | 00000000:01:00.0  On |                  N/A |
| 23%   38C    P8    11W / 250W |    301MiB / 11170MiB |      1%      Default |
+-------------------------------+----------------------+----------------------+
"""


def test_wsl_banner_keeps_both_numbers() -> None:
    parsed = parse_smi_header(WSL_BANNER)
    assert (parsed.smi_version, parsed.driver_version) == ("595.71.01", "596.36")
    assert parsed.driver_max_cuda == "13.2"
    assert [(g.name, g.memory_mib, g.mig_mode) for g in parsed.gpus] == [
        ("NVIDIA GeForce RTX 4070", 12282, None)
    ]
    assert parsed.problem is None


def test_windows_driver_model_column() -> None:
    parsed = parse_smi_header(WSL_BANNER.split("|   0")[0] + WINDOWS_ROW)
    assert [(g.index, g.name, g.bus_id, g.memory_mib) for g in parsed.gpus] == [
        (0, "NVIDIA GeForce RTX 4090", "00000000:01:00.0", 24564)
    ]


def test_old_banner_without_cuda_version_or_mig_column() -> None:
    parsed = parse_smi_header(BANNER_384)
    assert parsed.driver_version == "384.111"
    assert parsed.driver_max_cuda is None
    assert [(g.name, g.memory_mib, g.mig_mode) for g in parsed.gpus] == [
        ("GeForce GTX 108...", 11170, None)
    ]


def test_mismatch_with_nvml_library_version() -> None:
    text = (
        "Failed to initialize NVML: Driver/library version mismatch\n"
        "NVML library version: 535.183\n"
    )
    parsed = parse_smi_header(text)
    assert [e.code for e in parsed.errors] == ["nvml_mismatch"]
    assert parsed.nvml_library_version == "535.183"
    assert parsed.driver_version is None and parsed.problem is None


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("No devices were found", "no_devices"),
        ("Failed to initialize NVML: Unknown Error", "nvml_unknown_error"),
        ("Failed to initialize NVML: Insufficient Permissions", "nvml_no_permission"),
        (
            "Failed to initialize NVML: GPU access blocked by the operating system",
            "nvml_init_failed",
        ),
        ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.", "nvml_unavailable"),
        ("Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost.", "gpu_lost"),
        (
            "Unable to determine the device handle for gpu 0000:02:00.0: Not Found",
            "device_handle_error",
        ),
    ],
)
def test_error_lines(line: str, code: str) -> None:
    errors = find_smi_errors("$ nvidia-smi\n" + line + "\n")
    assert [e.code for e in errors] == [code]
    assert code in SMI_ERRORS


def test_truncated_banner_keeps_what_is_there() -> None:
    cut = WSL_BANNER.split("|  0%")[0]  # ends right after the GPU row
    parsed = parse_smi_header(cut)
    assert parsed.driver_version == "596.36"
    assert [g.name for g in parsed.gpus] == ["NVIDIA GeForce RTX 4070"]
    assert parsed.gpus[0].memory_mib is None
    assert parsed.problem is not None and "ends inside" in parsed.problem


def test_binary_noise_is_reported_not_fatal() -> None:
    noisy = "\x00\x01\xff".join(WSL_BANNER.splitlines(keepends=True)[:3]) + "\ufffd\x07"
    parsed = parse_smi_header(noisy)
    assert parsed.driver_version == "596.36"
    assert parsed.problem is not None and "non-text" in parsed.problem


@pytest.mark.parametrize("text", ["", "   \n", "Segmentation fault (core dumped)\n"])
def test_header_without_banner_says_so(text: str) -> None:
    parsed = parse_smi_header(text)
    assert parsed.driver_version is None and parsed.gpus == ()
    assert parsed.problem == "no nvidia-smi banner or known error message found"


JETSON_ROWS = """\
|   0  Orin (nvgpu)                  N/A  | N/A              N/A |                  N/A |
| N/A   N/A  N/A               N/A /  N/A | Not Supported        |     N/A          N/A |
|                                         |                      |                  N/A |
+-----------------------------------------+----------------------+----------------------+
"""


def test_jetson_row_without_bus_id_or_memory() -> None:
    text = WSL_BANNER.split("|   0")[0] + JETSON_ROWS
    parsed = parse_smi_header(text)
    assert [(g.name, g.bus_id, g.memory_mib) for g in parsed.gpus] == [("Orin (nvgpu)", None, None)]
    assert parsed.problem is None


def test_process_rows_are_not_gpus() -> None:
    processes = (
        "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
        "|    0   N/A  N/A      1187      G   /usr/lib/xorg/Xorg                297MiB |\n"
        "|    0   N/A  N/A      2345    C+G   ...crosoft\\Edge\\msedge.exe     N/A      |\n"
    )
    assert len(parse_smi_header(WSL_BANNER + processes).gpus) == 1


# ---- --query-gpu --------------------------------------------------------------------------------

FIELDS = ("index", "name", "pci.device_id", "compute_cap", "memory.total", "mig.mode.current")


def test_query_rows_with_units_header_and_unknowns() -> None:
    text = (
        "index, name, pci.device_id, compute_cap, memory.total [MiB], mig.mode.current\n"
        "0, NVIDIA A100-SXM4-80GB, 0x20B210DE, 8.0, 81920 MiB, Enabled\n"
        "1, NVIDIA A100-SXM4-80GB, 0x20B210DE, 8.0, 81920 MiB, [N/A]\n"
    )
    parsed = parse_smi_query_csv(text, FIELDS)
    assert [
        (g.index, g.pci_device_id, g.compute_capability, g.memory_mib, g.mig_mode)
        for g in parsed.gpus
    ] == [
        (0, "0x20b2", "8.0", 81920, "Enabled"),
        (1, "0x20b2", "8.0", 81920, None),
    ]
    assert parsed.problem is None


def test_query_invalid_field() -> None:
    parsed = parse_smi_query_csv('Field "compute_cap" is not a valid field to query.\n\n', FIELDS)
    assert parsed.invalid_fields == ("compute_cap",)
    assert parsed.gpus == ()


def test_query_garbled_row_is_skipped_with_a_problem() -> None:
    text = "0, NVIDIA L4, 0x27B810DE, 8.9, 23034, [N/A]\n1, NVIDIA L4, 0x27B\n"
    parsed = parse_smi_query_csv(text, FIELDS)
    assert [g.index for g in parsed.gpus] == [0]
    assert parsed.problem is not None and "expected 6" in parsed.problem


def test_query_bad_values_become_none_with_a_problem() -> None:
    parsed = parse_smi_query_csv("x, NVIDIA L4, 0x27B810DE, eight, lots, [N/A]\n", FIELDS)
    gpu = parsed.gpus[0]
    assert (gpu.index, gpu.compute_capability, gpu.memory_mib) == (None, None, None)
    assert parsed.problem is not None and "compute_cap" in parsed.problem


def test_query_error_state() -> None:
    text = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    parsed = parse_smi_query_csv(text, FIELDS)
    assert [e.code for e in parsed.errors] == ["no_driver_communication"]
    assert parsed.gpus == () and parsed.problem is None


def test_query_rows_a_script_printed_as_a_python_list() -> None:
    """gpu-utils-style scripts print the command and then `['row', '']`: the items are rows."""
    text = (
        "/usr/bin/nvidia-smi -i 0a:00.0 --query-gpu=memory.total,vbios_version,driver_version,"
        "name,gpu_uuid --format=csv,noheader,nounits\n"
        "nsmi_items: [2]\n"
        "['7979, 90.04.23.00.5F, 440.64, GeForce RTX 2080, GPU-22b2c6ac-2d49', '']\n"
    )
    parsed = parse_smi_query_csv(text)
    assert [(g.name, g.memory_mib, g.vbios_version, g.driver_version) for g in parsed.gpus] == [
        ("GeForce RTX 2080", 7979, "90.04.23.00.5F", "440.64")
    ]
    assert parsed.format == "csv,noheader,nounits"


def test_list_lines_and_a_cut_one() -> None:
    text = (
        "$ nvidia-smi -L\n"
        "GPU 0: NVIDIA TITAN V (UUID: GPU-b5169cef-2205-c30e-f2b3-220cfa14bafd)\n"
        "GPU 1: NVIDIA RTX 5880 Ada Generation (UUID: GPU-7518f6b0-991f-ce2b-3d37\n"
    )
    assert [(g.index, g.name, g.uuid) for g in parse_smi_list(text)] == [
        (0, "NVIDIA TITAN V", "GPU-b5169cef-2205-c30e-f2b3-220cfa14bafd"),
        (1, "NVIDIA RTX 5880 Ada Generation", "GPU-7518f6b0-991f-ce2b-3d37"),
    ]
    assert parse_smi_list("GPU 0: NVIDIA GeForce RTX 3090\n") == ()  # collect_env, not -L


def test_query_without_known_fields() -> None:
    assert parse_smi_query_csv("0, a, b\n").problem == "the queried fields are not known"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0x220410DE", "0x2204"),
        ("0x1E3010DE", "0x1e30"),
        ("0x2204", "0x2204"),
        ("220410de", "0x2204"),
        (0x233010DE, "0x2330"),
        (0x2330, "0x2330"),
        ("[N/A]", None),
        ("", None),
        (None, None),
        (-1, None),
        (2**40, None),
    ],
)
def test_normalize_pci_device_id(value: str | int | None, expected: str | None) -> None:
    assert normalize_pci_device_id(value) == expected


# ---- nvidia-smi -q ------------------------------------------------------------------------------

Q_LINUX = """
==============NVSMI LOG==============

Timestamp                                 : Tue Jul  8 09:14:22 2025
Driver Version                            : 580.65.06
CUDA Version                              : 13.0

Attached GPUs                             : 1
GPU 00000000:19:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    GPU UUID                              : GPU-9f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b
    PCI
        Bus                               : 0x19
        Device Id                         : 0x233010DE
    FB Memory Usage
        Total                             : 81559 MiB
        Used                              : 1 MiB
"""


def test_q_nested_sections() -> None:
    parsed = parse_smi_q(Q_LINUX)
    assert (parsed.driver_version, parsed.driver_max_cuda, parsed.attached_gpus) == (
        "580.65.06",
        "13.0",
        1,
    )
    gpu = parsed.gpus[0]
    assert (gpu.name, gpu.mig_mode, gpu.pci_device_id, gpu.memory_mib, gpu.bus_id) == (
        "NVIDIA H100 80GB HBM3",
        "Enabled",
        "0x2330",
        81559,
        "00000000:19:00.0",
    )
    assert parsed.problem is None


Q_XML = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
\t<timestamp>Mon Aug  7 11:10:06 2023</timestamp>
\t<driver_version>535.86.05</driver_version>
\t<cuda_version>12.2</cuda_version>
\t<attached_gpus>2</attached_gpus>
\t<gpu id="00000000:84:00.0">
\t\t<product_name>NVIDIA GeForce RTX 4090</product_name>
\t\t<mig_mode>
\t\t\t<current_mig>N/A</current_mig>
\t\t</mig_mode>
\t\t<uuid>GPU-e189fb8d-1627-f8f0-2ba3-c0585a8e9e85</uuid>
\t\t<vbios_version>95.02.18.80.5F</vbios_version>
\t\t<fb_memory_usage>
\t\t\t<total>24564 MiB</total>
\t\t\t<used>1 MiB</used>
\t\t</fb_memory_usage>
\t</gpu>
\t<gpu id="00000000:85:00.0">
\t\t<product_name>NVIDIA A100-SXM4-80GB</product_name>
\t\t<mig_mode>
\t\t\t<current_mig>Enabled</current_mig>
"""


def test_q_xml_and_a_cut_one() -> None:
    parsed = parse_smi_q(Q_XML)
    assert (parsed.driver_version, parsed.driver_max_cuda, parsed.attached_gpus) == (
        "535.86.05",
        "12.2",
        2,
    )
    first, second = parsed.gpus
    assert (first.name, first.bus_id, first.uuid, first.memory_mib, first.vbios_version) == (
        "NVIDIA GeForce RTX 4090",
        "00000000:84:00.0",
        "GPU-e189fb8d-1627-f8f0-2ba3-c0585a8e9e85",
        24564,
        "95.02.18.80.5F",
    )
    assert (second.name, second.mig_mode, second.memory_mib) == (
        "NVIDIA A100-SXM4-80GB",
        "Enabled",
        None,
    )


def test_q_error_instead_of_log() -> None:
    parsed = parse_smi_q("Failed to initialize NVML: Driver/library version mismatch\n")
    assert [e.code for e in parsed.errors] == ["nvml_mismatch"]
    assert parsed.gpus == () and parsed.problem is None


def test_q_garbage_says_so() -> None:
    assert parse_smi_q("\x00\x00garbage").problem is not None


# ---- kernel module ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version", "open_kernel"),
    [
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  "
            "Sun May 12 19:39:15 UTC 2024\n"
            "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n",
            "535.183.01",
            False,
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.144.03  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Mon Dec 30 17:10:21 UTC 2024\n",
            "550.144.03",
            True,
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build\n",
            "580.65.06",
            True,
        ),
        (
            "NVRM version: NVIDIA UNIX aarch64 Kernel Module  470.256.02  Thu May  2\n",
            "470.256.02",
            False,
        ),
    ],
)
def test_proc_driver_version(text: str, version: str, open_kernel: bool) -> None:
    parsed = parse_proc_driver_version(text)
    assert (parsed.version, parsed.open_kernel, parsed.problem) == (version, open_kernel, None)


def test_proc_driver_version_garbage() -> None:
    parsed = parse_proc_driver_version("NVRM: \x00\x00 something else")
    assert parsed.version is None and parsed.problem is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("535.183.01\n", "535.183.01"), ("580.65.06", "580.65.06"), ("", None), ("\x00\x01", None)],
)
def test_module_version(text: str, expected: str | None) -> None:
    assert parse_module_version(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64\n",
            "36.4.3",
        ),
        (
            "# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t186ref, EABI: aarch64\n",
            "32.7.1",
        ),
        ("# R35 (release), REVISION: 3.1, GCID: 32827747, BOARD: t186ref\n", "35.3.1"),
        ("not a tegra release file", None),
        ("", None),
    ],
)
def test_nv_tegra_release(text: str, expected: str | None) -> None:
    assert parse_nv_tegra_release(text) == expected


def test_jetson_stats_format() -> None:
    text = (
        "Software part of jetson-stats 4.2.12 - (c) 2024, Raffaello Bonghi\n"
        "Model: NVIDIA Jetson AGX Orin Developer Kit - Jetpack 6.0 [L4T 36.3.0]\n"
        "Platform:\n - Machine: aarch64\n - Distribution: Ubuntu 22.04 Jammy Jellyfish\n"
        " - Release: 5.15.136-tegra\nLibraries:\n - CUDA: 12.2.140\n - cuDNN: 8.9.4.25\n"
    )
    parsed = parse_jetson_release(text)
    assert (parsed.model, parsed.jetpack, parsed.l4t_release) == (
        "NVIDIA Jetson AGX Orin Developer Kit",
        "6.0",
        "36.3.0",
    )
    assert (parsed.kernel, parsed.cuda, parsed.ubuntu) == ("5.15.136-tegra", "12.2.140", "22.04")


# ---- no input makes a parser raise --------------------------------------------------------------

PARSERS = (
    parse_smi_header,
    parse_smi_q,
    parse_smi_query_csv,
    lambda t: parse_smi_query_csv(t, FIELDS),
    parse_proc_driver_version,
    parse_module_version,
    parse_nv_tegra_release,
    parse_jetson_release,
)


@given(st.text(max_size=400) | st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace")))
def test_parsers_never_raise(text: str) -> None:
    """Rule: any text, binary garbage included, gives a result, never an exception."""
    for parser in PARSERS:
        parser(text)


@given(st.text(alphabet="|+-=0123456789 .:/MiBOnOfN\nA", max_size=600))
def test_table_like_noise_never_raises(text: str) -> None:
    """Rule: table-shaped noise (pipes, digits, MiB) never breaks the banner parser."""
    parse_smi_header(WSL_BANNER[:200] + text)
