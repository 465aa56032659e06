#!/usr/bin/env python3
"""Maintainer script: read conda-forge's repodata and list the CUDA and CPU builds of tensorflow,
jaxlib and cupy it publishes, as [[forge_build]] rows for src/gpuenv/kb/data/conda.toml, and
what the knowledge base lacks or holds that the channel no longer lists.

    python tools/refresh_conda_forge.py [--repodata FILE_OR_URL ...] [--package NAME ...]
                                        [--out FILE] [--since VERSION]

By default it reads https://conda.anaconda.org/conda-forge/{linux-64,linux-aarch64,win-64}/
current_repodata.json (the newest builds only: the full repodata.json is hundreds of MB). A
saved repodata (or a shard exported as JSON) can be given instead. Rows are printed for review,
never merged by themselves: GPU architectures (sass, ptx) are not in repodata and come from the
feedstock's build script (recipe/build.sh); copy them from the row the KB already has for the
same version and CUDA, or read them there.

Exit status: 0 the knowledge base has every build found, 1 builds to review, 2 failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

try:
    import gpuenv  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpuenv.kb import default_kb

CHANNEL = "https://conda.anaconda.org/conda-forge"
SUBDIRS = ("linux-64", "linux-aarch64", "win-64")
PACKAGES = ("tensorflow", "jaxlib", "cupy")
COMPANIONS = {"jaxlib": "jax"}
MAX_BYTES = 512 * 1024 * 1024
SOURCE = "conda-forge-repodata"
_CUDA_BUILD = re.compile(r"^cuda(\d{2})(\d+)")  # cuda128py312h..._203 -> 12.8
_CUDA_DEP = re.compile(r"^(?:cuda-version|cuda-nvrtc|cuda-cudart) >=(\d+)\.(\d+)")
_PYTHON_DEP = re.compile(r"^python >=(\d+\.\d+)")
_CUDA_OFFSET = 200  # conda-forge recipes add 200 to the build number of CUDA builds


def read_repodata(where: str, timeout: float = 120.0) -> dict[str, Any]:
    """A repodata document from a file or an https URL."""
    if where.startswith("https://"):
        request = urllib.request.Request(
            where, headers={"User-Agent": "gpuenv refresh_conda_forge"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read(MAX_BYTES + 1)
    else:
        body = Path(where).read_bytes()
    if len(body) > MAX_BYTES:
        raise ValueError(f"{where}: larger than {MAX_BYTES} bytes")
    doc = json.loads(body)
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict):
        raise ValueError(f"{where}: not a repodata document (no info)")
    return doc


def records(doc: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for key in ("packages", "packages.conda"):
        table = doc.get(key) or {}
        yield from ((name, rec) for name, rec in table.items() if isinstance(rec, dict))


def build_cuda(rec: Mapping[str, Any]) -> str | None:
    """The CUDA a build was made with: from its build string (tensorflow, jaxlib), else from the
    CUDA libraries it requires (cupy); None for a CPU build."""
    found = _CUDA_BUILD.match(str(rec.get("build", "")))
    if found:
        return f"{int(found.group(1))}.{found.group(2)}"
    best: tuple[int, int] | None = None
    for dep in rec.get("depends", ()):
        hit = _CUDA_DEP.match(str(dep))
        if hit:
            pair = (int(hit.group(1)), int(hit.group(2)))
            best = pair if best is None or pair > best else best
    return f"{best[0]}.{best[1]}" if best else None


def _python(rec: Mapping[str, Any]) -> str | None:
    for dep in rec.get("depends", ()):
        hit = _PYTHON_DEP.match(str(dep))
        if hit:
            return hit.group(1)
    return None


def rows_from_repodata(
    doc: Mapping[str, Any], packages: Iterable[str] = PACKAGES, today: str | None = None
) -> list[dict[str, Any]]:
    """One row per (package, version, platform, CUDA), Pythons folded into a range."""
    subdir = str(doc["info"].get("subdir", "?"))
    wanted = set(packages)
    groups: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for filename, rec in records(doc):
        name = str(rec.get("name", ""))
        python = _python(rec)
        if name not in wanted or python is None or _prerelease(str(rec.get("version", ""))):
            continue
        cuda = build_cuda(rec)
        key = (name, str(rec["version"]), cuda)
        number = int(rec.get("build_number", 0))
        base = number - _CUDA_OFFSET if cuda and number >= _CUDA_OFFSET else number
        row = groups.setdefault(key, _row(name, str(rec["version"]), subdir, cuda, filename, today))
        row["build"] = min(row["build"], base) if "build" in row else base
        row["_pythons"].add(python)
    out = []
    for row in groups.values():
        pythons = sorted(row.pop("_pythons"), key=lambda v: tuple(int(p) for p in v.split(".")))
        row["python_min"], row["python_max"] = pythons[0], pythons[-1]
        out.append(row)
    return sorted(out, key=lambda r: (r["package"], _vkey(r["version"]), r.get("cuda", "")))


def _row(
    name: str, version: str, subdir: str, cuda: str | None, filename: str, today: str | None
) -> dict[str, Any]:
    row: dict[str, Any] = {"package": name, "version": version, "platform": subdir}
    if cuda:
        row["cuda"] = cuda
    if name != "cupy":  # cupy's CUDA build is chosen by cuda-version, not its build string
        row["build_string"] = f"cuda{cuda.replace('.', '')}*" if cuda else "cpu*"
    if name in COMPANIONS:
        row["companion"] = COMPANIONS[name]
    row.update(
        source=SOURCE,
        locator=f"{subdir} repodata: {filename} (and its other Pythons)",
        verified=today or datetime.date.today().isoformat(),
        status="official",
        _pythons=set(),
    )
    return row


def _prerelease(version: str) -> bool:
    return not re.fullmatch(r"\d+(\.\d+)*", version)


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _identity(row: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (row["package"], row["version"], row["platform"], str(row.get("cuda", "")))


def missing(
    found: list[dict[str, Any]], known: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Builds the channel lists and the knowledge base lacks. (A KB row the current repodata
    lacks is an older build, not an error: current_repodata keeps the newest only.)"""
    have = {_identity(row) for row in known}
    return [row for row in found if _identity(row) not in have]


