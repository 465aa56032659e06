"""The lock as a TOML file (docs/guard.md): written by `lock_text`, read by `parse_lock`. Pure.

Reading is strict where it matters (a schema version this gpuenv knows, a name and version for
every package) and says which entry is wrong; unknown keys are ignored so that a newer gpuenv
can add facts without breaking an older one.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from gpuenv.errors import GpuenvError
from gpuenv.guard.model import (
    LOCK_SCHEMA_VERSION,
    SOURCES,
    Lock,
    LockedConda,
    LockedGpu,
    LockedPackage,
    LockEnv,
    LockMachine,
)
from gpuenv.kb.toml_writer import toml_pair

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10
    import tomli as tomllib

HEADER = (
    "gpuenv lock: the packages of one Python environment as they were when it worked.",
    "Written by `gpuenv lock`; read by `gpuenv pin`, `guard`, `diff` and `restore`.",
    "Format: docs/guard.md. GPU-critical packages carry `critical = true`.",
)


def lock_text(lock: Lock) -> str:
    parts = [f"# {line}" for line in HEADER]
    parts += [toml_pair("schema_version", lock.schema_version)]
    parts += _pairs({"gpuenv_version": lock.gpuenv_version, "created_at": lock.created_at})
    parts += ["", "[env]", *_pairs(_row(lock.env))]
    machine = _row(lock.machine, skip=("gpus",))
    parts += ["", "[machine]", *_pairs(machine)]
    for gpu in lock.machine.gpus:
        parts += ["", "[[machine.gpus]]", *_pairs(_row(gpu))]
    for package in lock.packages:
        parts += ["", "[[packages]]", *_pairs(_row(package))]
    for conda in lock.conda:
        parts += ["", "[[conda]]", *_pairs(_row(conda))]
    return "\n".join(parts) + "\n"


def _row(item: object, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    row = {}
    for f in fields(item):  # type: ignore[arg-type]
        value = getattr(item, f.name)
        if f.name in skip or value is None or value == () or (f.name == "critical" and not value):
            continue
        row[f.name] = list(value) if isinstance(value, tuple) else value
    return row


def _pairs(row: Mapping[str, Any]) -> list[str]:
    return [toml_pair(key, value) for key, value in row.items() if value is not None]


# -- reading ----------------------------------------------------------------------------------


class _Bad(Exception):
    pass


def parse_lock(text: str, name: str = "gpuenv.lock") -> Lock:
    """The lock in `text`; a GpuenvError (`bad-lock`) naming the file and the entry otherwise."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuenvError(
            "bad-lock",
            f"{name} is not a gpuenv lock: not valid TOML ({exc})",
            hints=("write a new one with `gpuenv lock` in the env that works",),
        ) from None
    try:
        return _lock(doc)
    except _Bad as exc:
        raise GpuenvError(
            "bad-lock",
            f"{name} is not a usable gpuenv lock: {exc}",
            hints=("write a new one with `gpuenv lock` in the env that works",),
        ) from None


def _lock(doc: Mapping[str, Any]) -> Lock:
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _Bad("schema_version is missing (is this a gpuenv lock?)")
    if version > LOCK_SCHEMA_VERSION:
        raise _Bad(
            f"schema_version {version} is newer than this gpuenv reads ({LOCK_SCHEMA_VERSION})"
        )
    env = _table(doc, "env")
    machine = _table(doc, "machine", required=False)
    packages = tuple(_package(row, i) for i, row in enumerate(_tables(doc, "packages"), start=1))
    return Lock(
        env=LockEnv(
            python=_str(env, "python", "[env]", required=True) or "",
            prefix=_str(env, "prefix", "[env]"),
            kind=_str(env, "kind", "[env]"),
            manager=_str(env, "manager", "[env]"),
            python_version=_str(env, "python_version", "[env]"),
            platform=_str(env, "platform", "[env]"),
        ),
        machine=LockMachine(
            os=_str(machine, "os", "[machine]"),
            arch=_str(machine, "arch", "[machine]"),
            driver=_str(machine, "driver", "[machine]"),
            driver_max_cuda=_str(machine, "driver_max_cuda", "[machine]"),
            gpus=tuple(
                LockedGpu(
                    _str(row, "name", "[[machine.gpus]]"),
                    _str(row, "compute_capability", "[[machine.gpus]]"),
                )
                for row in _tables(machine, "gpus")
            ),
        ),
        packages=packages,
        conda=tuple(_conda(row, i) for i, row in enumerate(_tables(doc, "conda"), start=1)),
        created_at=_str(doc, "created_at", "the top"),
        gpuenv_version=_str(doc, "gpuenv_version", "the top"),
        schema_version=version,
    )


def _table(doc: Mapping[str, Any], key: str, required: bool = True) -> Mapping[str, Any]:
    value = doc.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise _Bad(f"[{key}] is missing" if value is None else f"{key} is not a table")
    return value


def _tables(doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise _Bad(f"{key} is not an array of tables ([[{key}]])")
    return value


def _str(row: Mapping[str, Any], key: str, where: str, required: bool = False) -> str | None:
    value = row.get(key)
    if value is None:
        if required:
            raise _Bad(f"{where} has no {key}")
        return None
    if not isinstance(value, str):
        raise _Bad(f"{key} in {where} is {type(value).__name__}, expected a string")
    return value


def _strs(row: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad(f"{key} in {where} is not a list of strings")
    return tuple(value)


def _bool(row: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = row.get(key)
    if value is not None and not isinstance(value, bool):
        raise _Bad(f"{key} in {where} is {type(value).__name__}, expected true or false")
    return value


def _package(row: Mapping[str, Any], number: int) -> LockedPackage:
    name = row.get("name")
    where = f"package {name!r}" if isinstance(name, str) else f"[[packages]] number {number}"
    source = _str(row, "source", where) or "index"
    if source not in SOURCES:
        raise _Bad(f"source {source!r} in {where} is not one of {', '.join(SOURCES)}")
    return LockedPackage(
        name=_str(row, "name", where, required=True) or "",
        version=_str(row, "version", where, required=True) or "",
        installer=_str(row, "installer", where),
        source=source,
        url=_str(row, "url", where),
        critical=_bool(row, "critical", where) is True,
        why=_str(row, "why", where),
        variant=_str(row, "variant", where),
        cuda=_str(row, "cuda", where),
        cudnn=_str(row, "cudnn", where),
        gpu_build=_bool(row, "gpu_build", where),
        sass=_strs(row, "sass", where),
        ptx=_strs(row, "ptx", where),
    )


def _conda(row: Mapping[str, Any], number: int) -> LockedConda:
    name = row.get("name")
    where = f"conda package {name!r}" if isinstance(name, str) else f"[[conda]] number {number}"
    return LockedConda(
        name=_str(row, "name", where, required=True) or "",
        version=_str(row, "version", where, required=True) or "",
        build=_str(row, "build", where),
        channel=_str(row, "channel", where),
        subdir=_str(row, "subdir", where),
        url=_str(row, "url", where),
        critical=_bool(row, "critical", where) is True,
        why=_str(row, "why", where),
    )
