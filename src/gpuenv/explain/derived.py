"""Facts judged from other facts and the knowledge base, for the rules of patterns.toml to
look at: whether the release a text asks for has a wheel for the reporter's Python, whether the
cuDNN a program could not load is of another major version than the one installed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuenv.explain.fix import python_unserved
from gpuenv.explain.model import Fact
from gpuenv.facts import Snapshot
from gpuenv.kb import KnowledgeBase

_CUDNN_SONAME = re.compile(r"(?:libcudnn\w*\.so\.|cudnn\w*?64_)(\d+)", re.IGNORECASE)


def judged(facts: Sequence[Fact], snapshot: Snapshot, kb: KnowledgeBase) -> dict[str, str]:
    out = {}
    if python_unserved(facts, snapshot, kb):
        out["python_unserved"] = "true"
    if cudnn_other_major(facts):
        out["cudnn_other_major"] = "true"
    return out


def cudnn_other_major(facts: Sequence[Fact]) -> bool:
    """A cuDNN library of major N could not be loaded while the text says cuDNN M (M != N) is
    installed: the wrong major, not a missing cuDNN."""
    wanted = {
        m.group(1)
        for f in facts
        if f.name == "missing_library" and (m := _CUDNN_SONAME.search(f.value))
    }
    installed = {
        f.value.split(".")[0] for f in facts if f.name == "cudnn_version" and f.value[:1].isdigit()
    }
    return bool(wanted and installed and not wanted & installed)
