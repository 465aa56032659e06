"""The console script's entry: Ctrl-C while the command line is still being imported exits 130
with one line, like Ctrl-C anywhere else, not with a traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from gpuenv.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("gpuenv: interrupted\n")
        return 130
    return run()
