"""The least work a Python capture of a static site can do: a floor to read ``archiver capture`` against.

    python tools/capture_floor.py http://127.0.0.1:PORT/ OUT_DIR

A breadth-first crawl of one origin over one blocking HTTP/1.1 keep-alive connection, and per URL only
what no capture can leave out: send the request, read the response (``Content-Length`` bodies only),
parse an HTML page with the same HTML5 parser archiver uses (selectolax/Lexbor), take ``href``/``src``
from ``<a>``, ``<link>`` and ``<img>``, queue same-origin URLs, point those attributes at local paths,
serialise, write the file atomically (temporary file + rename) and commit one SQLite (WAL) row. Nothing
else: no robots.txt, redirects, retries, timeouts, address guard, scope rules, CSS parsing, srcset,
script stripping, charset handling, manifest, hashing or progress. Stylesheets are searched for ``url()``
with a regular expression (not parsed) and stored as they are.

It exists so that ``tools/bench_capture.py`` can show how much of the gap to ``wget`` is Python's own
floor and how much is archiver's. It is a measuring instrument, not a tool: it handles exactly the
generated benchmark site and stops with an error on anything it does not understand.
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import sys
from collections import deque
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser

_REFS = (("a", "href"), ("link", "href"), ("img", "src"))
_CSS_URL = re.compile(rb"url\(\s*['\"]?([^'\")]+)")


def _local(path: str) -> str:
    """A URL path's file: pages at ``…/index.html`` for ``/``, everything else as it is."""
    path = path.lstrip("/")
    return path + "index.html" if path == "" or path.endswith("/") else path


def _relative(src: str, dst: str) -> str:
    return os.path.relpath(dst, os.path.dirname(src) or ".")


def _queue(seed: str, netloc: str, base: str, ref: str, seen: set[str], queue: deque[str]) -> str | None:
    """Queue ``ref`` (relative to the page at ``base``) if it is on the seed's origin and new; its path."""
    target = urlsplit(urljoin(seed + base.lstrip("/"), ref))
    if target.netloc != netloc:
        return None
    if target.path not in seen:
        seen.add(target.path)
        queue.append(target.path)
    return target.path


def crawl(seed: str, out: str) -> int:
    origin = urlsplit(seed)
    host, port = origin.hostname or "127.0.0.1", origin.port or 80
    conn = socket.create_connection((host, port))
    stream = conn.makefile("rb")
    os.makedirs(out, exist_ok=True)
    db = sqlite3.connect(os.path.join(out, "floor.sqlite"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE url (path TEXT PRIMARY KEY, size INTEGER)")
    seen = {origin.path or "/"}
    queue = deque(seen)
    folders: set[str] = set()
    done = 0
    while queue:
        path = queue.popleft()
        request = f"GET {path} HTTP/1.1\r\nHost: {origin.netloc}\r\nUser-Agent: capture-floor\r\n\r\n"
        conn.sendall(request.encode("ascii"))
        status = stream.readline()
        length = None
        while (line := stream.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise SystemExit(f"{path}: no Content-Length ({status!r})")
        body = stream.read(length)
        local = _local(path)
        if status.split(b" ", 2)[1:2] == [b"200"] and local.endswith(".html"):
            tree = LexborHTMLParser(body)
            for tag, attr in _REFS:
                for node in tree.css(f"{tag}[{attr}]"):
                    target = _queue(seed, origin.netloc, path, node.attributes[attr] or "", seen, queue)
                    if target is not None:
                        node.attrs[attr] = _relative(local, _local(target))
            body = (tree.html or "").encode("utf-8")
        elif local.endswith(".css"):
            for ref in _CSS_URL.findall(body):
                _queue(seed, origin.netloc, path, ref.decode("utf-8", "replace"), seen, queue)
        target_file = os.path.join(out, local)
        folder = os.path.dirname(target_file)
        if folder not in folders:
            os.makedirs(folder, exist_ok=True)
            folders.add(folder)
        tmp = os.path.join(out, "floor.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            os.write(fd, body)
        finally:
            os.close(fd)
        os.replace(tmp, target_file)
        db.execute("BEGIN")
        db.execute("INSERT INTO url VALUES (?, ?)", (path, len(body)))
        db.execute("COMMIT")
        done += 1
    conn.close()
    return done


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit(__doc__.strip().splitlines()[2].strip())
    print(crawl(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
