"""CUDA toolkits on the machine: the nvcc on PATH, CUDA_HOME/CUDA_PATH, the usual install
directories, and the active conda env.

One fact per toolkit directory: a directory reached by several routes (the `nvcc` wrapper on PATH,
the /usr/local/cuda symlink, CUDA_HOME) is described once, and `find_toolkits` keeps the routes.
Also home to the small package-metadata parsers (dist-info names, conda-meta JSON) that the
library probe shares.
"""

from __future__ import annotations

import json
import ntpath
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from gpuenv.facts import ToolkitFacts
from gpuenv.parse.nvcc import parse_nvcc_version
from gpuenv.probe.access import MAX_FILE_BYTES, CommandResult, MachineAccess

_VERSION_TXT = re.compile(r"CUDA Version\s+(\d+(?:\.\d+)+)")
_DOTTED = re.compile(r"\d+(?:\.\d+)*")
_DIST_INFO = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._]*?)-([0-9][^-]*)\.dist-info$")
_SHELL_WORD_BREAK = re.compile(r"[\s\"'`;|&<>()]+")
_CUDA_DIR_NAME = re.compile(r"^cuda-\d+(?:\.\d+)*$")
_WINDOWS_DIR_NAME = re.compile(r"^v\d+\.\d+$")
_CUDA_PATH_VAR = re.compile(r"^CUDA_PATH_V\d+_\d+$")
# conda packages that carry a toolkit version, best first: the compiler, the old all-in-one
# toolkit, then the metapackage that pins a CUDA version
_CONDA_TOOLKIT_PACKAGES = ("cuda-nvcc", "cudatoolkit", "cuda-version")
_CONDA_TOOLKIT_FILE = re.compile(r"^(cuda-nvcc|cudatoolkit|cuda-version)-\d")
# what a directory holding bin/nvcc has when it is a toolkit (and not /usr or /usr/local)
_TOOLKIT_EVIDENCE = ("version.json", "version.txt", "dist-info", "nvvm", "targets", "conda-meta")
_WRAPPER_LIMIT = 64 * 1024
_RAW_LIMIT = 2000  # characters of a command's output kept as evidence
_WINDOWS_TOOLKITS = r"NVIDIA GPU Computing Toolkit\CUDA"


@dataclass(frozen=True)
class PathStyle:
    """Path rules of the probed machine, which need not be this one (recorded machines)."""

    windows: bool

    @property
    def list_sep(self) -> str:
        return ";" if self.windows else ":"

    def join(self, *parts: str) -> str:
        return ntpath.join(*parts) if self.windows else posixpath.join(*parts)

    def dirname(self, path: str) -> str:
        return ntpath.dirname(path) if self.windows else posixpath.dirname(path)

    def basename(self, path: str) -> str:
        return ntpath.basename(path) if self.windows else posixpath.basename(path)

    def normpath(self, path: str) -> str:
        return ntpath.normpath(path) if self.windows else posixpath.normpath(path)

    def key(self, path: str) -> str:
        """Comparison key: normalised, and case-folded on Windows."""
        return ntpath.normcase(self.normpath(path)) if self.windows else self.normpath(path)

    def split_list(self, value: str) -> list[str]:
        """A PATH-like variable; empty entries dropped."""
        return [item for item in value.split(self.list_sep) if item.strip()]


def path_style(machine: MachineAccess) -> PathStyle:
    return PathStyle(windows=machine.system() == "Windows")


@dataclass(frozen=True)
class CondaPackage:
    name: str
    version: str
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class FoundToolkit:
    facts: ToolkitFacts
    # how it was reached, first route first: "PATH nvcc /usr/local/bin/nvcc (wrapper for ...)",
    # "CUDA_HOME", "/usr/local/cuda", "CONDA_PREFIX" ...
    routes: tuple[str, ...]


# ---- pure parsers -------------------------------------------------------------------------------