def describe(row: Mapping[str, Any]) -> str:
    kind = f"CUDA {row['cuda']}" if "cuda" in row else "CPU"
    return f"new: {row['package']} {row['version']} {row['platform']} {kind}"


def toml_rows(rows: Iterable[Mapping[str, Any]]) -> str:
    out = []
    for row in rows:
        lines = ["[[forge_build]]"]
        for key, value in row.items():
            if key.startswith("_"):
                continue
            lines.append(f"{key} = {json.dumps(value) if not isinstance(value, int) else value}")
        lines.append("# sass/ptx: from the feedstock's recipe/build.sh for this CUDA")
        out.append("\n".join(lines))
    return "\n\n".join(out) + ("\n" if out else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repodata", action="append", default=[], metavar="FILE_OR_URL")
    parser.add_argument("--package", action="append", default=[], choices=PACKAGES)
    parser.add_argument("--out", type=Path, help="write the rows here instead of stdout")
    args = parser.parse_args(argv)
    sources = args.repodata or [f"{CHANNEL}/{s}/current_repodata.json" for s in SUBDIRS]
    found: list[dict[str, Any]] = []
    try:
        for where in sources:
            found += rows_from_repodata(read_repodata(where), args.package or PACKAGES)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        print(f"refresh_conda_forge: {exc}", file=sys.stderr)
        return 2
    new = missing(found, default_kb().rows("conda", "forge_build"))
    text = toml_rows(new)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    for row in new:
        print(describe(row), file=sys.stderr)
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
