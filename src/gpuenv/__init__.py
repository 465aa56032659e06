"""gpuenv: get a working GPU deep-learning environment and keep it working.

Public API (imported lazily so that `gpuenv --help` starts fast): take_snapshot, Snapshot, WhatIf.
"""

from __future__ import annotations

from typing import Any

from gpuenv._version import __version__

__all__ = ["Snapshot", "WhatIf", "__version__", "take_snapshot"]


def __getattr__(name: str) -> Any:
    if name == "take_snapshot":
        from gpuenv.api import take_snapshot

        return take_snapshot
    if name == "Snapshot":
        from gpuenv.facts import Snapshot

        return Snapshot
    if name == "WhatIf":
        from gpuenv.whatif import WhatIf

        return WhatIf
    raise AttributeError(name)