def parse_version_json(text: str) -> str | None:
    """The toolkit release from version.json: {"cuda": {"version": "12.4.1"}, ...}."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cuda = data.get("cuda") if isinstance(data, dict) else None
    version = cuda.get("version") if isinstance(cuda, dict) else None
    if isinstance(version, str) and _DOTTED.fullmatch(version.strip()):
        return version.strip()
    return None


def parse_version_txt(text: str) -> str | None:
    """'11.8.0' from version.txt: 'CUDA Version 11.8.0'."""
    match = _VERSION_TXT.search(text)
    return match.group(1) if match else None


def parse_dist_info_name(name: str) -> tuple[str, str] | None:
    """('nvidia-cudnn-cu12', '9.1.0.70') from 'nvidia_cudnn_cu12-9.1.0.70.dist-info'."""
    match = _DIST_INFO.match(name)
    if not match:
        return None
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), match.group(2)


def parse_conda_meta(text: str) -> CondaPackage | None:
    """Name, version and files of one conda-meta/<name>-<version>-<build>.json."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    name, version = data.get("name"), data.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        return None
    files = data.get("files")
    listed = tuple(f for f in files if isinstance(f, str)) if isinstance(files, list) else ()
    return CondaPackage(name, version, listed)


def parse_wrapper_target(text: str) -> str | None:
    """The nvcc a shell wrapper runs: '#!/bin/sh\\nexec /usr/local/cuda-13.0/bin/nvcc "$@"'."""
    if not text.startswith("#!"):
        return None
    for word in _SHELL_WORD_BREAK.split(text):
        candidate = word.split("=", 1)[-1]  # NVCC=/usr/lib/nvidia-cuda-toolkit/bin/nvcc
        if candidate.startswith("/") and candidate.endswith("/bin/nvcc") and "$" not in candidate:
            return candidate
    return None


# ---- probing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Route:
    root: str  # a toolkit directory, or the nvcc file when its directory is unknown
    route: str  # the whole story: "PATH nvcc /usr/local/bin/nvcc (wrapper for ...)"
    label: str  # the source of a fact without a version: "PATH", "CUDA_HOME", "directory"


@dataclass(frozen=True)
class _PathNvcc:
    route: _Route
    result: CommandResult


@dataclass(frozen=True)
class _Version:
    value: str
    source: str
    raw: str


def probe_toolkits(machine: MachineAccess, timeout: float = 10.0) -> tuple[ToolkitFacts, ...]:
    return tuple(replace(f.facts, routes=f.routes) for f in find_toolkits(machine, timeout))


def find_toolkits(machine: MachineAccess, timeout: float = 10.0) -> tuple[FoundToolkit, ...]:
    """Every toolkit directory found, the one whose nvcc is on PATH first."""
    paths = path_style(machine)
    env = machine.environ()
    nvcc = _nvcc_on_path(machine, paths, env, timeout)
    routes = [nvcc.route] if nvcc else []
    routes += _env_routes(paths, env) + _dir_routes(machine, paths, env)
    routes += _conda_routes(machine, paths, env)
    nvcc_key = _group_key(machine, paths, nvcc.route.root) if nvcc else None
    found = []
    for key, names in _group(machine, paths, routes).items():
        facts = _describe(machine, paths, names[0], nvcc if key == nvcc_key else None, timeout)
        found.append(FoundToolkit(facts, tuple(name.route for name in names)))
    return tuple(found)


def _nvcc_on_path(
    machine: MachineAccess, paths: PathStyle, env: Mapping[str, str], timeout: float
) -> _PathNvcc | None:
    names = ("nvcc.exe", "nvcc.bat", "nvcc") if paths.windows else ("nvcc",)
    nvcc = _which(machine, paths, env.get("PATH", ""), names)
    if nvcc is None:
        return None
    real = machine.realpath(nvcc)
    route = f"PATH nvcc {nvcc}" + (f" -> {real}" if real != nvcc else "")
    target = None if paths.windows else _wrapper_target(machine, real)
    if target:
        route += f" (wrapper for {target})"
        real = machine.realpath(target)
    # conda links $PREFIX/bin/nvcc into targets/<arch>/bin/: its PATH location names the toolkit
    root = _toolkit_root(machine, paths, real) or _toolkit_root(machine, paths, nvcc) or real
    result = machine.run([nvcc, "--version"], timeout=timeout)
    return _PathNvcc(_Route(root, route, "PATH"), result)


def _which(
    machine: MachineAccess, paths: PathStyle, path_var: str, names: Sequence[str]
) -> str | None:
    for folder in paths.split_list(path_var):
        for name in names:
            candidate = paths.join(folder, name)
            if machine.exists(candidate):
                return candidate
    return None


