"""probe_driver on the recorded machines, on small machines built here, and the NVML child."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gpuenv.facts import DRIVER_FAILURES, DriverFacts, GpuFacts
from gpuenv.probe.access import CommandResult, LiveMachine, RecordedMachine
from gpuenv.probe.driver import SMI_FORMAT, SMI_QUERY_FIELDS, WSL_SMI, probe_driver
from gpuenv.probe.nvml_child import parse_child_output
from tests.conftest import MACHINES

FOLDERS = sorted(p for p in MACHINES.iterdir() if (p / "machine.json").is_file())
REQUIRED = {
    "no_driver",
    "rtx3090_driver535",
    "gtx1080ti_driver470",
    "h100_driver580",
    "wsl2",
    "container_require_cuda",
    "jetson_orin_jp6",
    "nvml_mismatch",
    "smi_hangs",
    "windows_rtx4090",
}
CHILD = "{gpuenv-python} -m gpuenv.probe.nvml_child"
QUERY = f"nvidia-smi --query-gpu={','.join(SMI_QUERY_FIELDS)} {SMI_FORMAT}"


def _spec(folder: Path) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads((folder / "machine.json").read_text("utf-8"))
    return spec


def _driver_view(facts: DriverFacts, gpus: tuple[GpuFacts, ...]) -> dict[str, Any]:
    """The probed facts under the flat keys of a fixture's `expected` block."""
    return {
        "driver_versions": {o.source: o.value for o in facts.versions if o.known},
        "max_cuda": {o.source: o.value for o in facts.max_cuda if o.known},
        "failures": sorted({o.value for o in facts.failures if o.value is not None}),
        "gpu_names": [g.name for g in gpus],
        "compute_capabilities": [g.compute_capability for g in gpus],
        "pci_device_ids": [g.pci_device_id for g in gpus],
        "memory_mib": [g.memory_mib for g in gpus],
        "mig_modes": [g.mig_mode for g in gpus],
        "gpu_source": gpus[0].source if gpus else None,
    }


def test_the_required_machines_are_recorded() -> None:
    assert {f.name for f in FOLDERS} >= REQUIRED
    for folder in FOLDERS:
        provenance = _spec(folder)["provenance"]
        assert provenance.startswith(("synthetic", "recorded: ")), folder.name


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_recorded_machine_driver_facts(folder: Path) -> None:
    facts, gpus = probe_driver(RecordedMachine.load(folder))
    view = _driver_view(facts, gpus)
    expected = _spec(folder)["expected"]
    checked = {k: v for k, v in expected.items() if k in view}
    assert {"driver_versions", "max_cuda", "failures", "gpu_names"} <= set(checked)
    assert {k: view[k] for k in checked} == checked
    for observation in facts.versions + facts.max_cuda + facts.failures:
        assert observation.source
        assert observation.known or observation.problem, observation
    assert all(f.value in DRIVER_FAILURES for f in facts.failures if f.known)


# ---- machines built here ------------------------------------------------------------------------


