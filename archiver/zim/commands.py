"""The command-line shape of the ZIM functions: plain arguments in, text or one JSON object out, an exit
code back. ``archiver/cli.py`` parses options and calls these; nothing here parses ``argv``.

Exit codes: 0 success; 1 ``verify`` found problems; otherwise the error family's code
(``archiver.errors``: 2 usage, 3 format, 5 environment), with one line ``archiver: <what>`` on stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from archiver.errors import ArchiverError
from archiver.zim.extract import extract, ls
from archiver.zim.pack import pack
from archiver.zim.verify import verify

__all__ = ["extract_main", "ls_main", "pack_main", "verify_main"]


def _run(
    work: Callable[[], tuple[int, Any, str]], as_json: bool, stdout: TextIO | None, stderr: TextIO | None
) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        code, data, text = work()
    except ArchiverError as e:
        print(f"archiver: {e}", file=err)
        return e.exit_code
    if as_json:
        print(json.dumps(data, ensure_ascii=False), file=out)
    elif text:
        print(text, file=out)
    return code


def pack_main(
    src: Path,
    out: Path,
    *,
    metadata: dict[str, str] | None = None,
    allow_incomplete: bool = False,
    main: str | None = None,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``archiver pack SRC --format zim -o OUT``: prints a summary (or the :class:`PackResult` as JSON);
    warnings and skipped files go to stderr in text mode."""
    err = stderr or sys.stderr

    def work() -> tuple[int, Any, str]:
        r = pack(src, out, metadata=metadata, allow_incomplete=allow_incomplete, main=main)
        if not as_json:
            for w in r.warnings:
                print(f"archiver: warning: {w}", file=err)
            for path, why in r.skipped:
                print(f"archiver: skipped {path}: {why}", file=err)
        text = (
            f"{r.path}: {r.entries} entries, {r.redirects} redirects, {r.size / 1e6:.2f} MB "
            f"from {r.bytes_in / 1e6:.2f} MB ({r.source_kind}), main page {r.main}, {r.seconds:.1f} s"
        )
        return 0, r.to_json(), text

    return _run(work, as_json, stdout, stderr)


def verify_main(
    path: Path,
    *,
    links: bool = True,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``archiver verify FILE.zim``: every problem on its own line (or the report as JSON); exit 1 when
    there is any."""

    def work() -> tuple[int, Any, str]:
        report = verify(path, links=links)
        lines = [str(p) for p in report.problems]
        verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        lines.append(
            f"{path}: {verdict}; {report.entries} entries, {report.redirects} redirects, "
            f"{report.links} links in {report.documents} documents checked"
        )
        return (0 if report.ok else 1), report.to_json(), "\n".join(lines)

    return _run(work, as_json, stdout, stderr)


def ls_main(
    path: Path, *, as_json: bool = False, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """``archiver ls FILE.zim``: one entry per line (size, mimetype, path, ``→ target`` for redirects)."""

    def work() -> tuple[int, Any, str]:
        rows = []
        lines = []
        for e in ls(path):
            rows.append(
                {
                    "path": e.path,
                    "title": e.title,
                    "mimetype": e.mimetype,
                    "size": e.size,
                    "redirect": e.redirect_target,
                }
            )
            target = f" → {e.redirect_target}" if e.is_redirect else ""
            lines.append(f"{e.size:>12} {e.mimetype:<28} {e.path}{target}")
        return 0, rows, "\n".join(lines)

    return _run(work, as_json, stdout, stderr)


def extract_main(
    path: Path,
    out_dir: Path,
    *,
    force: bool = False,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``archiver extract FILE.zim -o DIR``: writes the tree, prints how many files."""

    def work() -> tuple[int, Any, str]:
        n = extract(path, out_dir, force=force)
        return 0, {"path": str(path), "out": str(out_dir), "files": n}, f"{out_dir}: {n} files"

    return _run(work, as_json, stdout, stderr)
