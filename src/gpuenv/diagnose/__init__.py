"""Diagnosis: a pure function of (snapshot, knowledge base) → the stack's layers and findings."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from gpuenv.diagnose.context import Context, build_context
from gpuenv.diagnose.findings import CAUSES, Diagnosis, Evidence, Finding, Fix, Layer, ordered
from gpuenv.diagnose.rules_builds import rule_cpu_only, rule_rocm_build
from gpuenv.diagnose.rules_driver import (
    rule_branch_lifecycle,
    rule_container_require,
    rule_container_without_gpus,
    rule_driver_lists_no_gpu,
    rule_driver_not_loaded,
    rule_driver_unresponsive,
    rule_hidden_devices,
    rule_module_mismatch,
    rule_no_driver,
)
from gpuenv.diagnose.rules_env import (
    rule_extensions,
    rule_jetson_wheel,
    rule_python_unreadable,
    rule_toolkit_info,
)
from gpuenv.diagnose.rules_framework import (
    rule_arch_unsupported,
    rule_driver_too_old,
    rule_python_range,
)
from gpuenv.diagnose.rules_libs import (
    rule_framework_coexistence,
    rule_missing_pip_libs,
    rule_shadowed_libs,
)
from gpuenv.diagnose.rules_limits import rule_driver_ceiling, rule_toolkit_driver
from gpuenv.diagnose.rules_ptx import rule_ptx_jit, rule_runtime_codegen
from gpuenv.diagnose.stack import build_layers
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase

__all__ = ["CAUSES", "RULES", "Diagnosis", "Evidence", "Finding", "Fix", "Layer", "diagnose"]

Rule = Callable[[Context], list[Finding]]

# Order matters only for ties within a severity: the floor nearest the hardware first.
RULES: tuple[Rule, ...] = (
    rule_no_driver,
    rule_driver_not_loaded,
    rule_driver_unresponsive,
    rule_driver_lists_no_gpu,
    rule_module_mismatch,
    rule_driver_ceiling,
    rule_hidden_devices,
    rule_container_without_gpus,
    rule_container_require,
    rule_cpu_only,
    rule_rocm_build,
    rule_jetson_wheel,
    rule_driver_too_old,
    rule_ptx_jit,
    rule_runtime_codegen,
    rule_arch_unsupported,
    rule_missing_pip_libs,
    rule_shadowed_libs,
    rule_framework_coexistence,
    rule_python_range,
    rule_python_unreadable,
    rule_extensions,
    rule_toolkit_driver,
    rule_toolkit_info,
    rule_branch_lifecycle,
)


def diagnose(
    snapshot: Snapshot, kb: KnowledgeBase, today: datetime.date | None = None
) -> Diagnosis:
    ctx = build_context(snapshot, kb, today)
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(ctx))
    ranked = ordered(findings)
    return Diagnosis(layers=build_layers(ctx, ranked), findings=ranked)
