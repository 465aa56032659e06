from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuenv.parse.nvcc import parse_nvcc_version
from gpuenv.probe.access import LiveMachine, RecordedMachine
from gpuenv.probe.toolkit import (
    CondaPackage,
    find_toolkits,
    parse_conda_meta,
    parse_dist_info_name,
    parse_version_json,
    parse_version_txt,
    parse_wrapper_target,
    probe_toolkits,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pasted-reports.dev.jsonl"

NVCC_13 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""
NVCC_11 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2022 NVIDIA Corporation
Built on Wed_Sep_21_10:33:58_PDT_2022
Cuda compilation tools, release 11.8, V11.8.89
Build cuda_11.8.r11.8/compiler.31833905_0
"""
WRAPPER = '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n'
VERSION_JSON_124 = json.dumps(
    {"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, "cuda_cudart": {"version": "12.4.127"}}
)


def _corpus(kind: str) -> list[dict[str, Any]]:
    if not CORPUS.exists():
        pytest.skip(f"{CORPUS} not present (shared/ lies beside the checkout in CI)")
    with CORPUS.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [r for r in records if r.get("kind") == kind]


# ---- parsers ------------------------------------------------------------------------------------


def test_parse_nvcc_version_on_corpus() -> None:
    records = _corpus("nvcc")
    assert len(records) >= 4
    for record in records:
        expected = record["expected"]
        version = parse_nvcc_version(record["text"])
        assert version == expected["release_version"].lstrip("V"), record["id"]
        assert version.startswith(expected["cuda_version"] + "."), record["id"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (NVCC_13, "13.0.88"),
        (NVCC_11, "11.8.89"),
        (NVCC_11.replace("\n", "\r\n"), "11.8.89"),
        ("Cuda compilation tools, release 12.1", "12.1"),
        ("nvcc: command not found", None),
        ("", None),
        ("\x00\x01\xff garbage release x.y, Vq", None),
    ],
)
def test_parse_nvcc_version(text: str, expected: str | None) -> None:
    assert parse_nvcc_version(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (VERSION_JSON_124, "12.4.1"),
        ('{"cuda": {"version": "13.0.2"}}', "13.0.2"),
        ('{"cuda": {"version": 12.4}}', None),
        ('{"cuda": "12.4"}', None),
        ('{"cuda_cudart": {"version": "12.4.127"}}', None),
        ("[1, 2]", None),
        ('{"cuda": {"version": "12.4.1"', None),
        ("[" * 100000, None),
        ("\x00\xff", None),
    ],
)
def test_parse_version_json(text: str, expected: str | None) -> None:
    assert parse_version_json(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CUDA Version 11.8.0\n", "11.8.0"),
        ("CUDA Version 10.2.89", "10.2.89"),
        ("CUDA Version unknown", None),
        ("", None),
    ],
)
def test_parse_version_txt(text: str, expected: str | None) -> None:
    assert parse_version_txt(text) == expected


def test_parse_dist_info_name() -> None:
    assert parse_dist_info_name("nvidia_cudnn_cu12-9.1.0.70.dist-info") == (
        "nvidia-cudnn-cu12",
        "9.1.0.70",
    )
    assert parse_dist_info_name("nvidia_cuda_nvcc-13.0.88.dist-info") == (
        "nvidia-cuda-nvcc",
        "13.0.88",
    )
    assert parse_dist_info_name("Nvidia_CuBLAS_cu11-11.11.3.6.dist-info") == (
        "nvidia-cublas-cu11",
        "11.11.3.6",
    )
    assert parse_dist_info_name("nvidia_cudnn_cu12.dist-info") is None
    assert parse_dist_info_name("README.txt") is None


def test_parse_conda_meta() -> None:
    text = json.dumps(
        {
            "name": "cuda-cudart",
            "version": "12.4.127",
            "build": "h99ab3db_0",
            "files": ["lib/libcudart.so.12", "lib/libcudart.so.12.4.127", 7],
        }
    )
    assert parse_conda_meta(text) == CondaPackage(
        "cuda-cudart", "12.4.127", ("lib/libcudart.so.12", "lib/libcudart.so.12.4.127")
    )
    assert parse_conda_meta('{"name": "x", "version": "1"}') == CondaPackage("x", "1")
    assert parse_conda_meta('{"name": "x"}') is None
    assert parse_conda_meta('{"name": "x", "version": "1", "files": "lib/a"}') == CondaPackage(
        "x", "1"
    )
    assert parse_conda_meta("not json") is None
    assert parse_conda_meta("[]") is None


def test_parse_wrapper_target() -> None:
    assert parse_wrapper_target(WRAPPER) == "/usr/local/cuda-13.0/bin/nvcc"
    quoted = '#!/bin/bash\nset -e\nexec "/opt/cuda 12/bin/nvcc" "$@"\n'
    assert parse_wrapper_target(quoted) is None  # a path with a space is not guessed at
    env_style = '#!/bin/sh\nNVCC=/usr/lib/nvidia-cuda-toolkit/bin/nvcc\nexec "$NVCC" "$@"\n'
    assert parse_wrapper_target(env_style) == "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
    assert parse_wrapper_target("\x7fELF/usr/local/cuda/bin/nvcc") is None
    assert parse_wrapper_target("#!/bin/sh\nexec pyenv exec nvcc\n") is None
    assert parse_wrapper_target("#!" + "=/" * 30000) is None
    assert parse_wrapper_target("#!/bin/sh\nexec $CUDA/bin/nvcc") is None


# ---- probe on recorded machines -----------------------------------------------------------------


def _this_kind_of_machine(**changes: Any) -> RecordedMachine:
    """Like the machine gpuenv is developed on: a wrapper nvcc, cuda -> cuda-13.0 from wheels."""
    machine = RecordedMachine(
        commands={"nvcc --version": {"stdout": NVCC_13}},
        files={
            "/usr/local/bin/nvcc": WRAPPER,
            "/usr/local/cuda-13.0/bin/nvcc": None,
            "/usr/local/cuda-13.0/nvvm/bin/cicc": None,
            "/usr/local/cuda-11.8/version.txt": "CUDA Version 11.8.0\n",
            "/usr/local/cuda-11.8/bin/nvcc": None,
            "/opt/cuda-12.4/version.json": VERSION_JSON_124,
        },
        dirs={
            "/usr/local/cuda-13.0/dist-info": [
                "nvidia_cuda_nvcc-13.0.88.dist-info",
                "nvidia_cuda_runtime-13.0.96.dist-info",
            ],
        },
        links={"/usr/local/cuda": "/usr/local/cuda-13.0"},
        env={"PATH": "/root/.pyenv/shims:/usr/local/sbin:/usr/local/bin:/usr/bin"},
    )
    for key, value in changes.items():
        getattr(machine, key).update(value)
    return machine


def test_wrapper_nvcc_and_symlink_reach_one_toolkit() -> None:
    found = find_toolkits(_this_kind_of_machine())
    by_path = {t.facts.path: t for t in found}
    assert sorted(by_path) == ["/usr/local/cuda-11.8", "/usr/local/cuda-13.0"]
    cuda13 = by_path["/usr/local/cuda-13.0"]
    assert cuda13.facts.toolkit_cuda == "13.0.88"
    assert cuda13.facts.source == "nvcc"
    assert cuda13.facts.on_path is True
    assert "release 13.0, V13.0.88" in (cuda13.facts.raw or "")
    assert cuda13.routes == (
        "PATH nvcc /usr/local/bin/nvcc (wrapper for /usr/local/cuda-13.0/bin/nvcc)",
        "/usr/local/cuda",
        "/usr/local/cuda-13.0",
    )
    cuda11 = by_path["/usr/local/cuda-11.8"].facts
    assert (cuda11.toolkit_cuda, cuda11.source, cuda11.on_path) == ("11.8.0", "version.txt", False)
    assert found[0].facts.on_path  # the toolkit that `nvcc` runs comes first


def test_cuda_home_and_dist_info_without_nvcc_on_path() -> None:
    machine = _this_kind_of_machine(env={"PATH": "/usr/bin", "CUDA_HOME": "/opt/cuda-12.4/"})
    facts = {t.path: t for t in probe_toolkits(machine)}
    assert facts["/opt/cuda-12.4"].toolkit_cuda == "12.4.1"
    assert facts["/opt/cuda-12.4"].source == "version.json"
    assert facts["/usr/local/cuda-13.0"].toolkit_cuda == "13.0.88"
    assert facts["/usr/local/cuda-13.0"].source == "dist-info"
    assert not any(t.on_path for t in facts.values())


def test_missing_cuda_home_is_a_fact_with_a_problem() -> None:
    machine = _this_kind_of_machine(env={"CUDA_HOME": "/usr/local/cuda-12.1"})
    fact = next(t for t in probe_toolkits(machine) if t.path == "/usr/local/cuda-12.1")
    assert fact.toolkit_cuda is None
    assert fact.source == "CUDA_HOME"
    assert "no such directory" in (fact.problem or "")


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"timed_out": True}, "timed out"),
        ({"returncode": 1, "stderr": "nvcc fatal : bad install"}, "exited with 1"),
        ({"stdout": "\x00\x01garbage\xff"}, "printed no version"),
    ],
)
def test_nvcc_failure_falls_back_to_files(answer: dict[str, object], problem: str) -> None:
    machine = _this_kind_of_machine(commands={"nvcc --version": answer})
    fact = next(t for t in probe_toolkits(machine) if t.on_path)
    assert fact.path == "/usr/local/cuda-13.0"
    assert fact.toolkit_cuda == "13.0.88"
    assert fact.source == "dist-info"
    assert problem in (fact.problem or "")


def test_unresolvable_wrapper_records_the_nvcc_file() -> None:
    machine = RecordedMachine(
        commands={"nvcc --version": {"stdout": NVCC_11}},
        files={"/home/u/bin/nvcc": '#!/bin/sh\nexec ssh build-box nvcc "$@"\n'},
        env={"PATH": "/home/u/bin"},
    )
    (fact,) = probe_toolkits(machine)
    assert (fact.path, fact.toolkit_cuda, fact.on_path) == ("/home/u/bin/nvcc", "11.8.89", True)


def test_toolkit_without_version_files_runs_its_own_nvcc() -> None:
    machine = RecordedMachine(
        commands={"/opt/cuda/bin/nvcc --version": {"stdout": NVCC_11}},
        files={"/opt/cuda/bin/nvcc": None, "/opt/cuda/version.json": "{garbled"},
        env={"PATH": "/usr/bin"},
    )
    (fact,) = probe_toolkits(machine)
    assert (fact.path, fact.toolkit_cuda, fact.source) == ("/opt/cuda", "11.8.89", "nvcc")


def test_unknown_toolkit_directory_says_why() -> None:
    machine = RecordedMachine(
        files={"/opt/cuda/version.json": "{garbled", "/opt/cuda/version.txt": None},
        env={"PATH": "/usr/bin"},
    )
    (fact,) = probe_toolkits(machine)
    assert fact.toolkit_cuda is None
    assert "version.json: no cuda version" in (fact.problem or "")
    assert "version.txt: permission denied" in (fact.problem or "")


def test_conda_env_toolkit_prefers_the_compiler_package() -> None:
    prefix = "/home/u/miniconda3/envs/dl"
    meta = f"{prefix}/conda-meta"
    machine = RecordedMachine(
        files={
            f"{meta}/cuda-version-12.4-h3_3.json": '{"name": "cuda-version", "version": "12.4"}',
            f"{meta}/cuda-nvcc-12.4.131-0.json": '{"name": "cuda-nvcc", "version": "12.4.131"}',
            f"{meta}/cuda-nvcc-impl-12.4.131-0.json": '{"name": "cuda-nvcc-impl", "version": "9"}',
            f"{meta}/python-3.11.9-0.json": '{"name": "python", "version": "3.11.9"}',
        },
        env={"PATH": "/usr/bin", "CONDA_PREFIX": prefix},
    )
    (found,) = find_toolkits(machine)
    assert found.facts.path == prefix
    assert (found.facts.toolkit_cuda, found.facts.source) == ("12.4.131", "conda-meta")
    assert found.routes == ("CONDA_PREFIX",)


def test_conda_nvcc_on_path_is_the_conda_toolkit() -> None:
    prefix = "/opt/conda/envs/dl"
    machine = RecordedMachine(
        commands={"nvcc --version": {"stdout": NVCC_11}},
        files={
            f"{prefix}/targets/x86_64-linux/bin/nvcc": None,
            f"{prefix}/conda-meta/cuda-nvcc-11.8.89-0.json": json.dumps(
                {"name": "cuda-nvcc", "version": "11.8.89"}
            ),
        },
        links={f"{prefix}/bin/nvcc": f"{prefix}/targets/x86_64-linux/bin/nvcc"},
        env={"PATH": f"{prefix}/bin:/usr/bin", "CONDA_PREFIX": prefix},
    )
    (found,) = find_toolkits(machine)
    assert (found.facts.path, found.facts.toolkit_cuda, found.facts.source) == (
        prefix,
        "11.8.89",
        "nvcc",
    )
    assert found.facts.on_path
    assert found.routes == (
        f"PATH nvcc {prefix}/bin/nvcc -> {prefix}/targets/x86_64-linux/bin/nvcc",
        "CONDA_PREFIX",
    )


def test_conda_env_with_old_cudatoolkit_and_garbled_meta() -> None:
    prefix = "/opt/conda"
    machine = RecordedMachine(
        files={
            f"{prefix}/conda-meta/cudatoolkit-11.8.0-h6a678d5_0.json": json.dumps(
                {"name": "cudatoolkit", "version": "11.8.0", "files": ["lib/libcudart.so.11.0"]}
            ),
            f"{prefix}/conda-meta/cuda-version-11.8-0.json": "\x00\x00junk",
        },
        env={"CONDA_PREFIX": prefix},
    )
    (fact,) = probe_toolkits(machine)
    assert (fact.toolkit_cuda, fact.source) == ("11.8.0", "conda-meta")


def test_conda_env_without_cuda_packages_is_no_toolkit() -> None:
    machine = RecordedMachine(
        files={"/opt/conda/conda-meta/python-3.11.9-0.json": '{"name": "python"}'},
        env={"CONDA_PREFIX": "/opt/conda"},
    )
    assert probe_toolkits(machine) == ()


def test_windows_toolkits() -> None:
    base = r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA"
    machine = RecordedMachine(
        commands={"nvcc.exe --version": {"stdout": NVCC_11.replace("\n", "\r\n")}},
        files={
            base + r"\v12.4\version.json": VERSION_JSON_124,
            base + r"\v11.8\version.json": '{"cuda": {"version": "11.8.0"}}',
            base + r"\v11.8\bin\nvcc.exe": None,
        },
        env={
            "PATH": r"C:\Windows\system32;" + base + r"\v11.8\bin",
            "CUDA_PATH": base + r"\v12.4",
            "CUDA_PATH_V12_4": base + r"\v12.4",
            "CUDA_PATH_V11_8": base + "\\v11.8\\",
        },
        # RecordedMachine lists folders from file paths with '/' only: name them here
        dirs={
            base: ["v11.8", "v12.4", "readme.txt"],
            base + r"\v11.8": ["bin", "version.json"],
            base + r"\v12.4": ["version.json"],
        },
        system_name="Windows",
        machine_name="AMD64",
    )
    found = {t.facts.path: t for t in find_toolkits(machine)}
    assert sorted(found) == [base + r"\v11.8", base + r"\v12.4"]
    v118, v124 = found[base + r"\v11.8"], found[base + r"\v12.4"]
    assert (v118.facts.toolkit_cuda, v118.facts.on_path) == ("11.8.89", True)
    assert (v124.facts.toolkit_cuda, v124.facts.source) == ("12.4.1", "version.json")
    assert v124.routes == ("CUDA_PATH", "CUDA_PATH_V12_4", base + r"\v12.4")
    assert "CUDA_PATH_V11_8" in v118.routes


def test_no_toolkit_anywhere() -> None:
    assert probe_toolkits(RecordedMachine(env={"PATH": "/usr/bin:/bin"})) == ()


# ---- this machine -------------------------------------------------------------------------------


@pytest.mark.real
def test_real_machine_nvcc_on_path() -> None:
    if not LiveMachine().exists("/usr/local/cuda-13.0/bin/nvcc"):
        pytest.skip("no CUDA 13.0 toolkit on this machine")
    facts = probe_toolkits(LiveMachine())
    on_path = [t for t in facts if t.on_path]
    assert len(on_path) == 1
    assert on_path[0].toolkit_cuda == "13.0.88"
    assert on_path[0].source == "nvcc"
    assert on_path[0].path == "/usr/local/cuda-13.0"
    assert [t.path for t in facts].count("/usr/local/cuda-13.0") == 1


def test_a_cuda_home_link_loop_is_named_as_the_user_set_it() -> None:
    # os.path.realpath gives up on a loop half-way ("/opt/loop/loop/a"): not a path to show
    machine = _this_kind_of_machine(
        env={"CUDA_HOME": "/opt/loop/a"}, links={"/opt/loop/a": "/opt/loop/loop/a"}
    )
    fact = next(t for t in probe_toolkits(machine) if t.source == "CUDA_HOME")
    assert fact.path == "/opt/loop/a" and "no such directory" in (fact.problem or "")


def test_a_chatty_nvcc_is_kept_as_evidence_only_in_part() -> None:
    noise = NVCC_13 + "warning: something\n" * 200_000
    machine = _this_kind_of_machine(commands={"nvcc --version": {"stdout": noise}})
    [nvcc] = [t for t in probe_toolkits(machine) if t.on_path]
    assert nvcc.toolkit_cuda == "13.0.88" and len(nvcc.raw or "") <= 2000
