"""`gpuenv check`: prove the GPU works from each framework in the env, and how fast."""

from __future__ import annotations

import argparse
from typing import Any

from gpuenv.cli.options import output_options, seconds
from gpuenv.edges import output

FRAMEWORK_CHOICES = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser(
        "check",
        parents=[common],
        help="prove the GPU works from each framework (and how fast, with --bench)",
        description="Run each framework installed in the env (torch, tensorflow, jax, cupy, "
        "onnxruntime) in a child process of the env's interpreter: does it see the GPUs, do "
        "known-answer computations (matmul, elementwise, cuDNN convolution, TF32/BF16/FP16, "
        "torchvision's compiled ops, torch.compile, NCCL) give the right result. A hang, a "
        "crash or an import failure is that framework's result. Exit 0: every check passed on "
        "every GPU; 1: a check failed; 2: gpuenv itself failed; 3: no GPU to check (the "
        "frameworks still import and report their builds).",
    )
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="the env's interpreter (default: the active venv/conda env, else python3)",
    )
    parser.add_argument(
        "--framework",
        type=_frameworks,
        metavar="NAMES",
        help=f"comma-separated, from {','.join(FRAMEWORK_CHOICES)} (default: every one "
        "installed in the env)",
    )
    parser.add_argument("--device", type=_device, metavar="N", help="check only GPU N")
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="S",
        help="seconds each framework's checks may take (default 180); reading the env first "
        "takes at most 10 s per command, or S when shorter",
    )
    parser.add_argument(
        "--bench",
        action="store_true",
        help="also measure copy bandwidth and matmul throughput against the card's spec peak",
    )
    output_options(parser, redact=False)
    parser.set_defaults(handler=run)


def _frameworks(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in FRAMEWORK_CHOICES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or repr(text)}: choose from {', '.join(FRAMEWORK_CHOICES)}"
        )
    return names


def _device(text: str) -> int:
    if not text.isdigit() or int(text) > 1023:
        raise argparse.ArgumentTypeError(f"{text!r}: give a GPU index, 0 or more")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from gpuenv.api import check_env
    from gpuenv.render.check import check_document, render_text

    report = check_env(
        python=args.python,
        frameworks=args.framework,
        device=args.device,
        timeout=args.timeout,
        bench=args.bench,
        progress=None if args.ui.quiet else _say,
    )
    if args.json:
        output.emit_json(check_document(report))
    else:
        output.emit(render_text(report, args.ui.terminal, verbose=args.ui.verbose))
    return report.exit_code


def _say(text: str) -> None:
    output.say(f"gpuenv: {text}")