@dataclass
class Spy(RecordedMachine):
    """A recorded machine that remembers the commands asked of it and their timeouts."""

    calls: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def run(
        self,
        argv: Sequence[str],
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> CommandResult:
        self.calls.append((tuple(argv), timeout))
        return super().run(argv, timeout, env, stdin)


def _out(stdout: str, code: int = 0, stderr: str = "") -> dict[str, object]:
    return {"stdout": stdout, "stderr": stderr, "returncode": code}


def _child(
    nvml: dict[str, Any] | None = None, cuda: dict[str, Any] | None = None
) -> dict[str, object]:
    document = {
        "format": 1,
        "platform": "linux",
        "nvml": nvml if nvml is not None else {"load_error": "libnvidia-ml.so.1: cannot open"},
        "cuda": cuda if cuda is not None else {"load_error": "libcuda.so.1: cannot open"},
    }
    return _out(json.dumps(document) + "\n")


NVML_OK = {
    "library": "libnvidia-ml.so.1",
    "driver_version": "550.144.03",
    "cuda_driver_version": 12040,
    "device_count": 1,
    "devices": [
        {
            "index": 0,
            "name": "NVIDIA L4",
            "pci_device_id": 0x27B810DE,
            "compute_capability": "8.9",
            "memory_total_bytes": 23034 * 1024 * 1024,
            "mig_mode": None,
            "uuid": "GPU-1",
            "errors": {},
        }
    ],
}
MODULE = {
    "/sys/module/nvidia/version": "550.144.03\n",
    "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.144.03\n",
}


def _machine(**spec: Any) -> Spy:
    return Spy(
        commands=spec.get("commands", {}),
        files=spec.get("files", {}),
        dirs=spec.get("dirs", {}),
        links=spec.get("links", {}),
        env=spec.get("env", {}),
        system_name=spec.get("system", "Linux"),
        machine_name=spec.get("machine", "x86_64"),
    )


def _failures(facts: DriverFacts) -> list[tuple[str | None, str]]:
    return [(f.value, f.source) for f in facts.failures]


@pytest.mark.parametrize(
    ("env", "sources"),
    [
        ({"CUDA_VISIBLE_DEVICES": ""}, ["CUDA_VISIBLE_DEVICES"]),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, ["CUDA_VISIBLE_DEVICES"]),
        ({"CUDA_VISIBLE_DEVICES": "-1,0"}, ["CUDA_VISIBLE_DEVICES"]),
        ({"NVIDIA_VISIBLE_DEVICES": "void"}, ["NVIDIA_VISIBLE_DEVICES"]),
        (
            {"NVIDIA_VISIBLE_DEVICES": "none", "CUDA_VISIBLE_DEVICES": ""},
            ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"],
        ),
        ({"CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "all"}, []),
        ({"CUDA_VISIBLE_DEVICES": "GPU-5b7a1f4e"}, []),
    ],
)
def test_visible_devices_hide_all(env: dict[str, str], sources: list[str]) -> None:
    facts, _ = probe_driver(_machine(env=env, commands={CHILD: _child(NVML_OK)}))
    found = [s for v, s in _failures(facts) if v == "visible_devices_hide_all"]
    assert found == sources


def test_device_nodes_missing_when_the_module_is_loaded() -> None:
    machine = _machine(files=MODULE, dirs={"/dev": ["null", "nvidia-uvm"]})
    facts, _ = probe_driver(machine)
    [failure] = [f for f in facts.failures if f.value == "device_nodes_missing"]
    assert failure.raw is not None and "/dev/nvidiactl" in failure.raw


@pytest.mark.parametrize(
    "extra",
    [
        {"dirs": {"/dev": ["nvidiactl", "nvidia1"]}},  # a container given the second GPU only
        {"dirs": {"/dev": []}, "files": {"/proc/version": "Linux 5.15-microsoft-standard-WSL2"}},
        {
            "dirs": {"/dev": []},
            "files": {"/etc/nv_tegra_release": "# R36 (release), REVISION: 4.3"},
        },
    ],
)
def test_device_nodes_not_reported(extra: dict[str, Any]) -> None:
    machine = _machine(files={**MODULE, **extra.get("files", {})}, dirs=extra["dirs"])
    facts, _ = probe_driver(machine)
    assert "device_nodes_missing" not in [f.value for f in facts.failures]


def test_device_nodes_not_checked_without_a_module() -> None:
    facts, _ = probe_driver(_machine(dirs={"/dev": ["null"]}))
    assert "device_nodes_missing" not in [f.value for f in facts.failures]


def test_query_drops_each_field_the_driver_does_not_know() -> None:
    fields = list(SMI_QUERY_FIELDS)
    first = f"nvidia-smi --query-gpu={','.join(fields)} {SMI_FORMAT}"
    fields.remove("compute_cap")
    second = f"nvidia-smi --query-gpu={','.join(fields)} {SMI_FORMAT}"
    fields.remove("mig.mode.current")
    third = f"nvidia-smi --query-gpu={','.join(fields)} {SMI_FORMAT}"
    invalid = 'Field "{}" is not a valid field to query.\n'
    machine = _machine(
        commands={
            first: _out(invalid.format("compute_cap"), 2),
            second: _out(invalid.format("mig.mode.current"), 2),
            third: _out("0, Tesla P100-PCIE-16GB, 0x15F810DE, 16280, GPU-2, 440.118.02\n"),
            CHILD: _child(),
        }
    )
    facts, gpus = probe_driver(machine)
    asked = [argv for argv, _ in machine.calls if "--query-gpu" in " ".join(argv)]
    assert len(asked) == 3
    assert [(g.name, g.pci_device_id, g.memory_mib, g.source) for g in gpus] == [
        ("Tesla P100-PCIE-16GB", "0x15f8", 16280, "nvidia-smi --query-gpu")
    ]
    assert {o.source: o.value for o in facts.versions if o.known} == {
        "nvidia-smi --query-gpu=driver_version": "440.118.02"
    }


def test_wsl_runs_the_wsl_nvidia_smi_and_passes_the_timeout() -> None:
    machine = _machine(
        files={"/proc/version": "Linux version 6.6.87.2-microsoft-standard-WSL2"},
        commands={CHILD: _child()},
    )
    probe_driver(machine, timeout=3.5)
    assert machine.calls[1][0][0] == WSL_SMI  # after the NVML child
    assert {argv[0] for argv, _ in machine.calls} >= {WSL_SMI, "nvidia-smi"}
    assert {timeout for _, timeout in machine.calls} == {3.5}


def test_windows_runs_nvidia_smi_exe_and_reads_no_linux_files() -> None:
    machine = _machine(system="Windows", machine="AMD64", files=MODULE, commands={CHILD: _child()})
    facts, _ = probe_driver(machine)
    assert machine.calls[1][0][0] == "nvidia-smi.exe"
    assert not any(o.source.startswith("kernel-module:") for o in facts.versions)


def test_a_hanging_query_is_not_followed_by_the_banner() -> None:
    machine = _machine(files=MODULE, commands={QUERY: {"timed_out": True}, CHILD: _child(NVML_OK)})
    facts, gpus = probe_driver(machine, timeout=7)
    assert [argv[0] for argv, _ in machine.calls].count("nvidia-smi") == 1
    [failure] = [f for f in facts.failures if f.value == "timed_out"]
    assert (failure.source, failure.raw) == ("nvidia-smi", "nvidia-smi timed out after 7 s")
    assert [g.source for g in gpus] == ["nvml"]


@pytest.mark.parametrize(
    ("code", "name", "value"),
    [
        (4, "no_permission", "device_nodes_unreadable"),
        (9, "driver_not_loaded", "no_driver_communication"),
        (18, "nvml_mismatch", "nvml_mismatch"),
        (999, "unknown", None),
    ],
)
def test_nvml_init_errors(code: int, name: str, value: str | None) -> None:
    nvml = {"library": "libnvidia-ml.so.1", "init_error": {"code": code, "name": name, "text": "x"}}
    facts, gpus = probe_driver(_machine(commands={CHILD: _child(nvml)}))
    [failure] = [f for f in facts.failures if f.source == "nvml:nvmlInit"]
    assert failure.value == value
    if value is None:  # kept visible even without a DRIVER_FAILURES name
        assert failure.problem == name
    assert gpus == ()


def test_no_devices_from_nvml_and_nvidia_smi() -> None:
    nvml = {"library": "libnvidia-ml.so.1", "driver_version": "550.144.03", "device_count": 0}
    commands = {CHILD: _child(nvml), QUERY: _out("No devices were found\n", 6)}
    facts, gpus = probe_driver(_machine(commands=commands))
    assert sorted(_failures(facts)) == [
        ("libcuda_unavailable", "libcuda"),
        ("no_devices", "nvidia-smi"),
        ("no_devices", "nvml:nvmlDeviceGetCount"),
    ]
    assert gpus == ()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (_out("Segmentation fault\n"), "the NVML child printed no report"),
        (
            _out("", 1, "Traceback ...\nImportError: no module named x\n"),
            "exited with 1: ImportError",
        ),
        (_out('{"format": 99}\n'), "the NVML child printed no report"),
    ],
)
def test_a_broken_child_is_a_missing_source(answer: dict[str, object], problem: str) -> None:
    facts, _ = probe_driver(_machine(files=MODULE, commands={CHILD: answer}))
    nvml = next(o for o in facts.versions if o.source == "nvml:nvmlSystemGetDriverVersion")
    assert nvml.value is None and nvml.problem is not None and problem in nvml.problem
    assert {o.value for o in facts.versions if o.known} == {"550.144.03"}


