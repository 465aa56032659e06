"""`gpuenv check`: prove the GPU works from each framework in an env, and how fast.

Each framework's checks run in a child process of the target interpreter (`runner`), as the
stdlib-only scripts beside this file (`_harness.py` and one `_<framework>.py` each); what they
print is read defensively (`parse`), judged against the driver's GPUs and the knowledge base
(`judge`, `bench`), and described by `model`. Rendering lives in `gpuenv.render.check`.

Kept import-free (names load lazily) so that the pure modules can be imported without the runner.
"""

from __future__ import annotations

from typing import Any

_WHERE = {
    "CheckOptions": "gpuenv.check.runner",
    "run_check": "gpuenv.check.runner",
    "CheckReport": "gpuenv.check.model",
    "FrameworkResult": "gpuenv.check.model",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
