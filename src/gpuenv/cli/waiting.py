"""A note on stderr while gpuenv waits for a slow command (a hung nvidia-smi answers only at its
deadline), so that a person at a terminal is not left looking at silence."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import PurePath

from gpuenv.cli.options import Ui, isatty
from gpuenv.edges import output, process

FIRST_S = 3.0  # a command running longer than this is named
EVERY_S = 10.0  # and again this often while it still runs


@contextlib.contextmanager
def waiting_notes(ui: Ui, first: float = FIRST_S, every: float = EVERY_S) -> Iterator[None]:
    """While the block runs, name the command gpuenv waits for once it has taken `first`
    seconds, and every `every` seconds after; only on a terminal, never with -q."""
    if ui.quiet or not isatty(sys.stderr):
        yield
        return
    done = threading.Event()

    def watch() -> None:
        pause = first
        while not done.wait(pause):
            slow = [(argv, s) for argv, s in process.waiting_on() if s >= first]
            if slow:
                argv, seconds = slow[0]
                output.say(f"gpuenv: still waiting for {PurePath(argv[0]).name} ({seconds:.0f} s)")
                pause = every
            else:
                pause = min(first, 1.0)

    watcher = threading.Thread(target=watch, name="gpuenv-waiting", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
