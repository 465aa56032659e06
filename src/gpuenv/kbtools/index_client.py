"""What a package index says: PEP 691 JSON project pages (PEP 503 HTML as a fallback), PEP
658/714 core-metadata files, wheel names, and the CUDA pins in core metadata. The requests
themselves are http.py's (pip's index URL, pages, byte ranges of wheels); everything here is pure
and tested on recorded responses.
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from gpuenv.kbtools import http

# The HTTP side lives in http.py; its names stay reachable here for the callers.
Fetcher = http.Fetcher
IndexUnavailable = http.IndexUnavailable
Response = http.Response
index_url_from_config = http.index_url_from_config
pip_index_url = http.pip_index_url
urllib_fetch = http.urllib_fetch
urllib_range = http.urllib_range

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2"


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    requires_python: str | None
    yanked: bool
    metadata: bool | None  # core metadata advertised; None: the page does not say
    metadata_sha256: str | None = None
    size: int | None = None  # bytes, when the page says (PEP 700)
    upload_time: str | None = None  # ISO 8601, when the page says (PEP 700)


@dataclass(frozen=True)
class CoreMetadata:
    name: str | None
    version: str | None
    requires_python: str | None
    requires_dist: tuple[str, ...]


# -- project pages ----------------------------------------------------------------------------


def parse_project_page(body: bytes, content_type: str, page_url: str) -> list[IndexFile]:
    """Files of a PEP 691 JSON or PEP 503 HTML project page; a garbled page raises."""
    kind = content_type.split(";")[0].strip().lower()
    if kind.endswith("json") or (not kind.endswith("html") and body.lstrip()[:1] == b"{"):
        return _parse_json_page(body, page_url)
    if kind.endswith("html") or body.lstrip()[:1] == b"<":
        return _parse_html_page(body, page_url)
    raise IndexUnavailable(f"{page_url}: unexpected content type {content_type!r}")


def project_files(base: str, name: str, fetch: Fetcher) -> list[IndexFile] | None:
    """The files of a project on the index at `base` (None: no such project). Any other HTTP
    error, a network failure or a garbled page raises IndexUnavailable."""
    url = f"{base.rstrip('/')}/{canonicalize_name(name)}/"
    answer = fetch(url, JSON_ACCEPT)
    if answer.status == 404:
        return None
    if answer.status != 200:
        raise IndexUnavailable(f"{url}: HTTP {answer.status}")
    return parse_project_page(answer.body, answer.content_type, answer.url or url)


def _parse_json_page(body: bytes, page_url: str) -> list[IndexFile]:
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexUnavailable(f"{page_url}: the JSON page is garbled: {exc}") from None
    entries = data.get("files") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise IndexUnavailable(f"{page_url}: the JSON page has no `files` list")
    advertised = any(
        isinstance(e, dict) and ("core-metadata" in e or "dist-info-metadata" in e) for e in entries
    )
    return [_json_file(number, entry, page_url, advertised) for number, entry in enumerate(entries)]


def _json_file(number: int, entry: Any, page_url: str, advertised: bool) -> IndexFile:
    if not isinstance(entry, dict):
        raise IndexUnavailable(f"{page_url}: file entry {number} is not an object")
    filename, url = entry.get("filename"), entry.get("url")
    if not isinstance(filename, str) or not isinstance(url, str):
        raise IndexUnavailable(f"{page_url}: file entry {number} lacks filename or url")
    requires_python = entry.get("requires-python")
    yanked = entry.get("yanked", False)
    meta = entry.get("core-metadata", entry.get("dist-info-metadata"))
    return IndexFile(
        filename=filename,
        url=urljoin(page_url, url),
        requires_python=requires_python if isinstance(requires_python, str) else None,
        yanked=yanked is True or isinstance(yanked, str),
        metadata=_advertised(meta) if advertised else None,
        metadata_sha256=meta.get("sha256") if isinstance(meta, dict) else None,
        size=_int_or_none(entry.get("size")),
        upload_time=entry.get("upload-time") if isinstance(entry.get("upload-time"), str) else None,
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _advertised(value: Any) -> bool:
    return value is True or isinstance(value, dict) or (isinstance(value, str) and value != "")


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


def _parse_html_page(body: bytes, page_url: str) -> list[IndexFile]:
    parser = _Anchors()
    try:
        parser.feed(body.decode("utf-8"))
        parser.close()
    except UnicodeDecodeError as exc:
        raise IndexUnavailable(f"{page_url}: the HTML page is garbled: {exc}") from None
    keys = ("data-core-metadata", "data-dist-info-metadata")
    advertised = any(k in attrs for attrs, _ in parser.anchors for k in keys)
    files = []
    for attrs, text in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        url = urljoin(page_url, href)
        meta = attrs.get(keys[0], attrs.get(keys[1]))
        files.append(
            IndexFile(
                filename=text or unquote(urlsplit(urldefrag(url)[0]).path.rsplit("/", 1)[-1]),
                url=url,
                requires_python=attrs.get("data-requires-python") or None,
                yanked="data-yanked" in attrs,
                metadata=(meta is not None and meta != "false") if advertised else None,
                metadata_sha256=_sha256_of(meta),
            )
        )
    return files


def _sha256_of(value: str | None) -> str | None:
    if value and value.startswith("sha256="):
        return value.split("=", 1)[1]
    return None


def metadata_url(file: IndexFile) -> str:
    return urldefrag(file.url)[0] + ".metadata"


def check_metadata_hash(file: IndexFile, body: bytes) -> bool:
    return file.metadata_sha256 is None or hashlib.sha256(body).hexdigest() == file.metadata_sha256


# -- core metadata ----------------------------------------------------------------------------


def parse_core_metadata(body: bytes) -> CoreMetadata:
    """The fields refresh needs from a METADATA file (RFC 822 headers)."""
    text = body.decode("utf-8", errors="replace")
    parser = email.parser.Parser(policy=email.policy.compat32)
    message = parser.parsestr(text, headersonly=True)

    def one(name: str) -> str | None:
        value = message.get(name)
        return str(value).strip() if value is not None else None

    requires = tuple(str(v).strip() for v in message.get_all("Requires-Dist") or ())
    return CoreMetadata(one("Name"), one("Version"), one("Requires-Python"), requires)


def marker_environment(platform: str, python: str) -> dict[str, str]:
    """A full PEP 508 environment for one target, e.g. ("linux-x86_64", "3.11")."""
    system, _, machine = platform.partition("-")
    systems = {"linux": ("Linux", "linux", "posix"), "windows": ("Windows", "win32", "nt")}
    platform_system, sys_platform, os_name = systems.get(system, ("Darwin", "darwin", "posix"))
    if system == "windows" and machine == "x86_64":
        machine = "AMD64"
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "os_name": os_name,
        "platform_machine": machine,
        "platform_release": "",
        "platform_system": platform_system,
        "platform_version": "",
        "python_full_version": f"{python}.0",
        "platform_python_implementation": "CPython",
        "python_version": python,
        "sys_platform": sys_platform,
        "extra": "",
    }


def applicable_requirements(
    requires_dist: Iterable[str], environment: Mapping[str, str], extras: Iterable[str] = ()
) -> tuple[list[str], list[str]]:
    """Requires-Dist lines that apply in `environment` with any of `extras` (or none) requested.

    Returns (lines with their markers stripped, problems for lines that do not parse)."""
    chosen: list[str] = []
    problems: list[str] = []
    wanted = ("", *extras)
    for line in requires_dist:
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            problems.append(f"Requires-Dist {line!r} does not parse: {exc}")
            continue
        marker = requirement.marker
        try:
            applies = marker is None or any(
                marker.evaluate({**environment, "extra": extra}) for extra in wanted
            )
        except Exception as exc:  # packaging raises several types for odd markers
            problems.append(f"Requires-Dist {line!r}: marker cannot be evaluated: {exc}")
            continue
        if applies:
            chosen.append(line.split(";", 1)[0].strip())
    return chosen, problems


# -- what a wheel's tags and pins say ----------------------------------------------------------

PLATFORM_ORDER = tuple(["linux-x86_64", "linux-aarch64", "windows-x86_64", "windows-arm64"])
PLATFORM_ORDER += ("macos-arm64", "macos-x86_64", "any")
_SUMMARIZED = ("nvidia-cuda-runtime", "cuda-toolkit", "nvidia-cudnn", "nvidia-nccl")


def platform_key(platform: str) -> tuple[int, str]:
    order = PLATFORM_ORDER
    return (order.index(platform) if platform in order else len(order), platform)


def python_tag_key(tag: str) -> tuple[str, int, int, str]:
    match = re.match(r"^([a-z]+)(\d)(\d*)(.*)$", tag)
    if not match:
        return (tag, 0, 0, "")
    return (match.group(1), int(match.group(2)), int(match.group(3) or 0), match.group(4))


def pinned_version(specifier: SpecifierSet) -> str | None:
    """The version a requirement pins (==, ===), else its lower bound (>=, ~=, >)."""
    for operators in (("==", "==="), (">=", "~=", ">")):
        for spec in sorted(specifier, key=str):
            if spec.operator in operators:
                return spec.version.removesuffix(".*")
    return None


def summarize_pins(lines: Iterable[str]) -> dict[str, Any]:
    """cuda, cudnn, nccl and the nvidia-*/cuda-toolkit lines among applicable Requires-Dist."""
    pins = sorted({line for line in lines if _is_cuda_pin(Requirement(line).name)})
    found: dict[str, str] = {}
    for line in pins:
        requirement = Requirement(line)
        name, version = canonicalize_name(requirement.name), pinned_version(requirement.specifier)
        kind = re.sub(r"-cu\d+$", "", name)
        if version and kind in _SUMMARIZED:
            found.setdefault(kind, version)
    cuda = found.get("nvidia-cuda-runtime") or found.get("cuda-toolkit")
    summary: dict[str, Any] = {"pins": pins} if pins else {}
    if cuda and len(cuda.split(".")) >= 2:
        summary["cuda"] = ".".join(cuda.split(".")[:2])
    for kind, key in (("nvidia-cudnn", "cudnn"), ("nvidia-nccl", "nccl")):
        if kind in found:
            summary[key] = found[kind]
    return summary


def _is_cuda_pin(name: str) -> bool:
    name = canonicalize_name(name)
    return name.startswith("nvidia-") or name == "cuda-toolkit"


# -- wheel file names -------------------------------------------------------------------------


@dataclass(frozen=True)
class Wheel:
    file: IndexFile
    version: Version
    build: int
    python_tags: frozenset[str]
    platforms: frozenset[str]
    python: str  # the Python version markers are evaluated for, e.g. "3.11"
    free_threaded: bool


def normalize_platform(tag: str) -> str:
    """manylinux_2_28_x86_64 -> linux-x86_64, win_amd64 -> windows-x86_64, macosx_11_0_arm64 ->
    macos-arm64; anything unknown is kept as it is."""
    linux = re.match(r"^(?:many|musl)?linux(?:1|2010|2014|_\d+_\d+)?_(.+)$", tag)
    if linux:
        arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(linux.group(1), linux.group(1))
        return f"linux{'-musl' if tag.startswith('musl') else ''}-{arch}"
    windows = {"win_amd64": "windows-x86_64", "win32": "windows-x86", "win_arm64": "windows-arm64"}
    mac = re.match(r"^macosx_\d+_\d+_(arm64|x86_64)$", tag)
    return windows.get(tag) or (f"macos-{mac.group(1)}" if mac else tag)


def _platforms(tag: str) -> set[str]:
    if re.match(r"^macosx_\d+_\d+_universal2?$", tag):
        return {"macos-arm64", "macos-x86_64"}
    return {normalize_platform(tag)}


def python_tag(interpreter: str, abi: str) -> str:
    """cp311/cp311 -> cp311; cp313/cp313t -> cp313t; cp39/abi3 -> cp39-abi3; py3/none -> py3."""
    if abi == "abi3":
        return f"{interpreter}-abi3"
    return abi if abi == f"{interpreter}t" else interpreter


def parse_wheel(file: IndexFile) -> Wheel | None:
    """The version and tags of a wheel file; None for anything that is not a wheel.
    A wheel name that does not parse raises packaging's InvalidWheelFilename."""
    if not file.filename.endswith(".whl"):
        return None
    _name, version, build, tags = parse_wheel_filename(file.filename)
    pythons = frozenset(python_tag(t.interpreter, t.abi) for t in tags)
    platforms: set[str] = set()
    for tag in tags:
        platforms |= _platforms(tag.platform)
    digits = re.match(r"^(?:cp|py|pp)(\d)(\d+)$", min(t.interpreter for t in tags))
    python = f"{digits.group(1)}.{digits.group(2)}" if digits else "3.12"
    free = any(tag.endswith("t") for tag in pythons)
    build_number = build[0] if build else 0
    return Wheel(file, version, build_number, pythons, frozenset(platforms), python, free)
