"""The targets of tools/fuzz.py: for each parser of hostile input, a hypothesis strategy drawing
inputs, a check that runs the code under test and asserts its stated properties, and the error class
the code documents (raising it is not a finding). tools/fuzz.py runs them (its docstring says how)."""

from __future__ import annotations

import atexit
import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from archiver import css_refs, html_refs, srcset, tar, urls
from archiver.errors import FormatError, URLError

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["TARGETS", "PropertyBroken", "Target", "show_gwtar"]


class PropertyBroken(AssertionError):
    """A target's stated property does not hold for an input."""


# ----------------------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    name: str
    strategy: Callable[[], st.SearchStrategy[Any]]
    check: Callable[[Any], None]
    expected: tuple[type[BaseException], ...] = ()
    setup: Callable[[], None] | None = None


# -- tar


def _tar_blocks() -> st.SearchStrategy[bytes]:
    names = st.text(min_size=1, max_size=120).filter(lambda s: "\x00" not in s)
    valid = st.builds(
        lambda name, size, mtime: _encode(name, size, mtime),
        names,
        st.integers(0, tar.MAX_USTAR_SIZE),
        st.integers(0, 8**11 - 1),
    )
    mutated = st.tuples(valid, st.lists(st.tuples(st.integers(0, 511), st.integers(0, 255)), max_size=12))
    return st.one_of(
        mutated.map(lambda t: _poke(t[0], t[1])),
        st.binary(min_size=512, max_size=512),
        st.binary(max_size=1100),
    )


def _encode(name: str, size: int, mtime: int) -> bytes:
    try:
        return tar.encode_header(name, size, mtime=mtime)[:512]
    except (tar.TarError, ValueError, UnicodeError):
        return tar.encode_header("x", size, mtime=mtime)[:512]