def test_the_child_missing_entirely() -> None:
    facts, _ = probe_driver(_machine())
    nvml = next(o for o in facts.versions if o.source == "nvml:nvmlSystemGetDriverVersion")
    assert nvml.problem == "the NVML child could not start: interpreter not found"


def test_garbage_from_nvidia_smi_is_a_problem_not_a_crash() -> None:
    garbage = "\x00\x7f\ufffd| 0 |\x1b[31m" * 20
    facts, gpus = probe_driver(
        _machine(commands={QUERY: _out(garbage), "nvidia-smi": _out(garbage), CHILD: _child()})
    )
    smi = next(o for o in facts.versions if o.source == "nvidia-smi")
    assert smi.value is None and smi.problem is not None and "non-text" in smi.problem
    assert gpus == ()


def test_gpus_from_the_banner_when_the_query_gives_nothing() -> None:
    banner = (MACHINES / "rtx3090_driver535" / "machine.json").read_text("utf-8")
    text = json.loads(banner)["commands"]["nvidia-smi"]["stdout"]
    machine = _machine(commands={QUERY: _out("\n"), "nvidia-smi": _out(text), CHILD: _child()})
    _, gpus = probe_driver(machine)
    assert [(g.index, g.name, g.memory_mib, g.source) for g in gpus] == [
        (0, "NVIDIA GeForce RTX 3090", 24576, "nvidia-smi")
    ]


