"""The search commands (formats/search.md): ``archiver index TREE`` writes a tree's index and
search page; ``archiver search ARCHIVE... -q QUERY`` ranks the pages of every archive named
together (one set of document frequencies over all of them, formats/search.md §6.3)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from archiver import safefs
from archiver.cli.output import _escaped, _print_json, _writing
from archiver.errors import UsageError


def _tree(text: str) -> Path:
    from archiver.treefolders import is_tree

    path = Path(text)
    if not path.exists():
        raise UsageError("no such file or folder", subject=text)
    if not is_tree(path):
        raise UsageError("is not a tree (a capture folder); search reads trees for now", subject=text)
    return path


def _index_archive(args: argparse.Namespace, path: Path) -> int:
    from archiver.search import archive

    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        packed = _packed(path, stack)
        if packed.has(f"{archive.PREFIX}manifest.js"):
            print(f"{_escaped(str(path))}: has its search index inside (packed with it); nothing to do")
            return 0
        pages = archive.page_paths(packed.pages)
        target = archive.sidecar(path)
        manifest, folder = _writing(lambda: archive.write_sidecar(path, pages, packed.head), target)
    seconds = time.monotonic() - started
    doc = {"archive": str(path), "index": str(folder), "pages": len(pages), "shards": len(manifest["shards"]),
           "seconds": round(seconds, 3)}  # fmt: skip
    if args.json:
        _print_json(doc)
    else:
        print(f"{_escaped(str(folder))}: {len(pages)} pages, {doc['shards']} term shards in {seconds:.2f} s "
              f"(beside the archive, which is unchanged)")  # fmt: skip
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    # SIGTERM and SIGHUP end it as Ctrl-C does (exit 130, its pool ended, nothing half-written);
    # they killed it before, the pool's workers printing BrokenPipeError tracebacks to a dead parent
    with safefs.interruptible():
        return _index(args)


def _index(args: argparse.Namespace) -> int:
    from archiver.search import store

    if Path(args.tree).is_file():
        return _index_archive(args, Path(args.tree))
    root = _tree(args.tree)
    started = time.monotonic()
    manifest, pages, size = _writing(lambda: store.write_index(root), root / store.INDEX_DIR)
    seconds = time.monotonic() - started
    doc = {
        "tree": str(root),
        "index": str(root / store.INDEX_DIR),
        "page": str(root / store.INDEX_DIR / "index.html"),
        "pages": pages,
        "shards": len(manifest["shards"]),
        "fragment_files": len(manifest["docs"]),
        "text_files": manifest["text_files"] if "text_files" in manifest else len(manifest["text"]),
        "bytes": size,
        "seconds": round(seconds, 3),
    }
    if args.json:
        _print_json(doc)
    else:
        print(
            f"{_escaped(doc['index'])}: {pages} pages, {doc['shards']} term shards, "
            f"{doc['fragment_files']} fragment and {doc['text_files']} text files, {size} bytes "
            f"in {seconds:.2f} s; "
            f"search page: {_escaped(doc['page'])}"
        )
    return 0


class _Packed(NamedTuple):
    read: Any  # an index file's bytes (archive.bounded: one too large is refused unread)
    has: Any
    pages: list[tuple[str, str]]  # (path, media type) of every page
    head: Any  # (path, n) → a member's or entry's first n bytes


def _packed(path: Path, stack: contextlib.ExitStack) -> _Packed:
    """How to read a gwtar (members, each read at its offset) or a ZIM (entries)."""
    from archiver.detect import kind_of
    from archiver.search import archive

    kind = kind_of(path)
    if kind == "gwtar":
        from archiver.gwtar.read import GwtarReader

        reader: Any = stack.enter_context(GwtarReader(path))
        pages = [(m.path, m.media_type) for m in reader.members if m.kind == "page"]
        read, head = archive.member_reads(reader)
        return _Packed(read, reader.has, pages, head)
    if kind == "zim":
        from archiver.zim.read import open_archive

        z = stack.enter_context(open_archive(path, check="structure"))
        pages = [(e.path, e.mimetype) for e in z.iter_entries() if not e.is_redirect]
        read, head = archive.entry_reads(z)
        return _Packed(read, z.has, pages, head)
    raise UsageError("is not a tree, a gwtar or a ZIM file", subject=str(path))


def _open_packed(path: Path, stack: contextlib.ExitStack) -> Any:
    """The index inside a gwtar (members) or a ZIM (entries), read one file at a time, else its
    sidecar ``X.search/`` (formats/search.md §8); UsageError for an archive with neither."""
    from archiver.search import archive

    packed = _packed(path, stack)
    label = f"{path}/{archive.PREFIX.rstrip('/')}"
    if packed.has(f"{archive.PREFIX}manifest.js"):
        return archive.archive_index(packed.read, label)
    side = archive.sidecar(path)
    if (side / "manifest.js").is_file():
        return archive.archive_index(archive.sidecar_read(side), str(side))
    raise UsageError(
        "has no search index (packed without one): run archiver index on it, or pack it again",
        subject=str(path),
    )


def _cmd_search(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        return _search(args, stack)


def _shown(query: str) -> str:
    """A query as the "nothing found" line names it: at most 64 characters (a 100 KB query is not
    printed back in full), as the date errors cut theirs."""
    return query if len(query) <= 64 else f"{query[:64]}… ({len(query)} characters)"


def _search(args: argparse.Namespace, stack: contextlib.ExitStack) -> int:
    """Exit 0; 1 when an archive's index is damaged: it is named on stderr (one line, as an error)
    and the other archives' results are still printed (formats/search.md §6.3)."""
    from archiver.errors import FormatError
    from archiver.search import query, store

    roots: list[Path] = []
    indexes = []
    skipped: list[tuple[Path, FormatError]] = []
    for a in args.archives:
        path = Path(a)
        try:
            if path.is_file():
                index = _open_packed(path, stack)
            else:
                path = _tree(a)
                index = (
                    store.open_index(path, str(path / store.INDEX_DIR))
                    if store.has_index(path)
                    else store.memory_index(path)
                )
        except FormatError as e:
            skipped.append((path, e))
            continue
        roots.append(path)
        indexes.append(index)
    found = None
    while found is None:
        try:
            found = query.search(indexes, args.query, limit=args.limit, offset=args.offset)
        except FormatError as e:
            a = query.damaged_index(indexes, e)
            if a < 0:
                raise
            skipped.append((roots.pop(a), e))
            del indexes[a]
    for _path, e in skipped:  # (the last archive left: its error line as before)
        print(
            f"archiver: {_escaped(str(e))}" + (" (searched without it)" if indexes else ""), file=sys.stderr
        )
    code = 1 if skipped else 0
    if skipped and not indexes:
        return code
    if args.json:
        doc = {
            "query": args.query,
            "total": found.total,
            "offset": found.offset,
            "limit": found.limit,
            "results": [
                {
                    "archive": str(roots[r.archive]),
                    "path": r.path,
                    "title": r.title,
                    "score": r.score,
                    "snippet": r.snippet.text,
                    "marks": [list(m) for m in r.snippet.marks],
                }
                for r in found.results
            ],
            "skipped": [{"archive": str(p), "reason": str(e)} for p, e in skipped],
        }
        print(json.dumps(doc, ensure_ascii=False, indent=1))
        return code
    if not found.results:
        print(f"nothing found for {_escaped(_shown(args.query))}" if not found.total else "no more results")
        return code
    for n, r in enumerate(found.results, found.offset + 1):
        text, at, out = r.snippet.text, 0, []
        for a, b in r.snippet.marks:
            out += [text[at:a], "[", text[a:b], "]"]
            at = b
        out.append(text[at:])
        line = ("… " if r.snippet.before else "") + "".join(out) + (" …" if r.snippet.after else "")
        print(f"{n}. {_escaped(r.title or r.path)}")
        where = roots[r.archive]
        print(f"   {_escaped(str(where / r.path) if where.is_dir() else f'{where}#/{r.path}')}")
        print(f"   {_escaped(' '.join(line.split()))}")
    shown = found.offset + len(found.results)
    print(
        f"{shown} of {found.total} results" + (f" (--offset {shown} for more)" if shown < found.total else "")
    )
    return code
