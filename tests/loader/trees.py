"""A small canonical tree written for the loader's tests: what the fixture site does not have
(``<object>``, ``<embed>``, ``<audio>``, scripts whose order is observable, a quirks-mode page, a
windows-1252 page, a container whose own ``style`` has a background, SVG ``<image>``, a module that
fetches relative to ``import.meta.url``). Its assets are borrowed from the fixture site; every href
is made with :func:`archiver.urls.rel`, as the tree contract says."""

from __future__ import annotations

import io
import json
import math
import struct
import wave
from pathlib import Path

from archiver.fixture import site_root
from archiver.urls import rel

__all__ = ["FEATURES", "SCRIPT_ORDER", "features_tree", "wav"]

A = "_archiver/ex.test/"
FEATURES = "index.html"
#: The entries the index page's scripts log (the order is whatever a browser does with the original).
SCRIPT_ORDER = ["inline-1", "external", "inline-2", "module-inline", "defer", "module", "dcl"]


def wav(seconds: float = 2.0, rate: int = 8000) -> bytes:
    """A real, playable WAV file: a 440 Hz tone."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(
            b"".join(
                struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                for i in range(int(seconds * rate))
            )
        )
    return out.getvalue()


def features_tree(root: Path) -> Path:
    """Write the tree under ``root`` and return it."""
    site = site_root()
    files: dict[str, bytes] = {
        A + "img/tile.png": (site / "img/inline/tile.png").read_bytes(),
        A + "img/bg.png": (site / "img/bg/paper.png").read_bytes(),
        A + "img/card.png": (site / "img/bg/card-corner.png").read_bytes(),
        A + "img/badge.png": (site / "img/svg/badge.png").read_bytes(),
        A + "img/icons.svg": (site / "img/icons.svg").read_bytes(),
        A + "img/diagram.svg": (site / "img/diagram.svg").read_bytes(),
        A + "img/poster.jpg": (site / "media/field-notes-poster.jpg").read_bytes(),
        A + "fonts/sans.woff2": (site / "fonts/acme-field-sans.woff2").read_bytes(),
        A + "media/tone.wav": wav(),
        A + "data/notes.json": json.dumps({"notes": ["from the archive"]}).encode(),
    }

    def href(src: str, dst: str) -> str:
        return rel(src, dst)

    files[A + "css/a.css"] = (
        f'@import url("{href(A + "css/a.css", A + "css/sub/b.css")}");\n'
        "html{background:#fafaf5}\n"
        f".card{{background:url({href(A + 'css/a.css', A + 'img/card.png')}) no-repeat right top;"
        "padding:8px;border:1px solid #999}\n"
    ).encode()
    files[A + "css/sub/b.css"] = (
        b"@font-face{font-family:Sans;src:url(../../fonts/sans.woff2) format('woff2'),"
        b"url(../../fonts/missing.woff) format('woff')}\n"
        b"body{font-family:Sans,sans-serif;margin:16px}\n"
        b"h1{background:url('../../img/bg.png');color:#234}\n"
    )
    files[A + "js/external.js"] = b'window.order.push("external");\n'
    files[A + "js/defer.js"] = b'window.order.push("defer");\n'
    files[A + "js/dep.mjs"] = b'export const word = "module";\n'
    files[A + "js/main.mjs"] = (
        b'import { word } from "./dep.mjs";\n'
        b"window.order.push(word);\n"
        b'fetch(new URL("../data/notes.json", import.meta.url)).then(r => r.json()).then(d => {\n'
        b'  document.getElementById("notes").textContent = d.notes[0];\n'
        b"});\n"
    )
    page = "index.html"
    h = lambda dst: href(page, dst)  # noqa: E731
    files[page] = f"""<!DOCTYPE html>
<html lang="de" class="root" data-html="kept">
<head>
<meta charset="utf-8">
<title>Features</title>
<link rel="stylesheet" href="{h(A + "css/a.css")}">
<script>window.order = ["inline-1"];</script>
<script src="{h(A + "js/external.js")}"></script>
<script defer src="{h(A + "js/defer.js")}"></script>
<script>window.order.push("inline-2");
document.addEventListener("DOMContentLoaded", () => window.order.push("dcl"));</script>
<script type="module">window.order.push("module-inline");</script>
<script type="module" src="{h(A + "js/main.mjs")}"></script>
</head>
<body class="features" data-body="kept" style="background-image:url('{h(A + "img/tile.png")}')">
<h1 id="top">Features</h1>
<div class="card" id="card" style="background-image:url('{h(A + "img/tile.png")}')">
<p>A container whose own style has a background, and children.</p></div>
<p id="notes">notes not loaded</p>
<object id="object" data="{h(A + "img/diagram.svg")}" type="image/svg+xml" width="160" height="90">
fallback text</object>
<embed id="embed" src="{h(A + "img/diagram.svg")}" type="image/svg+xml" width="160" height="90">
<svg width="140" height="70" id="svg"><image href="{h(A + "img/badge.png")}" width="64" height="64"/>
<use xlink:href="{h(A + "img/icons.svg")}#icon-leaf" x="70"/></svg>
<p><a id="to-quirks" href="{h("quirks.html")}">quirks</a>
<a id="to-latin" href="{h("latin1.html")}">latin1</a>
<a id="to-media" href="{h("media/index.html")}">media</a> <a id="to-end" href="#end">end</a></p>
<div style="height:1600px"></div>
<p id="end">The end.</p>
<div style="height:1000px"></div>
</body>
</html>
""".encode()
    files["quirks.html"] = (
        b"<html><head><title>Quirks</title></head>"
        b"<body><table><tr><td>no doctype</td></tr></table></body></html>\n"
    )
    files["latin1.html"] = (
        '<!DOCTYPE html><html><head><meta charset="windows-1252"><title>Latin</title></head>'
        '<body><p id="word">caf\u00e9 \u2013 na\u00efve</p></body></html>\n'
    ).encode("cp1252")
    files["refresh.html"] = (
        b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Refresh</title>'
        b'<meta http-equiv="refresh" content="0.5; url=latin1.html"></head>'
        b"<body><p>Moving on.</p></body></html>\n"
    )
    media = "media/index.html"
    files[media] = f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Media</title></head>
<body>
<audio id="audio" controls preload="none">
<source src="{href(media, A + "media/tone.wav")}" type="audio/wav"></audio>
<video id="video" controls preload="none" width="320" height="180"
 poster="{href(media, A + "img/poster.jpg")}"></video>
</body></html>
""".encode()
    for path, data in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root
