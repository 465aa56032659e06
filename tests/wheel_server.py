"""A real HTTP server on 127.0.0.1 for the wheel-reading tests: serves files from memory, honours
Range requests (or ignores them, per path prefix), redirects, and a PEP 691 project page built
from the wheels it serves. Stops with the test session; nothing leaves the machine."""

from __future__ import annotations

import hashlib
import io
import json
import re
import threading
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class WheelServer:
    """Paths: /files/NAME (Range honoured), /norange/NAME (Range ignored: 200 with everything),
    /redirect/NAME (302 to /files/NAME), /simple/PROJECT/ (a JSON page of the files whose name
    starts with the project's), /files/NAME.metadata where `metadata` has NAME, and /broken/...
    (503 for everything)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.metadata: dict[str, bytes] = {}  # PEP 658 files, by wheel name
        self.upload_times: dict[str, str] = {}
        self.log: list[tuple[str, str]] = []  # (path, Range header)
        self.sent = 0  # body bytes written
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, name: str, how: str = "files") -> str:
        return f"{self.base}/{how}/{name}"

    def page(self, project: str) -> bytes:
        prefix = project.replace("-", "_").lower() + "-"
        entries = []
        for name, data in sorted(self.files.items()):
            if not name.lower().startswith(prefix):
                continue
            entry: dict[str, object] = {
                "filename": name,
                "url": self.url(name),
                "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                "size": len(data),
                "upload-time": self.upload_times.get(name, "2026-01-01T00:00:00Z"),
                "requires-python": ">=3.9",
            }
            if name in self.metadata:
                digest = hashlib.sha256(self.metadata[name]).hexdigest()
                entry["core-metadata"] = {"sha256": digest}
            entries.append(entry)
        document = {"meta": {"api-version": "1.1"}, "name": project, "files": entries}
        return json.dumps(document).encode()


def _handler(server: WheelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            server.log.append((self.path, self.headers.get("Range", "")))
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2:
                return self._send(200, server.page(parts[1]), "application/vnd.pypi.simple.v1+json")
            if parts[0] == "broken":
                return self._send(503, b"", "text/plain")
            if len(parts) != 2:
                return self._send(404, b"", "text/plain")
            how, name = parts
            if how == "redirect":
                self.send_response(302)
                self.send_header("Location", server.url(name))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if name.endswith(".metadata") and name[: -len(".metadata")] in server.metadata:
                return self._send(200, server.metadata[name[: -len(".metadata")]], "text/plain")
            data = server.files.get(name)
            if data is None:
                return self._send(404, b"", "text/plain")
            wanted = _RANGE.match(self.headers.get("Range", ""))
            if how == "norange" or wanted is None:
                return self._send(200, data, "application/octet-stream")
            first, last = wanted.groups()
            if first == "":
                start, end = max(0, len(data) - int(last)), len(data) - 1
            else:
                start, end = int(first), min(int(last or len(data) - 1), len(data) - 1)
            self._send(206, data[start : end + 1], "application/octet-stream", (start, end, data))
            return None

        def _send(
            self,
            status: int,
            body: bytes,
            kind: str,
            span: tuple[int, int, bytes] | None = None,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if span is not None:
                self.send_header("Content-Range", f"bytes {span[0]}-{span[1]}/{len(span[2])}")
            self.end_headers()
            try:
                self.wfile.write(body)
                server.sent += len(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what the cap is for

    return Handler


@contextmanager
def serving() -> Iterator[WheelServer]:
    state = WheelServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def make_wheel(
    members: Mapping[str, bytes], stored: tuple[str, ...] = (), comment: bytes = b""
) -> bytes:
    """A zip archive built with zipfile: members deflated, those in `stored` stored."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            method = zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED
            archive.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), data, method)
        archive.comment = comment
    return buffer.getvalue()


def metadata_text(name: str, version: str, requires: tuple[str, ...] = ()) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += ["Requires-Python: >=3.9", *(f"Requires-Dist: {r}" for r in requires)]
    return ("\n".join(lines) + "\n\nA description.\n").encode()
