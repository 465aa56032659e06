"""What an installer says it would do, read from its dry run, and the env it would leave. Pure.

- pip: `pip install --dry-run --report -` prints a JSON report (format version 1) of every
  distribution it would install; anything installed under the same name is replaced;
- uv: `uv pip install --dry-run` lists ` + name==version` and ` - name==version` lines;
- conda, mamba: `install --dry-run --json` gives `actions.LINK` and `actions.UNLINK` records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuenv.errors import GpuenvError
from gpuenv.guard.build import conda_package, critical_reason
from gpuenv.guard.model import Lock, LockedConda, LockedPackage, local_label, normalize


@dataclass(frozen=True)
class Planned:
    """One package the installer would put in (or take out)."""

    name: str
    version: str
    url: str | None = None
    build: str | None = None  # conda
    channel: str | None = None  # conda


@dataclass(frozen=True)
class Preview:
    installer: str  # "pip" | "uv" | "conda"
    install: tuple[Planned, ...] = ()
    remove: tuple[Planned, ...] = ()  # explicit removals (uv, conda); pip replaces by name


def _bad(installer: str, why: str, text: str) -> GpuenvError:
    return GpuenvError(
        "bad-preview",
        f"could not read what {installer} would do: {why}",
        cause=text.strip()[:300] or None,
    )


def _json_object(text: str, installer: str) -> Mapping[str, Any]:
    """The JSON object an installer printed (anything printed before it is skipped)."""
    start = text.find("{")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, max(start, 0))
    except (json.JSONDecodeError, RecursionError):
        raise _bad(installer, "its output is not JSON", text) from None
    if not isinstance(doc, Mapping):
        raise _bad(installer, "its output is not a JSON object", text)
    return doc


def parse_pip_report(text: str) -> Preview:
    """The report `pip install --dry-run --report -` writes to stdout."""
    doc = _json_object(text, "pip")
    if not isinstance(doc.get("install"), list):
        raise _bad("pip", "the report has no install list", text)
    planned = []
    for item in doc["install"]:
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if not isinstance(meta, Mapping):
            raise _bad("pip", "an install entry has no metadata", json.dumps(item)[:300])
        name, version = meta.get("name"), meta.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            raise _bad("pip", "an install entry has no name or version", json.dumps(meta)[:300])
        info = item.get("download_info")
        url = info.get("url") if isinstance(info, Mapping) else None
        planned.append(Planned(name, version, url if isinstance(url, str) else None))
    return Preview("pip", tuple(planned))


_UV_LINE = re.compile(
    r"^\s*(?P<sign>[-+~])\s+(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?"
    r"(?:==|\s+@\s+)(?P<version>\S+)"
)


def parse_uv_dry_run(text: str) -> Preview:
    """`uv pip install --dry-run` (stderr): ` - torch==2.13.0+cpu` / ` + torch==2.12.0`."""
    install: list[Planned] = []
    remove: list[Planned] = []
    for line in text.splitlines():
        found = _UV_LINE.match(line)
        if not found:
            continue
        item = Planned(found.group("name"), found.group("version"))
        (remove if found.group("sign") == "-" else install).append(item)
    if not install and not remove and "would" not in text.lower():
        raise _bad("uv", "its dry run listed no changes and did not say so", text)
    return Preview("uv", tuple(install), tuple(remove))


def parse_conda_dry_run(text: str) -> Preview:
    """`conda install --dry-run --json` (mamba and micromamba write the same keys)."""
    doc = _json_object(text, "conda")
    if doc.get("success") is False or "error" in doc or "exception_name" in doc:
        why = doc.get("message") or doc.get("error") or doc.get("exception_name")
        raise _bad("conda", f"it cannot solve the request: {why}", text)
    actions = doc.get("actions") or {}
    if not isinstance(actions, Mapping):
        raise _bad("conda", "actions is not an object", text)
    return Preview(
        "conda",
        tuple(_conda_records(actions.get("LINK"))),
        tuple(_conda_records(actions.get("UNLINK"))),
    )


def _conda_records(value: Any) -> list[Planned]:
    found = []
    for item in value or ():
        if isinstance(item, str):  # old conda: "channel::name-version-build"
            dist = item.split("::")[-1].rsplit("-", 2)
            if len(dist) == 3:
                found.append(Planned(dist[0], dist[1], build=dist[2]))
            continue
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            build = item.get("build_string", item.get("build"))
            found.append(
                Planned(
                    item["name"],
                    str(item.get("version", "")),
                    url=item.get("url") if isinstance(item.get("url"), str) else None,
                    build=build if isinstance(build, str) else None,
                    channel=item.get("channel") if isinstance(item.get("channel"), str) else None,
                )
            )
    return found


# -- the env the installer would leave ----------------------------------------------------------


def projected(lock: Lock, preview: Preview) -> Lock:
    """`lock` with the preview applied: replaced packages take the new version and label, and
    lose the build facts that belonged to the old files."""
    if preview.installer == "conda":
        return replace(lock, conda=_project_conda(lock.conda, preview))
    packages = {p.key: p for p in lock.packages}
    for item in preview.remove:
        packages.pop(normalize(item.name), None)
    for item in preview.install:
        packages[normalize(item.name)] = _planned_package(packages.get(normalize(item.name)), item)
    return replace(lock, packages=tuple(sorted(packages.values(), key=lambda p: p.key)))


def _planned_package(old: LockedPackage | None, item: Planned) -> LockedPackage:
    if old is not None and old.version == item.version:
        return old
    why = critical_reason(item.name) or (old.why if old is not None else None)
    return LockedPackage(
        name=item.name,
        version=item.version,
        source="url" if item.url and not item.url.startswith("http") else "index",
        url=item.url,
        critical=why is not None,
        why=why,
        variant=local_label(item.version) or _url_variant(item.url),
    )


def _url_variant(url: str | None) -> str | None:
    """The variant index a wheel came from: `.../whl/cu121/torch-...` -> cu121."""
    found = re.search(r"/whl/(?:nightly/)?(cu\d+|cpu|rocm[\d.]+|xpu)/", url or "")
    return found.group(1) if found else None


def _project_conda(conda: Sequence[LockedConda], preview: Preview) -> tuple[LockedConda, ...]:
    packages = {p.key: p for p in conda}
    for item in preview.remove:
        packages.pop(item.name.lower(), None)
    for item in preview.install:
        packages[item.name.lower()] = conda_package(
            item.name, item.version, item.build, item.channel, None, item.url
        )
    return tuple(sorted(packages.values(), key=lambda p: p.key))