def _poke(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    out = bytearray(data)
    for pos, value in edits:
        if out:
            out[pos % len(out)] = value
    return bytes(out)


def _pax_data() -> st.SearchStrategy[bytes]:
    record = st.builds(
        lambda k, v, d: _pax_record(k, v, d),
        st.text(max_size=20),
        st.text(max_size=40),
        st.integers(-3, 3),
    )
    return st.one_of(st.lists(record, max_size=6).map(b"".join), st.binary(max_size=300))


def _pax_record(key: str, value: str, delta: int) -> bytes:
    body = f" {key}={value}\n".encode("utf-8", "surrogatepass")
    n = len(body) + 1
    while len(str(n)) + len(body) != n:
        n += 1
    return str(max(n + delta, 0)).encode() + body


def _check_tar(data: tuple[bytes, bytes]) -> None:
    block, pax = data
    tar.decode_header(block)
    tar.parse_pax(pax)


# -- gwtar

_GWTAR: dict[str, Any] = {}
#: Files the mutations start from besides the one packed at setup: plain v1 files in the reference
#: layout (their members come from a tar walk, not a site index) and hostile members.
_GWTAR_SEEDS = (
    "testdata/gwtar/v1/reference.gwtar.html",
    "testdata/gwtar/v1/array-manifest.gwtar.html",
    "testdata/gwtar/v1/in-folder.gwtar.html",
)


def _gwtar_setup() -> None:
    if "bases" in _GWTAR:
        return
    from archiver.gwtar import read
    from archiver.gwtar.write import pack

    tmp = Path(tempfile.mkdtemp(prefix="fuzz-gwtar-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    out = tmp / "mini.gwtar.html"
    stub = "/* fuzz: a stand-in for the loader */ window.gwtarFuzz = 1;\n"
    pack(ROOT / "testdata" / "trees" / "mini", out, loader=stub)
    _GWTAR["file"] = tmp / "input.gwtar.html"
    files = [out.read_bytes()]
    files += [(ROOT / name).read_bytes() for name in _GWTAR_SEEDS if (ROOT / name).is_file()]
    bases = []
    for data in files:
        # offsets worth mutating: the HTML header, and every 512-byte tar block boundary
        with read.open(_path_of(data)) as r:
            overhead, total = r.overhead, r.total_archive_size
            index = (r.meta or {}).get("index") or {}
        base: dict[str, Any] = {
            "bytes": data,
            "overhead": overhead,
            "total": total,
            "hot": [0, overhead, *range(overhead, len(data), 512)],
            "index": None,
        }
        if index:
            base["index"] = (overhead + int(index["offset"]), int(index["size"]), str(index["sha256"]))
        bases.append(base)
    out.unlink()
    _GWTAR["bases"] = bases


_HOSTILE: list[Any] = [
    -1,
    0,
    1,
    2**63,
    2**64 + 1,
    1.5,
    "x",
    None,
    [],
    {},
    True,
    "",
    "../../x",
    "/abs",
    "a\x00b",
    "index.html",
    "_archiver/x",
    "a//b",
    "é",
    "1e400",
    {"offset": 1},
]
_INDEX_FIELDS = ["path", "offset", "size", "type", "sha256", "kind", "title", "urls", "redirect", "status"]
_INDEX_TOP = ["format", "version", "members", "pages", "home"]


def _index_edit(base: dict[str, Any], data: bytes, member: int, name: int, value: int, top: bool) -> bytes:
    """``data`` with one field of the site index (an extension-1 gwtar's member list) set to a
    hostile value, the index kept at its size and its hash in the header fixed, so the reader gets
    past the hash check and has to cope with the content."""
    found = base["index"]
    if found is None:
        return data
    start, size, sha = found
    try:
        obj = json.loads(data[start : start + size])
        hostile = _HOSTILE[value % len(_HOSTILE)]
        if top:
            obj[_INDEX_TOP[name % len(_INDEX_TOP)]] = hostile
        else:
            members = obj["members"]
            members[member % len(members)][_INDEX_FIELDS[name % len(_INDEX_FIELDS)]] = hostile
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ZeroDivisionError):
        return data
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    if len(text) > size and isinstance(obj.get("members"), list):
        for m in obj["members"]:
            if isinstance(m, dict):
                m.pop("title", None)  # make room
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    if len(text) > size:
        return data
    text += b" " * (size - len(text))
    out = data[:start] + text + data[start + size :]
    return out.replace(sha.encode(), hashlib.sha256(text).hexdigest().encode())


def _path_of(data: bytes) -> Path:
    path: Path = _GWTAR["file"]
    path.write_bytes(data)
    return path


def _gwtar_inputs() -> st.SearchStrategy[Any]:
    # (which base file, a list of edits) applied in _check_gwtar (the bases are made at setup)
    edit = st.one_of(
        st.tuples(st.just("byte"), st.integers(0, 1 << 30), st.integers(0, 255)),
        st.tuples(st.just("hot"), st.integers(0, 1 << 30), st.integers(0, 511), st.binary(max_size=16)),
        st.tuples(st.just("truncate"), st.integers(0, 1 << 30)),
        st.tuples(
            st.just("index"), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99), st.booleans()
        ),
        st.tuples(st.just("splice"), st.integers(0, 1 << 30), st.integers(0, 1 << 30), st.integers(1, 2048)),
        st.tuples(
            st.just("digits"), st.integers(0, 1 << 30), st.sampled_from([b"9", b"0", b"-1", b"99999999"])
        ),
    )
    return st.tuples(st.integers(0, 99), st.lists(edit, min_size=1, max_size=4))


def _mutate(base: dict[str, Any], edits: list[tuple[Any, ...]]) -> bytes:
    out = bytearray(base["bytes"])
    for e in edits:
        if not out:
            break
        kind = e[0]
        if kind == "byte":
            out[e[1] % len(out)] = e[2]
        elif kind == "hot":
            hot = base["hot"]
            pos = (hot[e[1] % len(hot)] + e[2]) % len(out)
            out[pos : pos + len(e[3])] = e[3]
        elif kind == "index":
            out = bytearray(_index_edit(base, bytes(out), *e[1:]))
        elif kind == "truncate":
            del out[e[1] % len(out) :]
        elif kind == "splice":
            src, dst, n = e[1] % len(out), e[2] % len(out), e[3]
            out[dst:dst] = out[src : src + n]
        elif kind == "digits":
            # change a number in the header's text (sizes, offsets, counts)
            text = bytes(out)
            starts = [i for i in range(len(text) - 1) if text[i : i + 1].isdigit()][:5000]
            if starts:
                pos = starts[e[1] % len(starts)]
                end = pos
                while end < len(out) and out[end : end + 1].isdigit():
                    end += 1
                out[pos:end] = e[2]
    return bytes(out)


def _base(which: int) -> dict[str, Any]:
    bases = _GWTAR["bases"]
    return bases[which % len(bases)]  # type: ignore[no-any-return]


def _check_gwtar(data: tuple[int, list[tuple[Any, ...]]]) -> None:
    from archiver.gwtar import read

    base = _base(data[0])
    mutated = _mutate(base, data[1])
    path = _path_of(mutated)
    # the tar walk on its own, as verify and extract use it, from where the tar used to start
    with open(path, "rb") as f:
        for _entry in read.TarWalk(f, base["overhead"], min(base["total"], len(mutated))):
            pass
    with read.open(path) as r:
        for m in r:
            r.read(m)


def show_gwtar(data: tuple[int, list[tuple[Any, ...]]]) -> bytes:
    return _mutate(_base(data[0]), data[1])


# -- Range


_RANGE_PIECE = st.sampled_from(
    [
        "bytes=",
        "bytes",
        "=",
        "-",
        ",",
        " ",
        "\t",
        "0",
        "1",
        "9",
        "499",
        "500",
        "18446744073709551616",
        "x",
        "BYTES=",
    ]
)


def _range_inputs() -> st.SearchStrategy[Any]:
    header = st.one_of(st.lists(_RANGE_PIECE, max_size=20).map("".join), st.text(max_size=60))
    dates = st.sampled_from(
        ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", ""]
    )
    maybe = st.one_of(st.none(), header, dates, st.text(max_size=40))
    etag = st.one_of(st.none(), st.just('"abc"'), st.just('W/"abc"'), st.text(max_size=10))
    return st.fixed_dictionaries(
        {
            "method": st.sampled_from(["GET", "HEAD", "POST"]),
            "size": st.integers(0, 1 << 64),
            "etag": etag,
            "last_modified": st.one_of(st.none(), st.integers(-(1 << 40), 1 << 40)),
            "now": st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
            "range_": st.one_of(st.none(), header),
            "if_range": maybe,
            "if_match": maybe,
            "if_none_match": maybe,
            "if_modified_since": maybe,
            "if_unmodified_since": maybe,
            "raw": st.one_of(
                st.binary(max_size=40), header.map(lambda s: s.encode("utf-8", "surrogatepass"))
            ),
        }
    )


def _check_range(args: dict[str, Any]) -> None:
    from archiver.serve import ranges

    kwargs = dict(args)
    raw = kwargs.pop("raw")
    method, size = kwargs.pop("method"), kwargs.pop("size")
    decision = ranges.decide(method, size, **kwargs)
    for start, stop in decision.ranges:
        if not 0 <= start <= stop <= size:
            raise PropertyBroken(f"range {start}-{stop} outside 0-{size}")
    if kwargs["range_"] is not None:
        ranges.parse_range(kwargs["range_"], size)
    for value in (kwargs["if_modified_since"], kwargs["if_range"]):
        if value is not None:
            ranges.parse_http_date(value)
    ranges.simple_range(raw, size)


# -- HTML


_TAGS = [
    "a",
    "img",
    "link",
    "script",
    "iframe",
    "meta",
    "base",
    "style",
    "source",
    "video",
    "object",
    "form",
    "svg",
    "image",
    "use",
    "noscript",
    "template",
    "picture",
    "input",
    "area",
    "embed",
    "p",
]
_ATTRS = [
    "href",
    "src",
    "srcset",
    "style",
    "content",
    "http-equiv",
    "rel",
    "as",
    "data",
    "poster",
    "xlink:href",
    "data-src",
    "data-srcset",
    "srcdoc",
    "action",
    "type",
    "integrity",
    "onclick",
    "imagesrcset",
    "background",
    "charset",
    "loading",
]
_VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "a.png",
            "/x/../y?q#f",
            "//h/p",
            "javascript:x()",
            "data:,x",
            "0; url=n.html",
            "a.png 1x, b.png 2x",
            "url(x.png)",
            "stylesheet",
            "refresh",
            "http://[::1]:8/",
            "\x00",
            "&amp;",
            "%zz",
            "http://0x7f.1/",
        ]
    ),
    st.text(max_size=30),
)


