"""Run the input fuzz targets of tests/fuzz_inputs.py for longer than CI does.

    python tools/fuzz_inputs.py [EXAMPLES]   (default 20000 per target)

Prints each target's example count and time; a failure prints the falsifying input and exits 1.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz_inputs import (
    REQUIREMENT_LINES,
    TARGET_DOCUMENTS,
    mutated_snapshots,
    requirements_target,
    snapshot_target,
    target_output_target,
)


def main() -> int:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    long_run = settings(
        max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck)
    )
    folder = Path(tempfile.mkdtemp(prefix="gpuenv-fuzz-"))
    targets = {
        "--from files": given(st.one_of(st.binary(max_size=2000), mutated_snapshots()))(
            lambda data: snapshot_target(data, folder)
        ),
        "target script output": given(TARGET_DOCUMENTS)(target_output_target),
        "requirements files": given(st.one_of(st.binary(max_size=2000), REQUIREMENT_LINES))(
            requirements_target
        ),
    }
    for name, target in targets.items():
        start = time.monotonic()
        long_run(target)()
        print(f"{name}: {examples} examples, {time.monotonic() - start:.1f} s, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