def _wrapper_target(machine: MachineAccess, nvcc: str) -> str | None:
    read = machine.read_text(nvcc, limit=_WRAPPER_LIMIT)
    return parse_wrapper_target(read.text) if read.text else None


def _toolkit_root(machine: MachineAccess, paths: PathStyle, nvcc: str) -> str | None:
    """<root> for <root>/bin/nvcc when <root> looks like a toolkit."""
    bin_dir = paths.dirname(nvcc)
    if paths.basename(bin_dir).lower() != "bin":
        return None
    root = paths.dirname(bin_dir)
    if any(machine.exists(paths.join(root, item)) for item in _TOOLKIT_EVIDENCE):
        return root
    return None


def _env_routes(paths: PathStyle, env: Mapping[str, str]) -> list[_Route]:
    names = ["CUDA_HOME", "CUDA_PATH", *sorted(n for n in env if _CUDA_PATH_VAR.match(n))]
    return [_Route(paths.normpath(env[n].strip()), n, n) for n in names if env.get(n, "").strip()]


def _dir_routes(machine: MachineAccess, paths: PathStyle, env: Mapping[str, str]) -> list[_Route]:
    if paths.windows:
        base = paths.join(env.get("ProgramFiles", r"C:\Program Files"), _WINDOWS_TOOLKITS)
        found = [n for n in machine.list_dir(base) or [] if _WINDOWS_DIR_NAME.match(n)]
        return [_Route(paths.join(base, n), paths.join(base, n), "directory") for n in found]
    versioned = [n for n in machine.list_dir("/usr/local") or [] if _CUDA_DIR_NAME.match(n)]
    candidates = ["/usr/local/cuda", *(f"/usr/local/{n}" for n in versioned), "/opt/cuda"]
    return [_Route(c, c, "directory") for c in candidates if machine.exists(c)]


def _conda_routes(machine: MachineAccess, paths: PathStyle, env: Mapping[str, str]) -> list[_Route]:
    prefix = env.get("CONDA_PREFIX", "").strip()
    if not prefix or not _conda_toolkit_files(machine, paths, prefix):
        return []
    return [_Route(prefix, "CONDA_PREFIX", "CONDA_PREFIX")]


def _conda_toolkit_files(machine: MachineAccess, paths: PathStyle, prefix: str) -> list[str]:
    names = machine.list_dir(paths.join(prefix, "conda-meta")) or []
    return [n for n in names if _CONDA_TOOLKIT_FILE.match(n) and n.endswith(".json")]


def _group_key(machine: MachineAccess, paths: PathStyle, root: str) -> str:
    return paths.key(machine.realpath(root))


def _group(
    machine: MachineAccess, paths: PathStyle, routes: list[_Route]
) -> dict[str, list[_Route]]:
    """Routes by the real directory they reach, in first-seen order."""
    groups: dict[str, list[_Route]] = {}
    for route in routes:
        groups.setdefault(_group_key(machine, paths, route.root), []).append(route)
    return groups


def _describe(
    machine: MachineAccess,
    paths: PathStyle,
    first: _Route,
    nvcc: _PathNvcc | None,
    timeout: float,
) -> ToolkitFacts:
    root = machine.realpath(first.root)
    if nvcc is not None:
        return _from_path_nvcc(machine, paths, root, nvcc)
    if not machine.exists(root):  # named as given: a link loop resolves to nonsense
        return ToolkitFacts(
            None, first.root, first.label, problem=f"{first.route}: no such directory"
        )
    version, notes = _read_version(machine, paths, root, timeout)
    if version is None:
        problem = "; ".join(notes) or "no version.json, version.txt, dist-info, conda-meta or nvcc"
        return ToolkitFacts(None, root, first.label, problem=problem)
    return ToolkitFacts(version.value, root, version.source, raw=version.raw)


