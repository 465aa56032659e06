"""gpuenv's one error type and its exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Exit codes, for every command.
EXIT_OK = 0  # nothing wrong found (or the command did what it was asked)
EXIT_FINDINGS = 1  # at least one error finding (doctor, explain, check) or no plan fits
EXIT_FAILED = 2  # gpuenv itself failed: bad arguments, unreadable --from file, broken KB


class GpuenvError(Exception):
    """An error with a stable kebab-case code, a message, the cause and hints for the user."""

    def __init__(
        self, code: str, message: str, cause: str | None = None, hints: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.cause = cause
        self.hints = tuple(hints)

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": self.code,
            "message": self.message,
            "cause": self.cause,
            "hints": list(self.hints),
        }

    def __str__(self) -> str:
        text = f"{self.message} [{self.code}]"
        if self.cause:
            text += f"\n  cause: {self.cause}"
        for hint in self.hints:
            text += f"\n  hint: {hint}"
        return text
