"""gpuenv: get a working GPU deep-learning environment and keep it working.

The library API the CLI is thin over. Names are imported lazily so that `gpuenv --help` starts
fast:

- `take_snapshot(...)`: facts about this machine (or a `--from` file), with what-if flags applied
- `doctor(snapshot, kb=None)`: the stack's floors and the findings, each with evidence and a fix
  (named for the command: `gpuenv.diagnose` is the subpackage that holds the rules)
- `make_plan(request, snapshot, kb, installer)`: versions that fit, with reasons
- `explain_text(text, kb=None, snapshot=None)`: the cause of an error text or pasted report,
  the evidence, the facts, and the fix for those facts (an `Explanation`)
- `check_env(python=..., frameworks=..., bench=...)`: each framework's GPU checks, run in the
  env (a `CheckReport`: per framework, device and step, with timings and bench figures; named
  so that the subpackage `gpuenv.check` cannot shadow it)
- `default_kb()` / `load_kb(...)`: the knowledge base
- `Snapshot`, `WhatIf`: the facts document and the what-if flags
"""

from __future__ import annotations

import importlib
from typing import Any

from gpuenv._version import __version__

_WHERE = {
    "Snapshot": "gpuenv.facts",
    "WhatIf": "gpuenv.whatif",
    "check_env": "gpuenv.api",
    "default_kb": "gpuenv.kb",
    "doctor": "gpuenv.api",
    "explain_text": "gpuenv.explain",
    "load_kb": "gpuenv.kb",
    "make_plan": "gpuenv.plan.resolve",
    "request_from_arguments": "gpuenv.plan.request",
    "take_snapshot": "gpuenv.api",
}
__all__ = ["__version__", *sorted(_WHERE)]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    return getattr(importlib.import_module(_WHERE[name]), name)
