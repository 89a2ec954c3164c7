"""A small hostile web server on 127.0.0.1 for the conditional re-fetch tests: it sends whatever
validator bytes it is told to, answers 304 as it is told to (to every request, or whenever the
ETag matches, even after the page changed) and logs every request's headers."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Page:
    body: bytes
    etag: bytes | None = None  # raw header value bytes, sent as they are
    last_modified: bytes | None = None
    media: str = "text/html; charset=utf-8"


@dataclass
class Site:
    pages: dict[str, Page] = field(default_factory=dict)
    #: "always": 304 to every request; "etag": 304 when If-None-Match names the page's ETag (a
    #: server whose ETag does not change when the page does); "never": no 304 at all
    not_modified: str = "etag"
    log: list[tuple[str, dict[str, str]]] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        site: Site = self.server.site
        site.log.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        page = site.pages.get(self.path)
        tag = self.headers.get("If-None-Match")
        if site.not_modified == "always" or (
            site.not_modified == "etag" and page is not None and page.etag is not None
            and tag is not None and tag.encode("latin-1") == page.etag
        ):  # fmt: skip
            self._head(304, page, 0)
            return
        if page is None:
            self._head(404, None, 9)
            self.wfile.write(b"not found")
            return
        self._head(200, page, len(page.body))
        self.wfile.write(page.body)

    def _head(self, status: int, page: Page | None, length: int) -> None:
        lines = [f"HTTP/1.1 {status} X\r\n".encode(), b"Connection: close\r\n"]
        if page is not None:
            lines.append(f"Content-Type: {page.media}\r\n".encode())
            if page.etag is not None:
                lines.append(b"ETag: " + page.etag + b"\r\n")
            if page.last_modified is not None:
                lines.append(b"Last-Modified: " + page.last_modified + b"\r\n")
        if status != 304:
            lines.append(f"Content-Length: {length}\r\n".encode())
        lines.append(b"\r\n")
        self.wfile.write(b"".join(lines))
        self.wfile.flush()


class Server:
    """``with Server(site) as url:`` serves ``site`` on a free loopback port."""

    def __init__(self, site: Site) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.site = site  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
