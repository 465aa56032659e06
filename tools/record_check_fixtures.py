"""Turn what tools/check_on_gpu.sh collected into check fixtures, and compare the bench with the
hand-written reference loop.

    python tools/record_check_fixtures.py OUTDIR [--name MACHINE]

Reads OUTDIR/snapshot.json (the driver's GPUs), OUTDIR/raw/<framework>.{stdout,stderr,rc} (each
check script run directly), OUTDIR/check.json (`gpuenv check --bench --json`) and
OUTDIR/reference.json (tools/check_gpu_reference.py). Writes OUTDIR/fixtures/<framework>.json in
the format of tests/fixtures/check (host and user names redacted, "provenance": "recorded: ..."),
with what gpuenv judged then as "expected", and OUTDIR/compare.txt: gpuenv's bench figures for
GPU 0 against the reference's (target: within 10 %). Exit 1 when a figure is off by more.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpuenv.check.judge import Context, judge, machine_has_gpu, no_explanation
from gpuenv.check.model import DriverGpu, exit_code, to_dict
from gpuenv.check.parse import read_run
from gpuenv.kb import default_kb
from gpuenv.probe.run import here_names
from gpuenv.redact import redact_text

FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")
STDERR_KEPT = 200_000  # characters of the end of stderr kept in a fixture
TOLERANCE = 0.10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--name", help="the machine's name in the provenance")
    args = parser.parse_args()
    snapshot = read_snapshot(args.outdir)
    gpus = tuple(
        DriverGpu(g["index"], g.get("name"), g.get("compute_capability"))
        for g in snapshot.get("gpus", [])
    )
    driver = next((v["value"] for v in snapshot.get("driver", {}).get("versions", [])), None)
    name = args.name or (gpus[0].name if gpus else "no GPU")
    provenance = (
        f"recorded: {datetime.date.today().isoformat()}, tools/check_on_gpu.sh on {name} "
        f"({len(gpus)} GPU(s), driver {driver})"
    )
    folder = args.outdir / "fixtures"
    folder.mkdir(exist_ok=True)
    for framework in FRAMEWORKS:
        fixture = record(args.outdir / "raw", framework, gpus, provenance)
        if fixture is not None:
            path = folder / f"{framework}.json"
            path.write_text(json.dumps(fixture, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {path}: {fixture['expected']['status']}")
    return compare(args.outdir)


def read_snapshot(outdir: Path) -> dict[str, Any]:
    for path in (outdir / "snapshot.json", outdir / "machine" / "snapshot.json"):
        try:
            found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return found
        except (OSError, ValueError):
            continue
    print("no snapshot: the driver's GPUs are unknown")
    return {}


def record(
    raw: Path, framework: str, gpus: tuple[DriverGpu, ...], provenance: str
) -> dict[str, Any] | None:
    if not (raw / f"{framework}.rc").exists():
        return None
    names = here_names()
    stdout = redact_text((raw / f"{framework}.stdout").read_text("utf-8", "replace"), names)
    stderr = redact_text((raw / f"{framework}.stderr").read_text("utf-8", "replace"), names)
    rc_text = (raw / f"{framework}.rc").read_text().strip()
    returncode = int(rc_text) if rc_text.lstrip("-").isdigit() else None
    if returncode is not None and returncode > 128:  # the shell's 128 + signal
        returncode = 128 - returncode
    run = read_run(framework, stdout=stdout, stderr=stderr, returncode=returncode)
    result = judge(run, Context(gpus, machine_has_gpu(gpus, [run]), default_kb(), no_explanation))
    document = json.loads(stdout) if run.report.complete else None
    return {
        "provenance": provenance,
        "description": f"{framework}: gpuenv's check script run directly on this machine",
        "framework": framework,
        "driver_gpus": [to_dict(g) for g in gpus],
        "run": {"document": document, "stderr": stderr[-STDERR_KEPT:], "returncode": returncode},
        "expected": {
            "status": result.status,
            "exit_code": exit_code((result,)),
            "outcome": result.outcome,
            "failed_steps": [[s.device, s.name] for s in result.failed_steps],
            "causes": [s.cause for s in result.failed_steps if s.cause],
            "low": [[f.device, f.name] for f in result.bench if f.low],
        },
    }


def compare(outdir: Path) -> int:
    """gpuenv's figures for GPU 0 (from `gpuenv check --bench --json`) against the reference."""
    try:
        check = json.loads((outdir / "check.json").read_text(encoding="utf-8"))
        reference = json.loads((outdir / "reference.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"no comparison: {exc}")
        return 0
    torch = next((f for f in check.get("frameworks", []) if f["name"] == "torch"), None)
    mine = {b["name"]: b["median"] for b in (torch or {}).get("bench", []) if b["device"] == 0}
    lines, worst = [], 0.0
    for name, theirs in reference.get("figures", {}).items():
        if name not in mine:
            lines.append(f"{name}: gpuenv has no figure (reference {theirs:.1f})")
            worst = max(worst, 1.0)
            continue
        off = abs(mine[name] - theirs) / theirs
        worst = max(worst, off)
        verdict = "ok" if off <= TOLERANCE else "OFF"
        lines.append(
            f"{name}: gpuenv {mine[name]:.1f}, reference {theirs:.1f}, {off:.1%} apart: {verdict}"
        )
    text = "\n".join(lines) or "the reference has no figures (no GPU?)"
    (outdir / "compare.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 1 if worst > TOLERANCE else 0


if __name__ == "__main__":
    sys.exit(main())
