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
from pathlib import Path
from typing import Final

from archiver.errors import UsageError
from archiver.serve.ranges import MAX_RANGES
from archiver.serve.sources import plan_mounts
from archiver.urls import RESERVED_DIR, STATE_NAME

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
#: RE2), matched case-insensitively: the capture's state with every file named after it, and the
#: ``tmp`` folder with everything in it. Repeated slashes are allowed, whatever the server merges.
_PRIVATE_TAIL: Final = f"/+{re.escape(RESERVED_DIR)}/+({re.escape(STATE_NAME)}|tmp(/|$))"


def print_config(
    kind: str,
    paths: Sequence[Path | str],
    *,
    gwtar_mime: str = "text/html",
    listen: str = "80",
    server_name: str = "_",
) -> str:
    """The text of an nginx ``server`` block (``kind="nginx"``) or a Caddyfile site (``"caddy"``)
    serving ``paths`` at the same URLs as ``archiver serve``. ``listen`` is nginx's listen value
    (``80``, ``127.0.0.1:8080``) or Caddy's address port."""
    if kind not in KINDS:
        raise UsageError(f"unknown configuration kind; use one of {', '.join(KINDS)}", subject=kind)
    plan = plan_mounts(paths)
    if kind == "nginx":
        return _nginx(plan, gwtar_mime, listen, server_name)
    return _caddy(plan, gwtar_mime, listen, server_name)


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


def _nginx(plan: list[tuple[str, str, Path]], gwtar_mime: str, listen: str, server_name: str) -> str:
    out = [
        "# nginx configuration written by `archiver serve --print-config nginx`.",
        "# Put this server block inside the http block (which should `include mime.types;`).",
        "server {",
        f"    listen {listen};",
        f"    server_name {server_name};",
        "    sendfile on;",
        "    tcp_nopush on;",
        "    etag on;",
        "    # RFC 9110: If-Modified-Since matches any Last-Modified at or before the date.",
        "    if_modified_since before;",
        "    # At most this many ranges per request; more and the whole file is sent.",
        f"    max_ranges {MAX_RANGES};",
        "    location = / {",
        "        return 404;",
        "    }",
    ]
    kiwix: list[str] = []
    for kind, name, path in plan:
        # nginx matches locations against the decoded, normalised path: "/my tree/", not "/my%20tree/";
        # URLs it sends (redirects, proxy_pass) stay percent-encoded
        uri, at = _uri(name), "/" + name
        if kind == "gwtar":
            out += [
                f"    # gwtar archive: Range on, never compressed, served as {gwtar_mime}.",
                f"    location = {_quote_nginx(at)} {{",
                f"        alias {_quote_nginx(_abs(path))};",
                "        types { }",
                f"        default_type {_quote_nginx(gwtar_mime)};",
                "        gzip off;",
                "        gzip_static off;",
                "        ssi off;",
                f'        add_header Cache-Control "{ARCHIVE_CACHE}";',
                "    }",
            ]
        elif kind == "file":
            out += [
                f"    location = {_quote_nginx(at)} {{",
                f"        alias {_quote_nginx(_abs(path))};",
                f'        add_header Cache-Control "{ARCHIVE_CACHE}";',
                "    }",
            ]
        elif kind == "tree":
            out += [
                "    # canonical tree: static files; dir/ serves dir/index.html.",
                f"    location = {_quote_nginx(at)} {{",
                f"        return 301 {_quote_nginx(uri + '/')};",
                "    }",
                f"    location {_quote_nginx(at + '/')} {{",
                f"        alias {_quote_nginx(_abs(path) + '/')};",
                "        index index.html;",
                "        charset utf-8;",
                "        disable_symlinks if_not_owner;",
                f'        add_header Cache-Control "{TREE_CACHE}";',
                "        gzip on;",
                "        gzip_types text/css text/javascript application/json image/svg+xml;",
                "        # the tree's private files (capture state, _archiver/tmp/): never served; first,",
                "        # so no other location below wins. A symlink leading there is not caught here.",
                f"        location ~* {_quote_nginx('^' + _pcre_literal(name) + _PRIVATE_TAIL)} {{",
                "            return 404;",
                "        }",
                "        # gwtar files inside the tree: never compressed, their own type.",
                r"        location ~* \.gwtar\.html$ {",
                "            types { }",
                "            charset off;",
                f"            default_type {_quote_nginx(gwtar_mime)};",
                "            gzip off;",
                f'            add_header Cache-Control "{ARCHIVE_CACHE}";',
                "        }",
                "    }",
            ]
        else:  # zim
            port = _KIWIX_PORT + len(kiwix)
            kiwix.append(f"#   kiwix-serve --address=127.0.0.1 --port={port} --nosearchbar {_abs(path)}")
            out += [
                "    # ZIM: nginx cannot read ZIM files; kiwix-serve does (see the command at the end).",
                f"    location = {_quote_nginx(at)} {{",
                f"        return 301 {_quote_nginx(uri + '/')};",
                "    }",
                f"    location {_quote_nginx(at + '/')} {{",
                f"        proxy_pass http://127.0.0.1:{port}{_kiwix_prefix(path)};",
                "        proxy_http_version 1.1;",
                "    }",
            ]
    out.append("}")
    if kiwix:
        out += ["# Run one kiwix-serve per ZIM file (Debian package kiwix-tools):", *kiwix]
    return "\n".join(out) + "\n"


def _caddy(plan: list[tuple[str, str, Path]], gwtar_mime: str, listen: str, server_name: str) -> str:
    address = f"{'' if server_name == '_' else server_name}:{listen.rsplit(':', 1)[-1]}"
    out = [
        "# Caddyfile written by `archiver serve --print-config caddy`.",
        f"{address} {{",
        "    # Compress trees' text, never gwtar archives (compression turns Range requests into 200s).",
        "    @compressible not path *.gwtar.html",
        "    encode @compressible zstd gzip",
    ]
    kiwix: list[str] = []
    for kind, name, path in plan:
        uri = _uri(name)
        folder, leaf = os.path.dirname(_abs(path)), os.path.basename(_abs(path))
        if kind in ("gwtar", "file"):
            out += [f"    handle {uri} {{", f'        root * "{folder}"', f'        rewrite * "/{leaf}"']
            if kind == "gwtar":
                out.append(f'        header Content-Type "{gwtar_mime}"')
            out += [f'        header Cache-Control "{ARCHIVE_CACHE}"', "        file_server", "    }"]
        elif kind == "tree":
            out += [
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
        else:
            port = _KIWIX_PORT + len(kiwix)
            kiwix.append(f"#   kiwix-serve --address=127.0.0.1 --port={port} --nosearchbar {_abs(path)}")
            out += [
                f"    handle_path {uri}/* {{",
                f"        rewrite * {_kiwix_prefix(path).rstrip('/')}{{uri}}",
                f"        reverse_proxy 127.0.0.1:{port}",
                "    }",
            ]
    out.append("}")
    if kiwix:
        out += ["# Run one kiwix-serve per ZIM file (Debian package kiwix-tools):", *kiwix]
    return "\n".join(out) + "\n"