def _element() -> st.SearchStrategy[str]:
    attrs = st.lists(st.tuples(st.sampled_from(_ATTRS), _VALUES), max_size=4)
    return st.builds(
        lambda tag, a, inner: (
            f"<{tag} " + " ".join(f'{k}="{v.replace(chr(34), "&quot;")}"' for k, v in a) + f">{inner}</{tag}>"
        ),
        st.sampled_from(_TAGS),
        attrs,
        st.one_of(st.just(""), st.text(max_size=20), st.just("a{background:url(z.png)}")),
    )


def _html_inputs() -> st.SearchStrategy[str]:
    doc = st.lists(_element(), max_size=8).map(lambda parts: "<!doctype html>" + "".join(parts))
    return st.one_of(doc, st.text(max_size=300))


def _html_change(ref: str, hint: str) -> str | None:
    if len(ref) % 3 == 0:
        return None
    return "L/" + ref[::-1]


def _check_html(text: str) -> None:
    from archiver.capture import rewrite_html

    for mode in ("unwrap", "drop"):
        doc = rewrite_html.parse(text)
        rewrite_html.base_url(doc, "https://example.com/a/b")
        rewrite_html.rewrite(doc, _html_change, noscript=mode)  # type: ignore[arg-type]
    html_refs.parse_refresh(text[:200])
    html_refs.attribute_refs("img", {"src": text[:50], "srcset": text[50:150]})
    html_refs.link_use(text[:20], text[20:30])