def test_a_device_handle_error_stays_visible() -> None:
    line = "Unable to determine the device handle for GPU0000:62:00.0: Unknown Error"
    facts, _ = probe_driver(_machine(commands={QUERY: _out(line, 15), CHILD: _child()}))
    [failure] = [f for f in facts.failures if f.source == "nvidia-smi"]
    assert (failure.value, failure.problem, failure.raw) == (
        "device_handle_unknown_error",
        None,
        line,
    )


def test_mismatch_library_version_from_nvidia_smi() -> None:
    text = (
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.183"
    )
    commands = {QUERY: _out(text, 18), "nvidia-smi": _out(text, 18), CHILD: _child()}
    facts, _ = probe_driver(_machine(files=MODULE, commands=commands))
    versions = {o.source: o.value for o in facts.versions if o.known}
    assert versions["nvidia-smi: NVML library version"] == "535.183"
    assert versions["kernel-module:/sys/module/nvidia/version"] == "550.144.03"
    assert ("nvml_mismatch", "nvidia-smi") in _failures(facts)


def test_macos_has_no_cuda_driver() -> None:
    machine = _machine(system="Darwin", machine="arm64")
    facts, gpus = probe_driver(machine)
    assert machine.calls == [] and gpus == ()
    assert [o.problem for o in facts.versions] == ["macOS has no CUDA driver"]


# ---- the NVML child's report --------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"format": 2}', "\x00\x01"])
def test_child_output_that_is_not_the_report(text: str) -> None:
    assert parse_child_output(text) is None


def test_child_output_with_wrong_types_keeps_what_fits() -> None:
    document = {
        "format": 1,
        "nvml": {
            "driver_version": 535,
            "cuda_driver_version": "12020",
            "device_count": True,
            "devices": [{"index": 0, "name": ["x"], "memory_total_bytes": 2**30}, "junk"],
            "errors": {"nvml_version": "nvmlSystemGetNVMLVersion: not_found (6)"},
        },
        "cuda": "nonsense",
    }
    report = parse_child_output("libfoo: warning\n" + json.dumps(document))
    assert report is not None
    assert (report.driver_version, report.nvml_cuda_version, report.device_count) == (
        None,
        None,
        None,
    )
    assert [(d.index, d.name, d.memory_mib) for d in report.devices] == [(0, None, 1024)]
    assert report.problems == ("nvml nvml_version: nvmlSystemGetNVMLVersion: not_found (6)",)


def test_child_crash_is_a_problem() -> None:
    document = {"format": 1, "nvml": {"crash": "OSError: boom"}, "cuda": {"driver_version": 12040}}
    report = parse_child_output(json.dumps(document))
    assert report is not None
    assert report.nvml.load_error == "OSError: boom"
    assert report.cuda_driver_version == 12040
    assert "nvml: {'crash': 'OSError: boom'}" in report.problems


@pytest.mark.real
def test_the_child_on_this_machine_reports_cleanly() -> None:
    """This machine has no NVIDIA driver: the child says so in its JSON and exits 0."""
    result = LiveMachine().run([sys.executable, "-m", "gpuenv.probe.nvml_child"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "RuntimeWarning" not in result.stderr
    report = parse_child_output(result.stdout)
    assert report is not None
    if report.nvml.library is not None:
        pytest.skip("this machine has libnvidia-ml; the check is for GPU-less machines")
    assert report.nvml.load_error and "libnvidia-ml" in report.nvml.load_error
    assert report.driver_version is None and report.devices == ()
    facts, _ = probe_driver(LiveMachine(), timeout=60)
    assert "nvml_unavailable" in [f.value for f in facts.failures]
