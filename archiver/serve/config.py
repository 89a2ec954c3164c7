"""``archiver serve --print-config nginx|caddy``: a configuration that hosts the same files in production.

At scale archives belong on nginx, Caddy or a CDN, not on our server. What matters for gwtar
(formats/serve.md §6): Range on, single and multi-range; the file never compressed (nginx's gzip and
Caddy's encode turn a Range request into a full 200 when the client accepts gzip); its own media type
(``text/html``, or ``x-gwtar``, which browsers sniff as HTML and CDNs do not strip Range from); a cap
on ranges per request; validators (ETag, Last-Modified) and a Cache-Control lifetime. Trees are
plain static files (compression is fine for them). ZIM files need a ZIM reader: the snippet proxies
them to kiwix-serve. Per-member gwtar URLs (``/x.gwtar.html/~/member``) exist only under ``archiver
serve``; the loader falls back to Range requests on the archive itself, which these hosts serve.

Pure apart from reading what the PATHs are (a file, a folder, a ZIM) through
:func:`archiver.serve.sources.mounts_for`'s rules; nothing is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from archiver.errors import UsageError
from archiver.serve.policy import PAGE_HEADERS, Limits, content_headers, host_labels
from archiver.serve.ranges import MAX_RANGES
from archiver.serve.sources import plan_mounts
from archiver.urls import REPORT_NAME, RESERVED_DIR, STATE_NAME

__all__ = ["ARCHIVE_CACHE", "KINDS", "TREE_CACHE", "print_config"]

KINDS: Final = ("nginx", "caddy")
#: Cache-Control for archives: a day, then revalidated by ETag (use "immutable" only when names change
#: whenever contents do).
ARCHIVE_CACHE: Final = "public, max-age=86400"
#: Cache-Control for tree files.
TREE_CACHE: Final = "public, max-age=3600"
_KIWIX_PORT: Final = 8081
#: A tree's private files (archiver.tree.is_private, formats/serve.md §5.1) as a regular expression
#: on the decoded request path after a tree mount's ``/<name>/``, for nginx (PCRE) and Caddy (Go
#: RE2), matched case-insensitively: the capture's state and report with every file named after
#: them, and the ``tmp`` and ``warc`` folders with everything in them. Repeated slashes are
#: allowed, whatever the server merges.
_PRIVATE_TAIL: Final = (
    f"/+{re.escape(RESERVED_DIR)}/+({re.escape(STATE_NAME)}|{re.escape(REPORT_NAME)}|tmp(/|$)|warc(/|$))"
)


def print_config(
    kind: str,
    paths: Sequence[Path | str],
    *,
    gwtar_mime: str = "text/html",
    listen: str = "80",
    server_name: str = "_",
    domain: str = "localhost",
    limits: Limits | None = None,
    allow_live: bool = False,
) -> str:
    """The text of nginx ``server`` blocks (``kind="nginx"``) or a Caddyfile (``"caddy"``) serving
    ``paths`` at the same URLs as ``archiver serve``, with the same isolation (formats/serve.md §5.2):
    one server per mount at ``<label>.<domain>``, the bare host (``domain``, ``127.0.0.1``,
    ``localhost``, and ``server_name`` unless it is ``_``) redirecting browsers there and serving
    other clients inside a CSP sandbox, every other Host name refused with 421; the same headers
    (§5.2–§5.3) and the limits nginx and Caddy have (§5.4). ``listen`` is nginx's listen value
    (``80``, ``127.0.0.1:8080``) or Caddy's address port."""
    if kind not in KINDS:
        raise UsageError(f"unknown configuration kind; use one of {', '.join(KINDS)}", subject=kind)
    plan = plan_mounts(paths)
    labels = host_labels(name for _, name, _ in plan)
    limits = limits or Limits()
    domain = domain.lower().rstrip(".")
    bare = ["127.0.0.1", "localhost", domain] + ([server_name] if server_name not in ("_", "") else [])
    setup = _Setup(gwtar_mime, listen, domain, list(dict.fromkeys(bare)), limits, allow_live)
    if kind == "nginx":
        return _nginx(plan, labels, setup)
    return _caddy(plan, labels, setup)


@dataclass(frozen=True)
class _Setup:
    gwtar_mime: str
    listen: str
    domain: str
    bare: list[str]
    limits: Limits
    allow_live: bool

    @property
    def port(self) -> str:
        return self.listen.rsplit(":", 1)[-1]


def _seconds(value: float) -> str:
    return f"{max(1, round(value * 1000))}ms"


def _abs(path: Path) -> str:
    return os.path.abspath(path)


