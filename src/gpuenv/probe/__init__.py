"""Probes: the only code that touches the machine. They return facts, never judgements.

Kept import-free so that child probes (`python -m gpuenv.probe.nvml_child`) start fast and do not
depend on their siblings; the orchestration lives in `gpuenv.probe.run`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ProbeOptions", "here_names", "probe_machine"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from gpuenv.probe import run

        return getattr(run, name)
    raise AttributeError(name)
