"""Whole snapshots of recorded machines: every probe together, the JSON document, the doctor.

Each folder under tests/fixtures/machines is a machine (recorded from a real host or synthetic,
as its `provenance` says); the probes run against it exactly as against a live machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from gpuenv.diagnose import diagnose
from gpuenv.facts import to_dict
from gpuenv.kb import default_kb
from gpuenv.probe.access import RecordedMachine
from gpuenv.probe.run import ProbeOptions, probe_machine
from gpuenv.snapshot_io import snapshot_from_dict
from tests.conftest import MACHINES

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "docs" / "snapshot.schema.json").read_text("utf-8")
)
# The doctor's rules (error and warning severities, and information) each machine must give.
EXPECTED_RULES = {
    "container_require_cuda": ["container-needs-newer-driver"],
    "container_without_gpus": ["container-without-gpus"],
    "driver_not_loaded": ["driver-not-loaded"],
    "gtx1080ti_driver470": [],
    "h100_driver580": [],
    "jetson_orin_jp6": [],
    "k80_driver580": ["driver-drops-gpu"],
    "no_driver": ["no-nvidia-gpu"],
    "nvml_mismatch": ["driver-module-mismatch"],
    "rtx3090_driver535": [],
    "smi_hangs": ["driver-timed-out"],
    "v100_driver460": [],
    "windows_rtx4090": [],
    "wsl2": [],
}
FOLDERS = sorted(p.name for p in MACHINES.iterdir() if (p / "machine.json").exists())


def test_every_recorded_machine_has_an_expectation() -> None:
    assert sorted(EXPECTED_RULES) == FOLDERS


@pytest.mark.parametrize("name", FOLDERS)
def test_snapshot_and_doctor_of_a_recorded_machine(name: str) -> None:
    machine = RecordedMachine.load(MACHINES / name)
    snapshot = probe_machine(machine, ProbeOptions(probe_python=False))
    document = to_dict(snapshot)
    jsonschema.validate(document, SCHEMA)
    diagnosis = diagnose(snapshot, default_kb())
    assert [f.rule for f in diagnosis.findings] == EXPECTED_RULES[name]
    # the same facts read back from their JSON form give the same answer
    again = diagnose(snapshot_from_dict(json.loads(json.dumps(document)), name), default_kb())
    assert [f.rule for f in again.findings] == EXPECTED_RULES[name]


@pytest.mark.parametrize("name", FOLDERS)
def test_recorded_machines_say_where_they_come_from(name: str) -> None:
    spec = json.loads((MACHINES / name / "machine.json").read_text("utf-8"))
    assert spec["provenance"].startswith(("recorded", "synthetic"))
