"""Tiny wheels made by a test: stand-ins for the packages of a GPU stack, installed from a local
folder with --no-index, so nothing is downloaded."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    requires: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> Path:
    """A pure-Python wheel `name==version` with `requires` as Requires-Dist."""
    stem = name.replace("-", "_")
    dist = f"{stem}-{version}"
    content = dict(files or {f"{stem}/__init__.py": f"__version__ = {version!r}\n"})
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    content[f"{dist}.dist-info/METADATA"] = "\n".join(meta) + "\n"
    content[f"{dist}.dist-info/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: gpuenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, text in content.items():
        digest = hashlib.sha256(text.encode()).digest()
        encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={encoded},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    content[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in content.items():
            archive.writestr(path, text)
    return wheel


def make_unpackable_wheel(folder: Path, name: str, version: str, requires: Sequence[str]) -> Path:
    """A wheel pip resolves and then refuses to unpack (a member outside the target folder):
    an installer that fails half-way, after it has installed the requirements."""
    wheel = make_wheel(folder, name, version, requires)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("../../outside.txt", "x\n")
    return wheel
