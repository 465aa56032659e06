"""The one door from `gpuenv check` to `gpuenv.explain`: error text in, a cause out.

`gpuenv.explain` (`explain_text(text, kb=None, snapshot=None) -> Explanation` with `.cause`,
`.summary`, `.to_dict()`) is imported lazily, the first time an error needs explaining; while it is
not installed, or when it fails, the answer is None and the check reports the error text alone.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from gpuenv.check.model import Explained
from gpuenv.facts import Snapshot

MODULE = "gpuenv.explain"
MAX_TEXT = 64 * 1024


def explain_error(text: str, snapshot: Snapshot | None = None, kb: Any = None) -> Explained | None:
    """What explain makes of `text`, or None (no explain module, no cause found, or it failed)."""
    if not text.strip():
        return None
    try:
        if importlib.util.find_spec(MODULE) is None:
            return None
        found = importlib.import_module(MODULE).explain_text(
            text[-MAX_TEXT:], kb=kb, snapshot=snapshot
        )
    except Exception:  # explain is another module's work: its failure must not fail the check
        return None
    if found is None or getattr(found, "cause", None) is None:
        return None  # nothing recognised: the error text speaks for itself
    cause, summary = getattr(found, "cause", None), getattr(found, "summary", None)
    try:
        detail = found.to_dict() if hasattr(found, "to_dict") else {}
    except Exception:
        detail = {}
    return Explained(
        cause=cause if isinstance(cause, str) else None,
        summary=summary if isinstance(summary, str) else None,
        detail=detail if isinstance(detail, Mapping) else {},
    )


def explainer(snapshot: Snapshot | None, kb: Any = None) -> Any:
    """`explain_error` bound to the snapshot, remembering answers (one text, one call)."""
    seen: dict[str, Explained | None] = {}

    def explain(text: str) -> Explained | None:
        if text not in seen:
            seen[text] = explain_error(text, snapshot, kb)
        return seen[text]

    return explain
