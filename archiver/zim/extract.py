"""``ls`` and ``extract``: a ZIM's content entries listed, or written back as a tree.

Extraction is safe against hostile archives: the file's checksum is checked and every path before
anything is written (no absolute path, no ``.``/``..``/empty segment, no NUL, no path twice, no file
that is also a folder); then the files go through :class:`archiver.safefs.Staging` (a private
staging folder, folders opened one segment at a time with ``O_NOFOLLOW``, moved into place at the
end), so on any failure (a full disk, a signal) the output folder is left as it was.

Redirects survive (formats/zim.md §9): each one becomes a redirect stub page at its path
(:func:`archiver.zim.source.redirect_stub`) with a manifest record, which packers turn back into
the same redirect; a redirect that the ZIM's stored manifest already implies (an alias of one of
its records) needs no stub. A ZIM archiver wrote carries the tree's manifest: it is written back,
with the stub records of any other redirects appended. A ZIM without one (zimwriterfs, the old
namespace layout …) gets a manifest made from its entries: a page is an entry whose MIME type is
HTML, whatever its name; the header names the ZIM's main page (``options.main``).
Pages that pack made zimcheck-safe are written back byte for byte as they were (``_archiver/zim-edits.jsonl``,
formats/zim.md §3.1); that item itself is not a file of the tree.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import msgspec

from archiver import safefs
from archiver.errors import FormatError
from archiver.tree import Header, Record
from archiver.urls import RESERVED_DIR
from archiver.zim.read import Check, Entry, ZimReader, open_archive
from archiver.zim.source import (
    STORED_EDITS,
    STORED_MANIFEST,
    STUB_STATUS,
    SourceRedirect,
    aliases,
    check_entry_path,
    redirect_stub,
)
from archiver.zim.zimsafe import Edit, decode_edits, restore

__all__ = ["extract", "ls"]


def ls(path: Path, *, check: Check = "full") -> Iterator[Entry]:
    """Every content entry of the ZIM at ``path`` (items and redirects), in path order, once the
    file's structure and (unless ``check="structure"``) checksum are sound (:func:`open_archive`)."""
    reader = open_archive(path, check=check)
    with reader:
        yield from reader.iter_entries()


def _plan(paths: list[str], label: str) -> None:
    files = set(paths)
    if len(files) != len(paths):
        raise FormatError("an entry path appears twice", subject=label)
    for p in paths:
        check_entry_path(p, label)
        parts = p.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in files:
                raise FormatError(f"{folder!r} is both a file and a folder (of {p!r})", subject=label)


_HTML = ("text/html", "application/xhtml+xml")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_encoder = msgspec.json.Encoder()
_header = msgspec.json.Decoder(Header)
_record = msgspec.json.Decoder(Record)


def _write_file(
    stage: safefs.Staging, path: str, entry: Entry, edits: list[Edit] | None = None, extra: bytes = b""
) -> tuple[int, str]:
    """Write one item (its zimcheck edits undone, then ``extra``); return its size and SHA-256."""
    fd = stage.create(path)
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "wb") as f:
        if edits:
            try:
                chunks: Iterator[bytes] = iter([restore(entry.read(), edits)])
            except ValueError as e:
                raise FormatError(f"{STORED_EDITS}: {entry.path!r}: {e}") from None
        else:
            chunks = entry.chunks()
        last = b"\n"
        for chunk in chunks:
            f.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            last = chunk[-1:] or last
        if extra:
            if last != b"\n":  # a manifest cut short: the appended records start on a line of their own
                extra = b"\n" + extra
            f.write(extra)
            digest.update(extra)
            size += len(extra)
        # flushed to disk with the whole staging folder, before it is published
    return size, digest.hexdigest()


def _lines(entry: Entry) -> Iterator[bytes]:
    """The lines of an item, streamed (a manifest of a million records is not read whole)."""
    rest = b""
    for chunk in entry.chunks():
        rest += chunk
        *lines, rest = rest.split(b"\n")
        yield from lines
    if rest:
        yield rest


def _stored(reader: ZimReader) -> tuple[set[str], set[tuple[str, str]]]:
    """(paths the stored manifest lists, the (path, target) redirects its records imply as aliases,
    formats/zim.md §5). A manifest that does not decode implies nothing."""
    listed: set[str] = set()
    implied: set[tuple[str, str]] = set()
    lines = _lines(reader.get(STORED_MANIFEST))
    try:
        home = _header.decode(next(lines, b"")).home
    except msgspec.DecodeError:
        return listed, implied
    for line in lines:
        try:
            record = _record.decode(line)
        except msgspec.DecodeError:
            continue  # a torn or foreign line: tree.md §8.1 readers skip it too
        listed.add(record.path)
        if home:
            implied.update((a.path, a.target) for a in aliases(record, home))
    return listed, implied


