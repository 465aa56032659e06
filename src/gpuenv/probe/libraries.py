"""The CUDA user-space libraries the dynamic loader would find, in the order it would take them.

Only known directories are listed, never walked: LD_LIBRARY_PATH, the nvidia wheel folders of each
site-packages (`nvidia/<component>/lib/`, CUDA 13: `nvidia/cu13/lib/`), the conda env's lib/, the
ldconfig cache, then the default directories. `load_rank` numbers the copies of one soname in that
order (0 is taken first). A copy the loader cannot use (a broken link, a directory that cannot be
listed, ldconfig failing) is kept as a fact with `problem` and `load_rank` -1; a problem that
belongs to no library has an empty `soname` and the directory or command as `path`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gpuenv.facts import LibraryFacts
from gpuenv.probe.access import MachineAccess
from gpuenv.probe.toolkit import PathStyle, parse_conda_meta, parse_dist_info_name, path_style

_STEMS = (
    r"libcuda|libcudart|libcublas|libcublasLt|libcudnn(?:_[a-z_]+)?|libnccl|libnvrtc|libnvJitLink"
    r"|libcufft|libcurand|libcusolver|libcusparse|libcupti|libnvToolsExt"
)
_LINUX_NAME = re.compile(rf"^({_STEMS})\.so((?:\.\d+)*)$")
_WINDOWS_STEMS = (
    r"nvcuda|cudart|cublas|cublasLt|cudnn(?:_[a-z_]+?)?|nvrtc|nvJitLink|cufft|curand|cusolver"
    r"|cusparse|cupti|nvToolsExt"
)
_WINDOWS_NAME = re.compile(rf"^({_WINDOWS_STEMS})(?:64)?((?:_[\d.]+)*)\.dll$", re.IGNORECASE)
_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>(.*)$")
# ldconfig -p tags of the 64-bit libraries this machine's processes load
_LDCONFIG_ARCH = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "AArch64", "arm64": "AArch64"}
_LDCONFIG_PATHS = ("/sbin/ldconfig", "/usr/sbin/ldconfig", "/usr/bin/ldconfig")
_MULTIARCH = {
    "x86_64": "x86_64-linux-gnu",
    "aarch64": "aarch64-linux-gnu",
    "arm64": "aarch64-linux-gnu",
}
_CONDA_CUDA_META = re.compile(r"^(cuda-|libcu|libnv|cudnn|nccl|cudatoolkit)", re.IGNORECASE)
# library stem -> wheel component, for wheels whose RECORD does not name the file
_COMPONENTS = {
    "libcudart": "cuda_runtime", "libcublas": "cublas", "libcublasLt": "cublas",
    "libcudnn": "cudnn", "libnccl": "nccl", "libnvrtc": "cuda_nvrtc", "libnvJitLink": "nvjitlink",
    "libcufft": "cufft", "libcurand": "curand", "libcusolver": "cusolver",
    "libcusparse": "cusparse", "libcupti": "cuda_cupti", "libnvToolsExt": "nvtx",
}  # fmt: skip
_BROKEN_LINK = "broken symlink (dangling or a loop)"


@dataclass(frozen=True)
class LibraryName:
    stem: str  # "libcudnn_ops", "cudart"
    version: tuple[str, ...]  # ("9",) for libcudnn.so.9; () for libcuda.so and DLLs


@dataclass(frozen=True)
class LdconfigEntry:
    name: str  # "libcudart.so.12"
    flags: tuple[str, ...]  # ("libc6", "x86-64")
    path: str


@dataclass(frozen=True)
class _Owner:
    package: str
    version: str


@dataclass(frozen=True)
class _Dir:
    path: str
    origin: str
    site: str | None = None  # pip: the site-packages folder
    rel: str | None = None  # pip: "nvidia/cudnn/lib"; conda: "lib"
    prefix: str | None = None  # conda: the env prefix


_LDCONFIG_CACHE = _Dir("ldconfig -p", "ldconfig")


@dataclass(frozen=True)
class _Found:
    fact: LibraryFacts
    real: str  # comparison key of the real file, to count one file reached twice once


# ---- pure parsers -------------------------------------------------------------------------------


def parse_library_name(name: str, windows: bool = False) -> LibraryName | None:
    """A CUDA library file name: 'libcudnn.so.9.1.0' -> LibraryName('libcudnn', ('9', '1', '0'))."""
    match = (_WINDOWS_NAME if windows else _LINUX_NAME).match(name)
    if not match:
        return None
    if windows:
        return LibraryName(match.group(1), ())
    return LibraryName(match.group(1), tuple(p for p in match.group(2).split(".") if p))


def parse_ldconfig(text: str) -> tuple[LdconfigEntry, ...]:
    """Entries of `ldconfig -p`: 'libcudart.so.12 (libc6,x86-64) => /usr/lib/.../libcudart.so.12'"""
    entries = []
    for line in text.splitlines():
        match = _LDCONFIG_LINE.match(line)
        path = match.group(3).strip() if match else ""
        if match and path:
            flags = tuple(f.strip() for f in match.group(2).split(",") if f.strip())
            entries.append(LdconfigEntry(match.group(1), flags, path))
    return tuple(entries)


def parse_record(text: str) -> tuple[str, ...]:
    """The file paths a dist-info RECORD lists, with '/' separators."""
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error:
        return ()
    paths = (row[0].replace("\\", "/") for row in rows if row and row[0].strip())
    return tuple(p for p in paths if "\x00" not in p)


def pick_sonames(
    names: Iterable[str], real_names: Mapping[str, str], windows: bool = False
) -> dict[str, str | None]:
    """The names a loader asks for among one directory's files, each with the version that its
    real file name shows beyond the soname ('libcudnn.so.9' -> '9.1.0'), or None.

    `real_names` maps a name to the base name of its real file (after following links). A real
    file that a shorter-named link points at is not a soname (libcuda.so.535.104.05), and among
    names of one major version the shortest is (libcudart.so.11.0, not libcudart.so.11.8.89).
    """
    parsed = {n: p for n in names if (p := parse_library_name(n, windows))}
    if windows:
        return dict.fromkeys(parsed)
    targets = _link_targets(parsed, real_names)
    groups: dict[tuple[str, str], list[str]] = {}
    for name, lib in parsed.items():
        if _soname_like(name, lib) and name not in targets:
            groups.setdefault((lib.stem, lib.version[0] if lib.version else ""), []).append(name)
    picked: dict[str, str | None] = {}
    for members in groups.values():
        picked.update(_pick_in_group(members, parsed, real_names))
    return picked


def _link_targets(parsed: Mapping[str, LibraryName], real_names: Mapping[str, str]) -> set[str]:
    """Real files that a versioned link with a shorter version points at (libcuda.so.1 ->
    libcuda.so.550.54.14); a dev link (libcudart.so -> libcudart.so.13) does not count."""
    targets = set()
    for name, lib in parsed.items():
        real = real_names.get(name, name)
        target = parsed.get(real)
        if lib.version and target is not None and len(target.version) > len(lib.version):
            targets.add(real)
    return targets


def _pick_in_group(
    members: list[str], parsed: Mapping[str, LibraryName], real_names: Mapping[str, str]
) -> dict[str, str | None]:
    """The shortest names of one library and major version, with the longest version known."""
    shortest = min(len(parsed[m].version) for m in members)
    longest = parsed[max(members, key=lambda m: len(parsed[m].version))]
    picked: dict[str, str | None] = {}
    for name in (m for m in members if len(parsed[m].version) == shortest):
        real = parse_library_name(real_names.get(name, name))
        picked[name] = _longer_version(parsed[name], real) or _longer_version(parsed[name], longest)
    return picked


def _soname_like(name: str, lib: LibraryName) -> bool:
    # unversioned names are link-time names, except libcuda.so, which cuDNN 8 and others dlopen
    return bool(lib.version) or name == "libcuda.so"


def _longer_version(soname: LibraryName, other: LibraryName | None) -> str | None:
    if other is None or other.stem != soname.stem or len(other.version) <= len(soname.version):
        return None
    return ".".join(other.version)


# ---- probing ------------------------------------------------------------------------------------


def probe_libraries(
    machine: MachineAccess,
    site_packages: Sequence[str],
    conda_prefix: str | None,
    timeout: float = 10.0,
) -> tuple[LibraryFacts, ...]:
    """Every copy of every CUDA library the loader could take, ranked per soname."""
    system = machine.system()
    if system not in ("Linux", "Windows"):
        return ()
    paths = path_style(machine)
    owners = _Owners(machine, paths)
    search = _windows_dirs if paths.windows else _linux_dirs
    found: list[_Found] = []
    for step in _unique_dirs(machine, paths, search(machine, paths, site_packages, conda_prefix)):
        if step is _LDCONFIG_CACHE:
            found += _ldconfig_libraries(machine, paths, owners, timeout)
        else:
            found += _scan_dir(machine, paths, step, owners)
    return _rank(found, paths)


def _linux_dirs(
    machine: MachineAccess, paths: PathStyle, sites: Sequence[str], conda_prefix: str | None
) -> list[_Dir]:
    """Where the loader looks, in its order; the ldconfig cache is the step _LDCONFIG_CACHE."""
    before = [_Dir(d, "LD_LIBRARY_PATH") for d in _ld_library_path(machine)]
    before += _pip_dirs(machine, paths, sites, "lib")
    if conda_prefix:
        before.append(
            _Dir(paths.join(conda_prefix, "lib"), "conda", rel="lib", prefix=conda_prefix)
        )
    triplet = _MULTIARCH.get(machine.machine().lower(), "x86_64-linux-gnu")
    defaults = ["/usr/local/cuda/lib64", f"/usr/lib/{triplet}", "/usr/lib64", "/usr/lib/wsl/lib"]
    return [*before, _LDCONFIG_CACHE, *(_Dir(d, _system_origin(d)) for d in defaults)]


def _ld_library_path(machine: MachineAccess) -> list[str]:
    """LD_LIBRARY_PATH's directories as glibc reads them: split at ':' and ';', and an empty
    entry (a leading, trailing or doubled separator, which `export LD_LIBRARY_PATH=/x:$LD_...`
    leaves when it was unset) is the current directory. glibc expands $ORIGIN, $LIB and
    $PLATFORM; those entries are not listed here."""
    value = machine.environ().get("LD_LIBRARY_PATH", "")
    entries = re.split(r"[:;]", value) if value else []
    here = machine.realpath(".") if "" in entries else "."
    return [entry or here for entry in entries if "$" not in entry]


def _windows_dirs(
    machine: MachineAccess, paths: PathStyle, sites: Sequence[str], conda_prefix: str | None
) -> list[_Dir]:
    env = machine.environ()
    dirs = [_Dir(d, "PATH") for d in paths.split_list(env.get("PATH", ""))]
    dirs += _pip_dirs(machine, paths, sites, "bin")
    if conda_prefix:
        rel = "Library/bin"
        dirs.append(
            _Dir(paths.join(conda_prefix, "Library", "bin"), "conda", rel=rel, prefix=conda_prefix)
        )
    cuda_path = env.get("CUDA_PATH", "").strip()
    if cuda_path:
        # CUDA 13 keeps its DLLs in bin\x64
        dirs += [
            _Dir(paths.join(cuda_path, *sub), "CUDA_PATH") for sub in (["bin"], ["bin", "x64"])
        ]
    system_root = env.get("SystemRoot", r"C:\Windows")
    return [*dirs, _Dir(paths.join(system_root, "System32"), "system")]


def _pip_dirs(
    machine: MachineAccess, paths: PathStyle, sites: Sequence[str], leaf: str
) -> list[_Dir]:
    dirs = []
    for site in sites:
        for component in machine.list_dir(paths.join(site, "nvidia")) or []:
            rel = f"nvidia/{component}/{leaf}"
            dirs.append(_Dir(paths.join(site, "nvidia", component, leaf), "pip", site, rel))
    return dirs


def _system_origin(path: str) -> str:
    return "wsl" if path.startswith("/usr/lib/wsl/") else "system"


def _unique_dirs(machine: MachineAccess, paths: PathStyle, dirs: list[_Dir]) -> list[_Dir]:
    """Each real directory once, by its first route."""
    seen: set[str] = set()
    unique = []
    for folder in dirs:
        key = folder.path if folder is _LDCONFIG_CACHE else paths.key(machine.realpath(folder.path))
        if key not in seen:
            seen.add(key)
            unique.append(folder)
    return unique


def _scan_dir(
    machine: MachineAccess, paths: PathStyle, folder: _Dir, owners: _Owners
) -> list[_Found]:
    names = machine.list_dir(folder.path)
    if names is None:
        return _unlisted(machine, paths, folder)
    candidates = [n for n in names if parse_library_name(n, paths.windows)]
    reals = {n: machine.realpath(paths.join(folder.path, n)) for n in candidates}
    real_names = {n: paths.basename(r) for n, r in reals.items()}
    found = []
    for soname, version in pick_sonames(candidates, real_names, paths.windows).items():
        path = paths.join(folder.path, soname)
        if not machine.exists(path):
            found.append(_problem(soname, path, folder.origin, _BROKEN_LINK))
            continue
        owner = owners.find(folder, soname, reals[soname])
        found.append(
            _library(soname, path, folder.origin, version, owner, paths.key(reals[soname]))
        )
    return found


def _unlisted(machine: MachineAccess, paths: PathStyle, folder: _Dir) -> list[_Found]:
    """A directory that could not be listed: missing (no fact), unreadable or a broken link."""
    if machine.exists(folder.path):
        return [_problem("", folder.path, folder.origin, "directory cannot be listed")]
    parent = machine.list_dir(paths.dirname(folder.path)) or []
    if paths.basename(folder.path) in parent:
        return [_problem("", folder.path, folder.origin, _BROKEN_LINK)]
    return []


def _ldconfig_libraries(
    machine: MachineAccess, paths: PathStyle, owners: _Owners, timeout: float
) -> list[_Found]:
    program = next((p for p in _LDCONFIG_PATHS if machine.exists(p)), "ldconfig")
    result = machine.run([program, "-p"], timeout=timeout)
    if not result.ok:
        return [_problem("", program, "ldconfig", result.problem() or "ldconfig -p failed")]
    tag = _LDCONFIG_ARCH.get(machine.machine().lower())
    found = []
    for entry in parse_ldconfig(result.stdout):
        lib = parse_library_name(entry.name)
        if lib is None or not _soname_like(entry.name, lib) or (tag and tag not in entry.flags):
            continue
        origin = "wsl" if entry.path.startswith("/usr/lib/wsl/") else "ldconfig"
        if not machine.exists(entry.path):
            found.append(_problem(entry.name, entry.path, origin, "in the ldconfig cache, missing"))
            continue
        real = machine.realpath(entry.path)
        version = _longer_version(lib, parse_library_name(paths.basename(real)))
        owner = owners.find(_Dir(paths.dirname(entry.path), origin), entry.name, real)
        found.append(_library(entry.name, entry.path, origin, version, owner, paths.key(real)))
    return found


def _library(
    soname: str, path: str, origin: str, version: str | None, owner: _Owner | None, real: str
) -> _Found:
    if owner and (origin in ("pip", "conda") or version is None):
        version = owner.version
    package = owner.package if owner else None
    return _Found(LibraryFacts(soname, path, origin, version, package), real)


def _problem(soname: str, path: str, origin: str, problem: str) -> _Found:
    return _Found(LibraryFacts(soname, path, origin, load_rank=-1, problem=problem), "")


def _rank(found: list[_Found], paths: PathStyle) -> tuple[LibraryFacts, ...]:
    """Number the copies of each soname in search order. One real file reached twice counts
    once, by its first route; a later route may still tell its version (a folder listing shows
    libcudnn.so.9.1.0 where the ldconfig cache names only libcudnn.so.9)."""
    kept: dict[tuple[str, str], int] = {}
    counts: dict[str, int] = {}
    ranked: list[LibraryFacts] = []
    for item in found:
        fact = item.fact
        if fact.problem is not None:
            ranked.append(fact)
            continue
        soname = fact.soname.lower() if paths.windows else fact.soname
        index = kept.get((soname, item.real))
        if index is not None:
            if ranked[index].version is None and fact.version is not None:
                ranked[index] = replace(ranked[index], version=fact.version)
            continue
        kept[(soname, item.real)] = len(ranked)
        counts[soname] = counts.get(soname, -1) + 1
        ranked.append(replace(fact, load_rank=counts[soname]))
    return tuple(ranked)


class _Owners:
    """Which package put a library file there: pip RECORDs, conda-meta, a toolkit's dist-info/."""

    def __init__(self, machine: MachineAccess, paths: PathStyle) -> None:
        self._machine = machine
        self._paths = paths
        self._records: dict[str, tuple[dict[str, _Owner], list[_Owner]]] = {}
        self._conda: dict[str, dict[str, _Owner]] = {}

    def find(self, folder: _Dir, name: str, real: str) -> _Owner | None:
        if folder.origin == "pip" and folder.site and folder.rel:
            return self._pip(folder.site, folder.rel, name)
        if folder.origin == "conda" and folder.prefix and folder.rel:
            return self._conda_owner(folder.prefix).get(f"{folder.rel}/{name}")
        # a toolkit assembled from wheels keeps their dist-info next to lib/ (<root>/dist-info)
        root = self._paths.dirname(self._paths.dirname(real))
        by_path, _ = self._dist_infos(self._paths.join(root, "dist-info"))
        return by_path.get(name)

    def _pip(self, site: str, rel: str, name: str) -> _Owner | None:
        by_path, dists = self._dist_infos(site)
        owner = by_path.get(f"{rel}/{name}")
        if owner:
            return owner
        lib = parse_library_name(name, self._paths.windows)
        stem = lib.stem.split("_")[0] if lib else ""
        wanted = [rel.split("/")[1], _COMPONENTS.get(stem, "")]
        for component in (c for c in wanted if c):
            pattern = re.compile(rf"^nvidia-{re.escape(component.replace('_', '-'))}(-cu\d+)?$")
            match = next((d for d in dists if pattern.match(d.package)), None)
            if match:
                return match
        return None

    def _dist_infos(self, folder: str) -> tuple[dict[str, _Owner], list[_Owner]]:
        """Files of the nvidia-* distributions in `folder` (by RECORD path and by base name)."""
        if folder not in self._records:
            self._records[folder] = self._read_dist_infos(folder)
        return self._records[folder]

    def _read_dist_infos(self, folder: str) -> tuple[dict[str, _Owner], list[_Owner]]:
        by_path: dict[str, _Owner] = {}
        dists = []
        for entry in self._machine.list_dir(folder) or []:
            parsed = parse_dist_info_name(entry)
            if parsed is None or not parsed[0].startswith("nvidia-"):
                continue
            owner = _Owner(*parsed)
            dists.append(owner)
            read = self._machine.read_text(self._paths.join(folder, entry, "RECORD"))
            for path in parse_record(read.text or ""):
                by_path.setdefault(path, owner)
                by_path.setdefault(path.rsplit("/", 1)[-1], owner)
        return by_path, dists

    def _conda_owner(self, prefix: str) -> dict[str, _Owner]:
        if prefix not in self._conda:
            self._conda[prefix] = self._read_conda_meta(prefix)
        return self._conda[prefix]

    def _read_conda_meta(self, prefix: str) -> dict[str, _Owner]:
        meta = self._paths.join(prefix, "conda-meta")
        by_path: dict[str, _Owner] = {}
        for entry in self._machine.list_dir(meta) or []:
            if not (_CONDA_CUDA_META.match(entry) and entry.endswith(".json")):
                continue
            read = self._machine.read_text(self._paths.join(meta, entry))
            package = parse_conda_meta(read.text) if read.text else None
            if package is None:
                continue
            for path in package.files:
                by_path.setdefault(path.replace("\\", "/"), _Owner(package.name, package.version))
        return by_path
