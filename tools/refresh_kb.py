#!/usr/bin/env python3
"""Maintainer script: rebuild src/gpuenv/kb/data/wheels.toml from the package index pip uses.

    python tools/refresh_kb.py [--package NAME ...] [--out PATH] [--index-url URL]

The same as `gpuenv kb refresh`. Exit status: 0 written, 1 written with problems, 2 failed (the old
file is kept).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import gpuenv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpuenv.errors import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, GpuenvError
from gpuenv.kbtools.refresh import PACKAGES, refresh


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="NAME",
        help=f"only this package (repeatable): {', '.join(spec.name for spec in PACKAGES)}",
    )
    parser.add_argument("--out", type=Path, help="write here instead of the packaged wheels.toml")
    parser.add_argument("--index-url", help="an index instead of the one pip is configured with")
    args = parser.parse_args(argv)
    try:
        report = refresh(
            args.package or None,
            args.out,
            args.index_url,
            progress=lambda text: print(f"refresh_kb: {text}", file=sys.stderr, flush=True),
        )
    except GpuenvError as error:
        print(f"refresh_kb: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(report.summary(verbose=True))
    return EXIT_FINDINGS if report.problems else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
