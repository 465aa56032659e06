"""gpuenv's one error type and its exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Exit codes, for every command (docs/cli.md lists them).
EXIT_OK = 0  # nothing wrong found (or the command did what it was asked)
EXIT_FINDINGS = 1  # an error finding (doctor), no cause found (explain), a check failed, no fit
EXIT_FAILED = 2  # gpuenv itself failed: bad arguments, unreadable input, a write that failed
EXIT_NO_GPU = 3  # check: no GPU to check (the frameworks were still imported and reported)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM)


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
