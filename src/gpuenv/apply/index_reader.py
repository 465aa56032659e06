"""The estimate's reads of the package indexes, over the network (gpuenv.index), each page read
once. Sizes come from JSON pages where the index gives them, else a HEAD request; a meta-package's
dependencies from its PEP 658 metadata file or, where none is served, its METADATA member read
with a few byte-range requests."""

from __future__ import annotations

from gpuenv.index import http
from gpuenv.index.metadata import CoreMetadata, metadata_url, parse_core_metadata
from gpuenv.index.pages import IndexFile, parse_project_page, project_files
from gpuenv.index.remote_zip import Budget, RemoteZip, ZipUnreadable

_METADATA_BUDGET = 4 * 1024 * 1024


class NetworkReader:
    def __init__(self) -> None:
        self._pages: dict[tuple[str, str], list[IndexFile] | None] = {}

    def files(self, index: str, name: str) -> list[IndexFile] | None:
        key = (index, name)
        if key not in self._pages:
            self._pages[key] = project_files(index, name, http.urllib_fetch)
        return self._pages[key]

    def link_page(self, url: str) -> list[IndexFile]:
        answer = http.urllib_fetch(url, "text/html")
        if answer.status != 200:
            return []
        return parse_project_page(answer.body, answer.content_type or "text/html", answer.url)

    def size(self, url: str) -> int | None:
        return http.urllib_size(url)

    def metadata(self, file: IndexFile) -> CoreMetadata | None:
        if file.metadata:
            answer = http.urllib_fetch(metadata_url(file), "*/*")
            if answer.status == 200:
                return parse_core_metadata(answer.body)
        try:
            budget = Budget(per_request=_METADATA_BUDGET, total=_METADATA_BUDGET)
            archive = RemoteZip(file.url, http.urllib_range, budget)
            archive.open()
            names = archive.find(lambda n: n.endswith(".dist-info/METADATA"))
            return parse_core_metadata(archive.read(names[0])) if names else None
        except (ZipUnreadable, http.IndexUnavailable):
            return None