def _quote_nginx(text: str) -> str:
    if any(c in text for c in " \";{}#'\\$") or not text:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def _pcre_literal(name: str) -> str:
    """``/<name>`` as a regular expression matching the decoded request path's mount prefix."""
    return "/" + re.escape(name)


def _quote_caddy(text: str) -> str:
    """A Caddyfile token: backquoted (no escapes inside) unless it is a plain word."""
    return text if text and not any(c in text for c in ' \t"`{}#') else "`" + text + "`"


def _uri(name: str) -> str:
    from urllib.parse import quote

    return "/" + quote(name, safe="!$&'()*+,;=:@~")


def _kiwix_prefix(path: Path) -> str:
    """The URL prefix kiwix-serve 3.3 (Debian 12) gives a ZIM file: ``/<file name without .zim>/``
    (kiwix-serve 3.5 and later put ``/content`` in front)."""
    stem = path.name[:-4] if path.name.lower().endswith(".zim") else path.name
    return _uri(stem) + "/"


def _nginx_headers(headers: Sequence[tuple[bytes, bytes]], indent: str) -> list[str]:
    # nginx's add_header is not inherited by a location that has add_header of its own: every
    # location repeats them; "always" puts them on error answers too
    return [f'{indent}add_header {n.decode()} "{v.decode()}" always;' for n, v in headers]


def _nginx_common(setup: _Setup) -> list[str]:
    lim = setup.limits
    return [
        f"    listen {setup.listen};",
        "    sendfile on;",
        "    tcp_nopush on;",
        "    etag on;",
        "    # RFC 9110: If-Modified-Since matches any Last-Modified at or before the date.",
        "    if_modified_since before;",
        "    # At most this many ranges per request; more and the whole file is sent.",
        f"    max_ranges {MAX_RANGES};",
        "    # Limits (formats/serve.md §5.4): header time, idle keep-alive time, stall time, header size",
        f"    client_header_timeout {_seconds(lim.header_timeout)};",
        f"    keepalive_timeout {_seconds(lim.keep_alive)};",
        f"    send_timeout {_seconds(lim.send_timeout)};",
        f"    large_client_header_buffers 4 {max(1, lim.max_head // 4 // 1024)}k;",
        "    # A service worker script is never served (formats/serve.md §5.3): it could rewrite the",
        "    # archive's answers. Before any location, as archiver serve answers it.",
        "    if ($http_service_worker) {",
        "        return 403;",
        "    }",
    ]


def _nginx_mount(
    kind: str, name: str, path: Path, headers: Sequence[tuple[bytes, bytes]], redirect: str | None, port: int
) -> list[str]:
    """The locations of one mount. ``redirect``: the mount's origin, where a browser is sent (on the
    bare host); None on the mount's own server."""
    # nginx matches locations against the decoded, normalised path: "/my tree/", not "/my%20tree/";
    # URLs it sends (redirects, proxy_pass) stay percent-encoded
    uri, at = _uri(name), "/" + name
    add = _nginx_headers(headers, "        ")
    go = (
        [
            "        if ($http_sec_fetch_mode) {",
            f"            return 307 {redirect}$request_uri;",
            "        }",
        ]
        if redirect
        else []
    )
    if kind == "gwtar":
        return [
            "    # gwtar archive: Range on, never compressed, served as {mime}.",
            f"    location = {_quote_nginx(at)} {{",
            *go,
            f"        alias {_quote_nginx(_abs(path))};",
            "        types { }",
            "        default_type {mime};",
            "        gzip off;",
            "        gzip_static off;",
            "        ssi off;",
            f'        add_header Cache-Control "{ARCHIVE_CACHE}";',
            *add,
            "    }",
        ]
    if kind == "file":
        return [
            f"    location = {_quote_nginx(at)} {{",
            *go,
            f"        alias {_quote_nginx(_abs(path))};",
            f'        add_header Cache-Control "{ARCHIVE_CACHE}";',
            *add,
            "    }",
        ]
    if kind == "tree":
        inner = _nginx_headers(headers, "            ")
        return [
            "    # canonical tree: static files; dir/ serves dir/index.html.",
            f"    location = {_quote_nginx(at)} {{",
            *go,
            f"        return 301 {_quote_nginx(uri + '/')};",
            "    }",
            f"    location {_quote_nginx(at + '/')} {{",
            *go,
            f"        alias {_quote_nginx(_abs(path) + '/')};",
            "        index index.html;",
            "        charset utf-8;",
            "        disable_symlinks if_not_owner;",
            f'        add_header Cache-Control "{TREE_CACHE}";',
            *add,
            "        gzip on;",
            "        gzip_types text/css text/javascript application/json image/svg+xml;",
            "        # the tree's private files (state, report, tmp/, warc/): never served; first,",
            "        # so no other location below wins. A symlink leading there is not caught here.",
            f"        location ~* {_quote_nginx('^' + _pcre_literal(name) + _PRIVATE_TAIL)} {{",
            "            return 404;",
            "        }",
            "        # gwtar files inside the tree: never compressed, their own type.",
            r"        location ~* \.gwtar\.html$ {",
            "            types { }",
            "            charset off;",
            "            default_type {mime};",
            "            gzip off;",
            f'            add_header Cache-Control "{ARCHIVE_CACHE}";',
            *inner,
            "        }",
            "    }",
        ]
    return [  # zim
        "    # ZIM: nginx cannot read ZIM files; kiwix-serve does (see the command at the end).",
        f"    location = {_quote_nginx(at)} {{",
        *go,
        f"        return 301 {_quote_nginx(uri + '/')};",
        "    }",
        f"    location {_quote_nginx(at + '/')} {{",
        *go,
        f"        proxy_pass http://127.0.0.1:{port}{_kiwix_prefix(path)};",
        "        proxy_http_version 1.1;",
        "        proxy_hide_header Content-Security-Policy;",
        *add,
        "    }",
    ]


