"""Property: no input file or child output makes gpuenv raise anything but its own GpuenvError
(a clear message, exit 2). CI-sized; `tools/fuzz_inputs.py` runs the same targets for longer."""

from __future__ import annotations

import tempfile
from pathlib import Path

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

CI = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CI
@given(st.one_of(st.binary(max_size=300), mutated_snapshots()))
def test_any_from_file_is_read_or_refused_with_a_gpuenv_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        snapshot_target(data, Path(folder))


@CI
@given(TARGET_DOCUMENTS)
def test_any_target_output_becomes_facts_or_a_problem(data: bytes) -> None:
    target_output_target(data)


@CI
@given(st.one_of(st.binary(max_size=300), REQUIREMENT_LINES))
def test_any_requirements_file_is_parsed_or_refused_with_a_gpuenv_error(data: bytes) -> None:
    requirements_target(data)
