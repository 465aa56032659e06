"""Planning: what to install so that it fits the machine, with reasons. Pure: a request, a snapshot
(probed, loaded or declared with what-if flags) and the knowledge base in; a Plan out.

Names are imported lazily so that registering the `plan` command keeps `gpuenv --help` fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "PackageChoice": "gpuenv.plan.model",
    "Plan": "gpuenv.plan.model",
    "Rejection": "gpuenv.plan.model",
    "SmallestChange": "gpuenv.plan.model",
    "plan_to_dict": "gpuenv.plan.model",
    "Request": "gpuenv.plan.request",
    "parse_want": "gpuenv.plan.request",
    "request_from_arguments": "gpuenv.plan.request",
    "make_plan": "gpuenv.plan.resolve",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    return getattr(importlib.import_module(_WHERE[name]), name)
