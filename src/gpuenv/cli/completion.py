"""`gpuenv completion bash|zsh|fish`: a shell completion script, made from the parser itself."""

from __future__ import annotations

import argparse
from typing import Any

from gpuenv.edges import output
from gpuenv.errors import EXIT_OK

SHELLS = ("bash", "zsh", "fish")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "completion",
        parents=[common],
        help="print a shell completion script (bash, zsh, fish)",
        description="Print a completion script for your shell. Install it with, for example: "
        "`gpuenv completion bash > ~/.local/share/bash-completion/completions/gpuenv`, "
        "`gpuenv completion zsh > ~/.zfunc/_gpuenv` (with ~/.zfunc in fpath), or "
        "`gpuenv completion fish > ~/.config/fish/completions/gpuenv.fish`.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpuenv.cli.shell_completion import script

    output.emit(script(args.root_parser, args.shell))
    return EXIT_OK
