"""Redaction removes identifiers everywhere and keeps what diagnosis needs."""

from __future__ import annotations

from dataclasses import replace

from gpuenv.facts import GpuFacts, Observation, to_dict
from gpuenv.redact import redact_snapshot, redact_text
from tests.test_snapshot_io import full_snapshot

UUID = "GPU-5b2b9d3e-1c2f-4a7e-9d3b-0f1e2d3c4b5a"


def test_uuids_serials_and_names_are_removed() -> None:
    text = (
        f"GPU 0: NVIDIA A100 (UUID: {UUID})\n"
        "  MIG 1g.5gb Device 0: (UUID: MIG-5b2b9d3e-1c2f-4a7e-9d3b-0f1e2d3c4b5a)\n"
        "    Serial Number                         : 1321020012345\n"
        "/home/alice/envs/x/bin/python on host gpu-node-17"
    )
    out = redact_text(text, ["gpu-node-17", "alice"])
    assert UUID not in out and "MIG-5b2b" not in out and "1321020012345" not in out
    assert "alice" not in out and "gpu-node-17" not in out
    assert "NVIDIA A100" in out and "/home/<user>/envs/x/bin/python" in out


def test_uuid_prefixes_are_removed_but_words_are_not() -> None:
    out = redact_text("CUDA_VISIBLE_DEVICES=GPU-5b2b9d3e,MIG-7c1a2b3d4e GPU-accelerated GPU-0")
    assert "5b2b9d3e" not in out and "7c1a2b3d4e" not in out
    assert "GPU-accelerated" in out and "GPU-0" in out


def test_short_names_do_not_eat_versions() -> None:
    assert redact_text("driver 535.183.01 on ab", ["ab"]) == "driver 535.183.01 on ab"
    assert redact_text("host box7 driver 535", ["box7"]) == "host <redacted> driver 535"


def test_snapshot_redaction_reaches_raw_outputs_and_keeps_facts() -> None:
    snapshot = full_snapshot()
    raw = f"| 0 NVIDIA GeForce RTX 3090 | {UUID} | node: labhost |"
    snapshot = replace(
        snapshot,
        gpus=(GpuFacts(0, "NVIDIA GeForce RTX 3090", "nvml", "0x2204", "8.6", uuid=UUID),),
        driver=replace(
            snapshot.driver, versions=(Observation("535.183.01", "nvidia-smi", raw=raw),)
        ),
        origin="probed",
    )
    out = redact_snapshot(snapshot, ["labhost"])
    text = str(to_dict(out))
    assert UUID not in text and "labhost" not in text
    assert out.redacted and out.origin == "probed"
    assert out.gpus[0].compute_capability == "8.6"
    assert out.driver.versions[0].value == "535.183.01"