def _nginx(plan: list[tuple[str, str, Path]], labels: list[str], setup: _Setup) -> str:
    own = content_headers(allow_live=setup.allow_live)
    sandboxed = content_headers(allow_live=setup.allow_live, sandbox=True)
    mime = _quote_nginx(setup.gwtar_mime)
    out = [
        "# nginx configuration written by `archiver serve --print-config nginx`.",
        "# Put these server blocks inside the http block (which should `include mime.types;`).",
        f"# Each archive has its own origin, http://<name>.{setup.domain}/ (formats/serve.md §5.2): point",
        f"# *.{setup.domain} at this host (browsers resolve *.localhost to loopback by themselves).",
        "# Open connections: at most worker_processes x worker_connections (events block), e.g.",
        f"#   events {{ worker_connections {setup.limits.max_connections}; }}",
        "# Any other Host name: 421 (the first server for this listen address is its default).",
        "server {",
        f"    listen {setup.listen};",
        "    server_name _;",
        "    return 421;",
        "}",
        "# The bare host: browsers are sent to each archive's origin, other clients get the bytes",
        "# inside a CSP sandbox (an opaque origin, no scripts).",
        "server {",
        *_nginx_common(setup),
        f"    server_name {' '.join(_quote_nginx(n) for n in setup.bare)};",
        *_nginx_headers(PAGE_HEADERS, "    "),
        "    location = / {",
        "        return 404;",
        "    }",
    ]
    kiwix: list[str] = []
    ports: list[int] = []
    for kind, _name, path in plan:
        port = _KIWIX_PORT + len(kiwix)
        ports.append(port)
        if kind == "zim":
            kiwix.append(f"#   kiwix-serve --address=127.0.0.1 --port={port} --nosearchbar {_abs(path)}")
    for (kind, name, path), label, port in zip(plan, labels, ports, strict=True):
        origin = f"http://{label}.{setup.domain}:$server_port"
        out += _nginx_mount(kind, name, path, sandboxed, origin, port)
    out.append("}")
    for (kind, name, path), label, port in zip(plan, labels, ports, strict=True):
        href = _uri(name) + ("/" if kind in ("tree", "zim") else "")
        out += [
            f"# {name}: its own origin.",
            "server {",
            *_nginx_common(setup),
            f"    server_name {label}.{setup.domain};",
            *_nginx_headers(own, "    "),
            "    location = / {",
            f"        return 302 {_quote_nginx(href)};",
            "    }",
            "    location / {",
            "        return 404;",
            "    }",
            *_nginx_mount(kind, name, path, own, None, port),
            "}",
        ]
    if kiwix:
        out += ["# Run one kiwix-serve per ZIM file (Debian package kiwix-tools):", *kiwix]
    return "\n".join(out).replace("{mime}", mime) + "\n"


#: A service worker script is never served (formats/serve.md §5.3): 403, before anything else.
_CADDY_NO_WORKER: Final = (
    "    # A service worker script is never served (formats/serve.md §5.3): it could rewrite the",
    "    # archive's answers.",
    "    @service_worker header Service-Worker *",
    '    error @service_worker "service workers are not served" 403',
)


def _caddy_header(headers: Sequence[tuple[bytes, bytes]], indent: str) -> list[str]:
    return [
        f"{indent}header {{",
        *(f"{indent}    {n.decode()} {_quote_caddy(v.decode())}" for n, v in headers),
        f"{indent}}}",
    ]


