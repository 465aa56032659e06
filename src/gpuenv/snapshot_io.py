"""Snapshot documents: read a `--from` file back into facts, write one out.

Reading is strict about shape and exact about blame: a malformed file gives one GpuenvError that
names the file and the field (`gpus[1].index: expected an integer`), never a traceback.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from gpuenv.edges.files import decode_text, read_user_file
from gpuenv.errors import GpuenvError
from gpuenv.facts import (
    SNAPSHOT_SCHEMA_VERSION,
    BinaryArchFacts,
    CondaPackageFacts,
    DistributionFacts,
    DriverFacts,
    FrameworkBuild,
    GpuFacts,
    HostFacts,
    JetsonFacts,
    LibraryFacts,
    Observation,
    PythonEnvFacts,
    Snapshot,
    ToolkitFacts,
    missing,
    to_dict,
)

T = TypeVar("T")


class _Bad(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class _Reader:
    """Typed access to one JSON object, knowing its path for error messages."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise _Bad(where, "expected an object")
        self.data = data
        self.where = where

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None or isinstance(value, str):
            return value
        raise _Bad(self._at(key), "expected a string or null")

    def str_(self, key: str) -> str:
        value = self.opt_str(key)
        if value is None:
            raise _Bad(self._at(key), "missing (a string is required)")
        return value

    def opt_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise _Bad(self._at(key), "expected an integer or null")

    def opt_bool(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None or isinstance(value, bool):
            return value
        raise _Bad(self._at(key), "expected true, false or null")

    def str_tuple(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _Bad(self._at(key), "expected a list of strings")
        return tuple(value)

    def str_map(self, key: str) -> dict[str, str]:
        value = self.data.get(key, {})
        if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
            raise _Bad(self._at(key), "expected an object of strings")
        return {str(k): v for k, v in value.items()}

    def child(self, key: str) -> _Reader | None:
        value = self.data.get(key)
        return None if value is None else _Reader(value, self._at(key))

    def items(self, key: str, build: Callable[[_Reader], T]) -> tuple[T, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise _Bad(self._at(key), "expected a list")
        return tuple(build(_Reader(item, f"{self._at(key)}[{n}]")) for n, item in enumerate(value))

    def obs(self, key: str, kind: type | tuple[type, ...] = str) -> Observation[Any]:
        sub = self.child(key)
        if sub is None:
            return missing(key, "not recorded in the snapshot")
        value = sub.data.get("value")
        if value is not None and not isinstance(value, kind):
            raise _Bad(sub._at("value"), f"expected {_kind_name(kind)} or null")
        return Observation(
            value=value,
            source=sub.opt_str("source") or "snapshot",
            raw=sub.opt_str("raw"),
            problem=sub.opt_str("problem"),
        )

    def obs_tuple(self, key: str) -> tuple[Observation[str], ...]:
        return self.items(key, lambda r: _Reader({"o": r.data}, r.where).obs("o"))


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {"str": "a string", "bool": "a boolean"}.get(k.__name__, k.__name__) for k in kinds
    )


def _jetson(r: _Reader) -> Observation[JetsonFacts]:
    sub = r.child("jetson")
    if sub is None or sub.data.get("value") is None:
        return r.obs("jetson", dict)
    value = _Reader(sub.data["value"], sub._at("value"))
    facts = JetsonFacts(
        l4t_release=value.opt_str("l4t_release"),
        model=value.opt_str("model"),
        jetpack=value.opt_str("jetpack"),
    )
    return Observation(facts, sub.opt_str("source") or "snapshot", sub.opt_str("raw"), None)


def _host(r: _Reader) -> HostFacts:
    return HostFacts(
        os=r.obs("os"),
        arch=r.obs("arch"),
        distro=r.obs("distro"),
        kernel=r.obs("kernel"),
        libc=r.obs("libc"),
        wsl=r.obs("wsl", bool),
        container=r.obs("container"),
        jetson=_jetson(r),
        apple_mps=r.obs("apple_mps", bool),
        rocm=r.obs("rocm"),
        env=r.str_map("env"),
    )


def _gpu(r: _Reader) -> GpuFacts:
    index = r.opt_int("index")
    return GpuFacts(
        index=0 if index is None else index,
        name=r.opt_str("name"),
        source=r.opt_str("source") or "snapshot",
        pci_device_id=r.opt_str("pci_device_id"),
        compute_capability=r.opt_str("compute_capability"),
        memory_mib=r.opt_int("memory_mib"),
        mig_mode=r.opt_str("mig_mode"),
        uuid=r.opt_str("uuid"),
    )


def _toolkit(r: _Reader) -> ToolkitFacts:
    return ToolkitFacts(
        toolkit_cuda=r.opt_str("toolkit_cuda"),
        path=r.opt_str("path"),
        source=r.opt_str("source") or "snapshot",
        on_path=bool(r.opt_bool("on_path")),
        routes=r.str_tuple("routes"),
        raw=r.opt_str("raw"),
        problem=r.opt_str("problem"),
    )


def _library(r: _Reader) -> LibraryFacts:
    return LibraryFacts(
        soname=r.str_("soname"),
        path=r.str_("path"),
        origin=r.opt_str("origin") or "unknown",
        version=r.opt_str("version"),
        package=r.opt_str("package"),
        load_rank=r.opt_int("load_rank") or 0,
        problem=r.opt_str("problem"),
    )


def _distribution(r: _Reader) -> DistributionFacts:
    return DistributionFacts(
        name=r.str_("name"),
        version=r.opt_str("version") or "",
        installer=r.opt_str("installer"),
        requires=r.str_tuple("requires"),
        location=r.opt_str("location"),
        direct_url=r.opt_str("direct_url"),
        editable=bool(r.opt_bool("editable")),
        problem=r.opt_str("problem"),
    )


def _framework(r: _Reader) -> FrameworkBuild:
    return FrameworkBuild(
        name=r.str_("name"),
        version=r.opt_str("version"),
        framework_cuda=r.opt_str("framework_cuda"),
        cudnn_version=r.opt_str("cudnn_version"),
        hip_version=r.opt_str("hip_version"),
        variant=r.opt_str("variant"),
        distribution=r.opt_str("distribution"),
        is_gpu_build=r.opt_bool("is_gpu_build"),
        source=r.opt_str("source") or "",
        details=r.str_map("details"),
        problem=r.opt_str("problem"),
    )


def _python_env(r: _Reader) -> PythonEnvFacts:
    return PythonEnvFacts(
        interpreter=r.opt_str("interpreter") or "",
        python_version=r.opt_str("python_version"),
        implementation=r.opt_str("implementation"),
        prefix=r.opt_str("prefix"),
        env_kind=r.opt_str("env_kind"),
        manager=r.opt_str("manager"),
        platform_machine=r.opt_str("platform_machine"),
        sys_platform=r.opt_str("sys_platform"),
        libc=r.opt_str("libc"),
        site_packages=r.str_tuple("site_packages"),
        distributions=r.items("distributions", _distribution),
        frameworks=r.items("frameworks", _framework),
        problems=r.str_tuple("problems"),
        conda_packages=r.items("conda_packages", _conda_package),
    )


def _conda_package(r: _Reader) -> CondaPackageFacts:
    return CondaPackageFacts(
        name=r.str_("name"),
        version=r.opt_str("version"),
        build=r.opt_str("build"),
        channel=r.opt_str("channel"),
        subdir=r.opt_str("subdir"),
        url=r.opt_str("url"),
        problem=r.opt_str("problem"),
    )


def _binary(r: _Reader) -> BinaryArchFacts:
    return BinaryArchFacts(
        path=r.str_("path"),
        package=r.opt_str("package"),
        sass=r.str_tuple("sass"),
        ptx=r.str_tuple("ptx"),
        problem=r.opt_str("problem"),
    )


def snapshot_from_dict(data: Any, name: str = "<snapshot>") -> Snapshot:
    """Build a Snapshot from its JSON form; a malformed document names the file and field."""
    try:
        root = _Reader(data, "")
        version = root.opt_int("schema_version")
        if version is not None and version > SNAPSHOT_SCHEMA_VERSION:
            raise _Bad("schema_version", f"{version} is newer than this gpuenv reads")
        host = root.child("host")
        if host is None:
            raise _Bad("host", "missing (the host facts are required)")
        driver = root.child("driver") or _Reader({}, "driver")
        env = root.child("python_env")
        return Snapshot(
            host=_host(host),
            driver=DriverFacts(
                versions=driver.obs_tuple("versions"),
                max_cuda=driver.obs_tuple("max_cuda"),
                failures=driver.obs_tuple("failures"),
            ),
            gpus=root.items("gpus", _gpu),
            pci_gpus=root.items("pci_gpus", _gpu),
            toolkits=root.items("toolkits", _toolkit),
            libraries=root.items("libraries", _library),
            python_env=_python_env(env) if env else None,
            binaries=root.items("binaries", _binary),
            problems=root.str_tuple("problems"),
            overrides=root.str_tuple("overrides"),
            origin=f"file:{name}",
            redacted=bool(root.opt_bool("redacted")),
            captured_at=root.opt_str("captured_at"),
            gpuenv_version=root.opt_str("gpuenv_version"),
        )
    except _Bad as bad:
        raise GpuenvError(
            "bad-snapshot",
            f"{name}: field {bad.where or '(top)'}: {bad.message}",
            hints=("write one with `gpuenv snapshot -o FILE`; the format is docs/snapshot.md",),
        ) from None


def read_snapshot(path: Path) -> Snapshot:
    """Load a `--from` file: a snapshot document, a doctor/plan --json output that holds one, or
    a pasted report (an issue's text with collect_env, nvidia-smi, nvcc … in it), whose facts
    become a partial snapshot of the reporter's machine.

    Read through the file gateway: a regular file only (a FIFO or /dev/zero is refused at once),
    at most 64 MiB, UTF-8 with or without a byte-order mark or UTF-16 with one (a report may
    also hold a few undecodable bytes)."""
    data = read_user_file(path, "snapshot", code="bad-snapshot")
    try:
        text = decode_text(data, str(path), code="bad-snapshot")
    except GpuenvError:
        if b"\x00" in data[:4096]:
            raise
        text = data.decode("utf-8", "replace")
    if not text.strip() or text.lstrip("\ufeff \t\r\n")[:1] in ("{", "["):
        return _snapshot_from_text(text, path)
    return _report_snapshot(text, path)


def _report_snapshot(text: str, path: Path) -> Snapshot:
    from gpuenv.explain import pasted_snapshot

    snapshot, facts = pasted_snapshot(text)
    if not facts:
        raise GpuenvError(
            "bad-snapshot",
            f"{path}: not a snapshot (not JSON), and no facts of a pasted report were found in it",
            hints=(
                "give a snapshot (`gpuenv snapshot -o FILE`) or a text with the output of "
                "collect_env, nvidia-smi, nvcc --version, conda info …",
            ),
        )
    return dataclasses.replace(snapshot, origin=f"pasted report:{path.name}")


def _snapshot_from_text(text: str, path: Path) -> Snapshot:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GpuenvError(
            "bad-snapshot", f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise GpuenvError("bad-snapshot", f"{path}: JSON nested too deeply") from None
    except ValueError as exc:  # an integer of thousands of digits (Python's conversion limit)
        raise GpuenvError("bad-snapshot", f"{path}: not a snapshot: {exc}"[:300]) from None
    if isinstance(data, Mapping) and "snapshot" in data and "host" not in data:
        data = data["snapshot"]
    return snapshot_from_dict(data, path.name)


def snapshot_json(snapshot: Snapshot) -> str:
    return json.dumps(to_dict(snapshot), indent=2, sort_keys=False, ensure_ascii=False) + "\n"
