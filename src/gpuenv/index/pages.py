"""A package index's project pages (PEP 691 JSON, PEP 503 HTML) and wheel file names: which files
a release has, their sizes and upload times where the page says (PEP 700), and which Python and
platform each wheel is for. Pure: bytes in, data out."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from gpuenv.index.http import Fetcher, IndexUnavailable

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


PLATFORM_ORDER = tuple(["linux-x86_64", "linux-aarch64", "windows-x86_64", "windows-arm64"])
PLATFORM_ORDER += ("macos-arm64", "macos-x86_64", "any")


def platform_key(platform: str) -> tuple[int, str]:
    order = PLATFORM_ORDER
    return (order.index(platform) if platform in order else len(order), platform)


def python_tag_key(tag: str) -> tuple[str, int, int, str]:
    match = re.match(r"^([a-z]+)(\d)(\d*)(.*)$", tag)
    if not match:
        return (tag, 0, 0, "")
    return (match.group(1), int(match.group(2)), int(match.group(3) or 0), match.group(4))


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


# macOS's multi-architecture binary formats, by the architectures wheels.toml names
_MAC_FAT = {
    "universal2": ("arm64", "x86_64"),
    "universal": ("x86_64",),  # i386, ppc and x86_64: from before Apple silicon
    "intel": ("x86_64",),  # i386 and x86_64
    "fat3": ("x86_64",),  # i386, ppc and x86_64
    "fat64": ("x86_64",),  # ppc64 and x86_64
}


def _platforms(tag: str) -> set[str]:
    fat = re.match(r"^macosx_\d+_\d+_(\w+)$", tag)
    if fat and fat.group(1) in _MAC_FAT:
        return {f"macos-{arch}" for arch in _MAC_FAT[fat.group(1)]}
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