def _caddy_mount(kind: str, name: str, path: Path, gwtar_mime: str, kiwix_port: int) -> list[str]:
    uri = _uri(name)
    folder, leaf = os.path.dirname(_abs(path)), os.path.basename(_abs(path))
    if kind in ("gwtar", "file"):
        out = [f"    handle {uri} {{", f'        root * "{folder}"', f'        rewrite * "/{leaf}"']
        if kind == "gwtar":
            out.append(f'        header Content-Type "{gwtar_mime}"')
        return [*out, f'        header Cache-Control "{ARCHIVE_CACHE}"', "        file_server", "    }"]
    if kind == "tree":
        return [
            # an exact path matcher written percent-encoded also matched "/name/…" (Caddy 2.6.2):
            # every request redirected to itself; the decoded one matches only "/name"
            f"    redir {_quote_caddy('/' + name)} {uri}/ 301",
            f"    handle_path {uri}/* {{",
            f'        root * "{_abs(path)}"',
            "        # the tree's private files (capture state, _archiver/tmp/): never served",
            f"        @private path_regexp {_quote_caddy('(?i)^' + _PRIVATE_TAIL)}",
            "        respond @private 404",
            f'        header Cache-Control "{TREE_CACHE}"',
            "        @gwtar path *.gwtar.html",
            f'        header @gwtar Content-Type "{gwtar_mime}"',
            "        file_server",
            "    }",
        ]
    return [
        f"    handle_path {uri}/* {{",
        f"        rewrite * {_kiwix_prefix(path).rstrip('/')}{{uri}}",
        f"        reverse_proxy 127.0.0.1:{kiwix_port} {{",
        "            header_down -Content-Security-Policy",
        "        }",
        "    }",
    ]


def _caddy(plan: list[tuple[str, str, Path]], labels: list[str], setup: _Setup) -> str:
    own = content_headers(allow_live=setup.allow_live)
    sandboxed = content_headers(allow_live=setup.allow_live, sandbox=True)
    lim = setup.limits
    port = setup.port
    out = [
        "# Caddyfile written by `archiver serve --print-config caddy`.",
        f"# Each archive has its own origin, http://<name>.{setup.domain}:{port}/ (formats/serve.md §5.2).",
        "{",
        "    servers {",
        "        # limits (formats/serve.md §5.4); Caddy has no cap on open connections",
        f"        timeouts {{\n            read_header {_seconds(lim.header_timeout)}\n"
        f"            idle {_seconds(lim.keep_alive)}\n        }}",
        f"        max_header_size {lim.max_head // 1024}KB",
        "    }",
        "    # the service-worker refusal below comes before every redirect, as in archiver serve",
        "    order error before redir",
        "}",
        "# Any other Host name: 421.",
        f"http://:{port} {{",
        "    respond 421",
        "}",
        "# The bare host: browsers are sent to each archive's origin, other clients get the bytes",
        "# inside a CSP sandbox (an opaque origin, no scripts).",
        ", ".join(f"http://{n}:{port}" for n in setup.bare) + " {",
        *_CADDY_NO_WORKER,
        "    # Compress trees' text, never gwtar archives (compression turns Range requests into 200s).",
        "    @compressible not path *.gwtar.html",
        "    encode @compressible zstd gzip",
        *_caddy_header(sandboxed, "    "),
    ]
    kiwix: list[str] = []
    mounts: list[list[str]] = []
    for (kind, name, path), label in zip(plan, labels, strict=True):
        kiwix_port = _KIWIX_PORT + len(kiwix)
        if kind == "zim":
            kiwix.append(
                f"#   kiwix-serve --address=127.0.0.1 --port={kiwix_port} --nosearchbar {_abs(path)}"
            )
        uri = _uri(name)
        matcher = f"@to_{label.replace('-', '_')}"
        out += [
            f"    {matcher} {{",
            f"        path {uri} {uri}/*",
            "        header Sec-Fetch-Mode *",
            "    }",
            f"    redir {matcher} http://{label}.{setup.domain}:{port}{{uri}} 307",
        ]
        out += _caddy_mount(kind, name, path, setup.gwtar_mime, kiwix_port)
        href = uri + ("/" if kind in ("tree", "zim") else "")
        mounts.append(
            [
                f"# {name}: its own origin.",
                f"http://{label}.{setup.domain}:{port} {{",
                *_CADDY_NO_WORKER,
                "    @compressible not path *.gwtar.html",
                "    encode @compressible zstd gzip",
                *_caddy_header(own, "    "),
                f"    redir / {href} 302",
                *_caddy_mount(kind, name, path, setup.gwtar_mime, kiwix_port),
                "    respond 404",
                "}",
            ]
        )
    out.append("}")
    for block in mounts:
        out += block
    if kiwix:
        out += ["# Run one kiwix-serve per ZIM file (Debian package kiwix-tools):", *kiwix]
    return "\n".join(out) + "\n"