def _stub_record(r: SourceRedirect, data: bytes) -> Record:
    return Record(
        path=r.path, kind="page", media_type="text/html", size=len(data),
        sha256=hashlib.sha256(data).hexdigest(), title=r.title or None, status=STUB_STATUS,
    )  # fmt: skip


def _made_header(reader: ZimReader) -> Header:
    """The manifest header for a ZIM that carries none: its ``Source`` as home (when a URL), its
    ``Date`` as the creation time, its main page in ``options``."""
    meta = reader.metadata
    source = meta.get("Source", "")
    date = meta.get("Date", "")
    options: dict[str, object] = {"source": "zim"}
    if reader.main_path:
        options["main"] = reader.main_path
    return Header(
        home=source if source.startswith(("http://", "https://")) else "",
        created=f"{date}T00:00:00Z" if _DATE.fullmatch(date) else "1970-01-01T00:00:00Z",
        options=options,
    )


def extract(path: Path, out_dir: Path, *, force: bool = False, check: Check = "full") -> int:
    """Write every item of the ZIM at ``path`` under ``out_dir`` at its entry path, and a redirect
    stub for every redirect (see the module's docstring); return the number of files written (items
    and stubs; a manifest made for a ZIM without one is not counted). ``out_dir`` must be missing or
    empty unless ``force`` (then files are replaced, nothing else is removed). Raises
    :class:`FormatError` before writing anything when an entry path is unsafe or the file is damaged
    (its structure, or its checksum unless ``check="structure"``: :func:`open_archive`); on any
    failure ``out_dir`` is left as it was."""
    label = str(path)
    with open_archive(path, check=check) as reader:
        edits: dict[str, list[Edit]] = {}
        if reader.has(STORED_EDITS):
            try:
                edits = decode_edits(reader.get(STORED_EDITS).read())
            except (ValueError, UnicodeDecodeError) as e:
                raise FormatError(f"{STORED_EDITS} is not valid: {e}", subject=label) from None
        items: list[str] = []
        moved: list[SourceRedirect] = []
        for e in reader.iter_entries():
            if e.is_redirect:
                title = e.title if e.title and e.title != e.path else ""
                moved.append(SourceRedirect(e.path, e.redirect_target or "", title))
            elif e.path != STORED_EDITS:
                items.append(e.path)
        _plan(items + [r.path for r in moved], label)
        stubs = [(r, redirect_stub(r.path, r.target, r.title)) for r in moved if _stub_ok(r, label)]
        header: Header | None = None
        if STORED_MANIFEST in set(items):
            listed, implied = _stored(reader)
            stubs = [(r, data) for r, data in stubs if (r.path, r.target) not in implied]
            appended = b"".join(
                _encoder.encode(_stub_record(r, data)) + b"\n" for r, data in stubs if r.path not in listed
            )
        else:
            appended = b""
            if not any(p == RESERVED_DIR or p.startswith(STORED_MANIFEST + "/") for p in items):
                header = _made_header(reader)  # (no room for it when a file is named so: none)
        with safefs.interruptible(), safefs.Staging(Path(out_dir), force=force, subject=label) as stage:
            current = ""
            try:
                records: list[bytes] = []
                for p in items:
                    current = p
                    entry = reader.get(p)
                    extra = appended if p == STORED_MANIFEST else b""
                    size, sha = _write_file(stage, p, entry, edits.get(p), extra)
                    if header is not None:
                        records.append(_encoder.encode(_item_record(entry, size, sha)) + b"\n")
                for r, data in stubs:
                    current = r.path
                    with os.fdopen(stage.create(r.path), "wb") as f:
                        f.write(data)
                    if header is not None:
                        records.append(_encoder.encode(_stub_record(r, data)) + b"\n")
                if header is not None:
                    current = STORED_MANIFEST
                    with os.fdopen(stage.create(STORED_MANIFEST), "wb") as f:
                        f.write(_encoder.encode(header) + b"\n")
                        f.writelines(records)
                current = ""
                stage.commit()
            except OSError as e:
                doing = f"while writing {current!r}" if current else "while moving the files into place"
                raise safefs.io_error(e, str(out_dir), doing) from None
    return len(items) + len(stubs)


def _stub_ok(r: SourceRedirect, label: str) -> bool:
    """Whether a redirect can have a stub: its target is a clean entry path (libzim resolves the
    target; a path that is not one would be refused by any packer anyway)."""
    try:
        check_entry_path(r.target, label)
    except FormatError:
        return False
    return r.target != r.path


def _item_record(entry: Entry, size: int, sha256: str) -> Record:
    """The record of an item of a ZIM without a manifest: a page when its MIME type is HTML."""
    media_type = entry.mimetype.split(";", 1)[0].strip() or "application/octet-stream"
    page = media_type in _HTML
    title = entry.title if page and entry.title and entry.title != entry.path else None
    return Record(
        path=entry.path, kind="page" if page else "asset", media_type=media_type, size=size, sha256=sha256,
        title=title,
    )  # fmt: skip
