"""Build gwtar v1 files to the reference implementation's exact byte layout (research
gwtar-reference.md §1), from our own description of it, for reader and verifier tests.

The reference's header script (gwtar.js) and noscript block are replaced by stand-ins of our own
(the layout, not their text, is what readers depend on); everything else follows §1 byte for byte:
``<html>`` LF magic, the ``Original SingleFile`` comment, ``let assets = `` + PHP-style pretty JSON
(4-space indent, ``": "``, non-ASCII as ``\\uXXXX``) without a ``;``, the 12- and 24-digit fields,
the script, the noscript block without a final LF, ``window.stop()``, ``<!-- GWTAR END`` LF, then a
ustar tar of ``BASE.html`` and ``BASE/BASE-asset-N.EXT`` made by Python's tarfile or by GNU tar
(``--format=ustar --owner=0 --group=0``, one ``--append`` per asset), padded to 10,240 bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

#: Stand-in for gwtar.js: ends with LF and carries non-ASCII characters in comments, as the real one does.
STAND_IN_JS = (
    "// stand-in for the v1 header script (café, naïve, ≠, “quotes”): only its place matters here\n"
    "function gwtarStandIn() { return Object.entries(assets).length + overhead + totalArchiveSize; }\n"
    "requestIdleCallback(gwtarStandIn);\n"
)
STAND_IN_NOSCRIPT = (
    '<noscript><div class="noscript-warning"><p>This page needs JavaScript (stand-in text).</p></div>'
    "</noscript>"
)
MTIME = 1767225600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class Asset:
    ext: str
    content_type: str
    data: bytes
    extra: dict[str, object] | None = None  # unknown per-entry fields, kept in the manifest


def php_json(value: object) -> str:
    """json_encode(..., JSON_UNESCAPED_SLASHES | JSON_PRETTY_PRINT) for the values used here."""
    return json.dumps(value, indent=4, ensure_ascii=True)


def build_v1(
    out_dir: Path,
    base: str,
    html: bytes,
    assets: list[Asset],
    *,
    folder: str = "",
    zero_not_first: bool = False,
    tool: str = "python",
) -> Path:
    """Write ``out_dir/BASE.gwtar.html`` and return its path. ``folder`` prefixes member names as when
    upload.sh passes ``doc/x/foo.html``; ``zero_not_first`` moves ``"0"`` after the first asset in the
    JSON text (the uksort quirk); with no assets the manifest is a JSON array, as PHP writes it."""
    prefix = f"{folder}/" if folder else ""
    names = [f"{base}-asset-{i}.{a.ext}" for i, a in enumerate(assets, 1)]
    zero = {
        "size": len(html),
        "content-type": "text/html",
        "basename": base,
        "hash": hashlib.sha256(html).hexdigest(),
    }
    entries: list[tuple[str, dict[str, object]]] = []
    for name, a in zip(names, assets, strict=True):
        entry: dict[str, object] = {
            "size": len(a.data),
            "content-type": a.content_type,
            "hash": hashlib.sha256(a.data).hexdigest(),
        }
        entry.update(a.extra or {})
        entries.append((name, entry))
    if not assets:
        manifest = php_json([zero])
    elif zero_not_first:
        manifest = php_json(dict([entries[0], ("0", zero), *entries[1:]]))
    else:
        manifest = php_json(dict([("0", zero), *entries]))

    members = [(f"{prefix}{base}.html", html)] + [
        (f"{prefix}{base}/{n}", a.data) for n, a in zip(names, assets, strict=True)
    ]
    body = _tar_gnu(out_dir, members) if tool == "gnu" else _tar_python(members)

    original = hashlib.sha256(b"original singlefile " + html).hexdigest()

    def header(overhead: int, total: int) -> bytes:
        return (
            "<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->"
            f"\n<!-- Original SingleFile: {base}.html {original} (SHA-256) -->"
            "\n<body>\n<script>\nlet assets = " + manifest + "\n</script>\n<script>\n"
            f'let overhead = parseInt("{overhead:012d}");'
            f'\nlet totalArchiveSize = parseInt("{total:024d}");\n</script>\n<script>\n'
            + STAND_IN_JS
            + "\n</script>\n"
            + STAND_IN_NOSCRIPT
            + "\n<script>\nwindow.stop();\n</script>"
            + "\n</body>\n</html>\n<!-- GWTAR END\n"
        ).encode("utf-8")

    overhead = len(header(0, 0))
    data = header(overhead, overhead + len(body)) + body
    out = out_dir / f"{base}.gwtar.html"
    out.write_bytes(data)
    return out


def _tar_python(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _tar_gnu(out_dir: Path, members: list[tuple[str, bytes]]) -> bytes:
    work = out_dir / ".v1-work"
    work.mkdir(exist_ok=True)
    for name, data in members:
        p = work / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        p.chmod(0o644)
        os.utime(p, (MTIME, MTIME))
    archive = out_dir / ".v1-work.tar"
    flags = ["--format=ustar", "--owner=0", "--group=0", "-f", str(archive)]
    subprocess.run(["tar", "--create", *flags, members[0][0]], cwd=work, check=True)
    for name, _ in members[1:]:
        subprocess.run(["tar", "--append", *flags, name], cwd=work, check=True)
    body = archive.read_bytes()
    archive.unlink()
    subprocess.run(["rm", "-rf", str(work)], check=True)
    return body


def add_fec_tail(path: Path) -> int:
    """Append a FEC tail as the reference does (par2 over the whole file, the .par2 files in a ustar
    tar appended); return the number of PAR2 files."""
    work = path.parent
    create = ["par2", "create", "-q", "-q", "-b20", "-r10", "-n1", f"{path.name}.par2", path.name]
    subprocess.run(create, cwd=work, check=True, stdout=subprocess.DEVNULL)
    pars = sorted(p.name for p in work.glob(f"{path.name}*.par2"))
    tail = work / "fec.tar"
    subprocess.run(["tar", "--create", "--format=ustar", "-f", tail.name, *pars], cwd=work, check=True)
    with path.open("ab") as f:
        f.write(tail.read_bytes())
    for p in [*pars, tail.name]:
        (work / p).unlink()
    return len(pars)


def sample_assets() -> list[Asset]:
    """A small set like a SingleFile page's: a script, a stylesheet-ish SVG, PNG bytes, a font."""
    return [
        Asset("js", "text/javascript", b"console.log('asset');\n"),
        Asset("svg", "image/svg+xml", b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'),
        Asset("png", "image/png", bytes(range(256)) * 3, extra={"note": "unknown field", "n": 1}),
        Asset("woff2", "font/woff2", b"wOF2" + b"\x00" * 600),
    ]


SAMPLE_HTML = (
    b'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>V1 page</title>'
    b'<script src="page/page-asset-1.js"></script></head><body><h1>V1</h1>'
    b'<img src="page/page-asset-2.svg"><img src="page/page-asset-3.png"></body></html>\n'
)