# -- CSS


_CSS_PIECE = st.sampled_from(
    [
        "url(",
        ")",
        "url('",
        "'",
        '"',
        "@import ",
        ";",
        "{",
        "}",
        "a",
        "b.png",
        "\\",
        "/*",
        "*/",
        "image-set(",
        " 1x",
        ",",
        "@media screen",
        "\n",
        "--x:",
        "@font-face",
        "src:",
        "\x00",
        "\ufffd",
        "url( x )",
    ]
)


def _css_inputs() -> st.SearchStrategy[Any]:
    text = st.one_of(st.lists(_CSS_PIECE, max_size=40).map("".join), st.text(max_size=200))
    return st.tuples(text, st.binary(max_size=120))


def _css_change(ref: str, role: str) -> str | None:
    return None if len(ref) % 2 else "../" + ref + "'\")\\"


def _check_css(data: tuple[str, bytes]) -> None:
    text, raw = data
    css_refs.rewrite_stylesheet(text, _css_change)  # type: ignore[arg-type]
    css_refs.rewrite_declarations(text, _css_change)  # type: ignore[arg-type]
    css_refs.references(text)
    css_refs.decode(raw)


# -- srcset


def _srcset_inputs() -> st.SearchStrategy[str]:
    piece = st.sampled_from(["a.png", " ", ",", "1x", "300w", "(", ")", "\t", "data:a,b", "x,y.png", "\n"])
    return st.one_of(st.lists(piece, max_size=20).map("".join), st.text(max_size=80))


def _check_srcset(value: str) -> None:
    candidates = srcset.parse(value)
    srcset.urls(value)
    srcset.serialize(candidates)
    srcset.rewrite(value, lambda u: u + ",x")
    if any(not c.url or any(ch in " \t\n\r\f" for ch in c.url) for c in candidates):
        raise PropertyBroken(f"a candidate URL is empty or holds white space: {candidates!r}")


# -- urls


def _url_inputs() -> st.SearchStrategy[tuple[str, str]]:
    host = st.sampled_from(
        [
            "example.com",
            "EXAMPLE.com.",
            "127.1",
            "0x7f000001",
            "2130706433",
            "[::ffff:127.0.0.1]",
            "[::1]",
            "xn--caf-dma.fr",
            "café.fr",
            "a..b",
            "",
            "h:80",
            "h:0",
            "h:99999",
            "[fe80::1%25eth0]",
            "0177.0.0.01",
            "user:pw@h",
            "h%41",
            "1.2.3.4.5",
            "0x",
            "09",
        ]
    )
    path = st.lists(
        st.sampled_from(
            [
                "/",
                "a",
                "..",
                ".",
                "%2F",
                "%2e",
                "?",
                "#",
                "&",
                "=",
                "%",
                " ",
                "\\",
                "é",
                "index.html",
                "__q-",
                ";",
                "@",
                ":",
            ]
        ),
        max_size=10,
    ).map("".join)
    scheme = st.sampled_from(["http://", "https://", "HTTP://", "//", "", "ftp://", "javascript:", "data:"])
    built = st.builds(lambda s, h, p: s + h + p, scheme, host, path)
    ref = st.one_of(built, path, st.text(max_size=60))
    base = st.one_of(st.just("https://example.com/a/b"), built)
    return st.tuples(ref, base)


def _check_urls(data: tuple[str, str]) -> None:
    ref, base = data
    try:
        canonical = urls.canonicalize(ref, base)
    except URLError:
        return
    if urls.canonicalize(canonical) != canonical:
        raise PropertyBroken(
            f"canonicalize is not idempotent: {canonical!r} -> {urls.canonicalize(canonical)!r}"
        )
    key = urls.dedup_key(canonical)
    if urls.dedup_key(key) != key:
        raise PropertyBroken(f"dedup_key is not idempotent: {key!r}")
    urls.host_of(key)
    for kind in ("page", "asset"):
        urls.local_path(key, kind=kind, home="https://example.com/")  # type: ignore[arg-type]
    urls.ref_action(ref)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("tar", lambda: st.tuples(_tar_blocks(), _pax_data()), _check_tar, (tar.TarError,)),
        Target("gwtar", _gwtar_inputs, _check_gwtar, (FormatError,), _gwtar_setup),
        Target("range", _range_inputs, _check_range),
        Target("html", _html_inputs, _check_html),
        Target("css", _css_inputs, _check_css),
        Target("srcset", _srcset_inputs, _check_srcset),
        Target("urls", _url_inputs, _check_urls, (URLError,)),
    )
}
