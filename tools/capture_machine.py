"""Capture this machine as a recorded-machine fixture (see CONTRIBUTING.md).

    python tools/capture_machine.py OUTDIR [--python PATH] [--description TEXT]

Runs every probe through a RecordingMachine and writes OUTDIR/machine.json (identifiers redacted)
plus OUTDIR/snapshot.json (the snapshot those answers give). Read both before committing.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpuenv.probe.recording import RecordingMachine
from gpuenv.probe.run import ProbeOptions, here_names, probe_machine
from gpuenv.redact import redact_snapshot
from gpuenv.snapshot_io import snapshot_json

ENV_KEYS = (
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DRIVER_CAPABILITIES",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "PATH",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--python", help="target interpreter")
    parser.add_argument("--description", default=f"{platform.node()} captured")
    args = parser.parse_args()
    recorder = RecordingMachine(names=here_names())
    snapshot = probe_machine(recorder, ProbeOptions(interpreter=args.python))
    today = datetime.date.today().isoformat()
    recorder.write(
        args.outdir, f"recorded: {today}, tools/capture_machine.py", args.description, ENV_KEYS
    )
    clean = redact_snapshot(snapshot, here_names())
    (args.outdir / "snapshot.json").write_text(snapshot_json(clean), encoding="utf-8")
    print(f"wrote {args.outdir}/machine.json and snapshot.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