def _from_path_nvcc(
    machine: MachineAccess, paths: PathStyle, root: str, nvcc: _PathNvcc
) -> ToolkitFacts:
    result = nvcc.result
    text = (result.stdout + "\n" + result.stderr).strip()[:_RAW_LIMIT]
    version = parse_nvcc_version(text) if result.ok else None
    if version:
        return ToolkitFacts(version, root, "nvcc", on_path=True, raw=text)
    problem = result.problem() or "nvcc --version printed no version"
    fallback, _ = _read_version(machine, paths, root, timeout=0.0, run_nvcc=False)
    if fallback is None:
        return ToolkitFacts(None, root, "nvcc", on_path=True, raw=text or None, problem=problem)
    return ToolkitFacts(
        fallback.value, root, fallback.source, on_path=True, raw=fallback.raw, problem=problem
    )


def _read_version(
    machine: MachineAccess, paths: PathStyle, root: str, timeout: float, run_nvcc: bool = True
) -> tuple[_Version | None, list[str]]:
    """The toolkit version from its files, best source first, and notes on files that failed."""
    notes: list[str] = []
    for reader in (_version_json, _version_txt, _dist_info_version, _conda_version):
        version = reader(machine, paths, root, notes)
        if version:
            return version, notes
    if run_nvcc:
        return _own_nvcc_version(machine, paths, root, timeout, notes), notes
    return None, notes


def _version_file(
    machine: MachineAccess,
    path: str,
    parse: Callable[[str], str | None],
    empty_note: str,
    notes: list[str],
    limit: int = MAX_FILE_BYTES,
) -> _Version | None:
    """A toolkit's own version file: its version, or a note on why it gave none."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    read = machine.read_text(path, limit=limit)
    if read.text is None:
        if read.problem != "not found":
            notes.append(f"{name}: {read.problem}")
        return None
    version = parse(read.text)
    if version is None:
        notes.append(f"{name}: {empty_note}")
        return None
    return _Version(version, name, read.text.strip()[:2000])


def _version_json(
    machine: MachineAccess, paths: PathStyle, root: str, notes: list[str]
) -> _Version | None:
    path = paths.join(root, "version.json")
    return _version_file(machine, path, parse_version_json, "no cuda version in it", notes)


def _version_txt(
    machine: MachineAccess, paths: PathStyle, root: str, notes: list[str]
) -> _Version | None:
    path = paths.join(root, "version.txt")
    empty = "no 'CUDA Version' in it"
    return _version_file(machine, path, parse_version_txt, empty, notes, limit=4096)


def _dist_info_version(
    machine: MachineAccess, paths: PathStyle, root: str, notes: list[str]
) -> _Version | None:
    """<root>/dist-info/nvidia_cuda_nvcc-13.0.88.dist-info (toolkits assembled from wheels)."""
    dists = [parse_dist_info_name(n) for n in machine.list_dir(paths.join(root, "dist-info")) or []]
    by_name = {d[0]: d[1] for d in dists if d}
    for name in ("nvidia-cuda-nvcc", "nvidia-cuda-runtime"):
        if name in by_name:
            return _Version(by_name[name], "dist-info", f"{name} {by_name[name]}")
    return None


def _conda_version(
    machine: MachineAccess, paths: PathStyle, root: str, notes: list[str]
) -> _Version | None:
    packages: dict[str, tuple[str, str]] = {}
    for name in _conda_toolkit_files(machine, paths, root):
        read = machine.read_text(paths.join(root, "conda-meta", name))
        package = parse_conda_meta(read.text) if read.text else None
        if package is None:
            notes.append(f"conda-meta/{name}: {read.problem or 'not conda package metadata'}")
            continue
        packages[package.name] = (package.version, f"conda-meta/{name}")
    for name in _CONDA_TOOLKIT_PACKAGES:
        if name in packages:
            version, file = packages[name]
            return _Version(version, "conda-meta", f"{name} {version} ({file})")
    return None


def _own_nvcc_version(
    machine: MachineAccess, paths: PathStyle, root: str, timeout: float, notes: list[str]
) -> _Version | None:
    """Run <root>/bin/nvcc when no file names the version."""
    nvcc = paths.join(root, "bin", "nvcc.exe" if paths.windows else "nvcc")
    if not machine.exists(nvcc):
        return None
    result = machine.run([nvcc, "--version"], timeout=timeout)
    version = parse_nvcc_version(result.stdout) if result.ok else None
    if version is None:
        notes.append(result.problem() or "nvcc --version printed no version")
        return None
    return _Version(version, "nvcc", result.stdout.strip()[:_RAW_LIMIT])
