"""The library API: what the CLI does, done from Python."""

from __future__ import annotations

import importlib
import sys

import pytest

import gpuenv


def test_diagnose_and_plan_from_python() -> None:
    kb = gpuenv.default_kb()
    what_if = gpuenv.WhatIf(driver="535.183.01", gpus=("RTX 3090",), python_version="3.11")
    from gpuenv.whatif import declared_snapshot

    snapshot = declared_snapshot(what_if, kb)
    importlib.import_module("gpuenv.diagnose")  # the subpackage must not shadow the API
    diagnosis = gpuenv.doctor(snapshot, kb)
    assert diagnosis.layers[0].summary == "NVIDIA GeForce RTX 3090"
    plan = gpuenv.make_plan(gpuenv.request_from_arguments(["torch"]), snapshot, kb, "pip")
    [torch] = [p for p in plan.envs[0].packages if p.framework == "torch"]
    assert torch.cuda is not None and torch.cuda.startswith("12.")  # driver 535: CUDA 12 family


def test_every_public_name_resolves() -> None:
    for name in gpuenv.__all__:
        assert getattr(gpuenv, name) is not None


@pytest.mark.real
def test_check_from_python_reports_a_framework_that_is_not_installed() -> None:
    """gpuenv's own interpreter, which holds no torch: asked for, tried, not installed."""
    importlib.import_module("gpuenv.check")  # the subpackage must not shadow the API
    report = gpuenv.check_env(python=sys.executable, frameworks=["torch"])
    [torch] = report.frameworks
    assert (torch.outcome, torch.status, report.exit_code) == ("not_installed", "failed", 1)
    assert torch.error == f"torch is not installed in {sys.executable}"
