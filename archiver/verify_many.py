"""``archiver verify`` over many archives of every format: the targets in the order they were given
(a folder with ``-r`` stands for the archives in it, sorted), checked in parallel on every core,
reported in that order whatever finished first, and as JUnit XML for CI (``--junit FILE``).

Each archive gives one :class:`Verdict` (picklable: it comes back from a worker process) with its
exit code (0 valid, 1 invalid, 2 unreadable), the lines ``verify`` prints and its JSON report.
:func:`plan` (which archives) and :func:`junit_xml` (the XML document) are pure but for
:func:`plan`'s look at the disk; :func:`run` is the thin parallel loop.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from archiver import forks
from archiver.errors import UsageError
from archiver.walk import files_below

__all__ = ["Target", "Verdict", "junit_xml", "plan", "run", "verify_one"]

_ARCHIVE_SUFFIXES = (".gwtar.html", ".gwtar", ".warc", ".warc.gz", ".wacz", ".zim")


@dataclass(frozen=True)
class Target:
    """One archive to verify: its path and its format (``tree``, ``zim``, ``gwtar``, ``warc``,
    ``wacz``, or ``other``: handed to the gwtar reader, which says what it is not)."""

    path: Path
    format: str


@dataclass
class Verdict:
    """What verifying one target (or failing to find one) gave."""

    path: str
    format: str
    code: int
    out: list[str] = field(default_factory=list)  # printed on stdout: problems, warnings, the verdict
    err: list[str] = field(default_factory=list)  # printed on stderr: why it could not be read
    doc: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _format_of(path: Path) -> str:
    from archiver.detect import kind_of, refuse_arc
    from archiver.tree_verify import is_tree
    from archiver.zim.structure import split_parts

    if path.is_dir():
        return "tree" if is_tree(path) else "folder"
    try:
        refuse_arc(path)
    except UsageError:
        return "arc"  # one message from every command (formats/warc.md §1)
    if not path.exists() and split_parts(path):
        return "zim"  # a split ZIM named by its base name (X.zim for X.zimaa …)
    if path.name.lower().endswith((".warc", ".warc.gz")):
        return "warc"
    if path.name.lower().endswith(".wacz"):
        return "wacz"
    try:
        kind = kind_of(path)
    except UsageError:
        return "other"  # the gwtar reader names what is wrong (missing, unreadable)
    return kind if kind in ("zim", "gwtar", "warc", "wacz") else "other"


def _found(folder: Path) -> list[Target]:
    """The archives in ``folder`` and below, sorted: trees (folders with a manifest), gwtar, ZIM
    (split ones by their base name), WARC and WACZ files."""
    from archiver.tree_verify import is_tree

    found = sorted(Path(x) for x in files_below(folder))  # no recursion: a folder nested thousands deep
    out: list[Target] = [Target(folder, "tree")] if is_tree(folder) else []
    for x in found:
        if x.name == "manifest.jsonl" and x.parent.name == "_archiver" and x.parent.parent != folder:
            out.append(Target(x.parent.parent, "tree"))
        elif x.name.endswith(".zimaa"):
            out.append(Target(x.with_name(x.name[:-2]), "zim"))
        elif x.name.lower().endswith(_ARCHIVE_SUFFIXES):
            out.append(Target(x, _format_of(x)))
    return sorted(set(out), key=lambda t: str(t.path))


def plan(paths: Sequence[Path], recursive: bool) -> list[Target | Verdict]:
    """What ``verify PATHS`` checks, in order: a target per archive, or a verdict (exit 2) for a
    path that names none (a folder without ``-r``, a folder with no archive)."""
    items: list[Target | Verdict] = []
    for path in paths:
        fmt = _format_of(path)
        if fmt != "folder" and not (recursive and fmt == "tree"):
            items.append(Target(path, fmt))
            continue
        if not recursive:
            why = "is a folder (use -r to verify every archive in it)"
            items.append(Verdict(str(path), "folder", 2, err=[f"archiver: {path}: {why}"], problems=[why]))
            continue
        found = _found(path)
        if not found:
            why = "no tree, gwtar, ZIM, WARC or WACZ files in this folder"
            items.append(Verdict(str(path), "folder", 2, err=[f"archiver: {path}: {why}"], problems=[why]))
        items.extend(found)
    return items


def _lines(shown: str, report: Any, counted: str) -> list[str]:
    from archiver.cli.output import _escaped

    out = [f"{shown}: {_escaped(str(p))}" for p in report.problems]
    out += [f"{shown}: warning: {_escaped(str(w))}" for w in report.warnings]
    summary = "OK" if report.ok else "INVALID"
    if report.ok and report.warnings:
        summary += f", {len(report.warnings)} warning(s) (--strict counts them as problems)"
    return [*out, f"{shown}: {summary} ({counted})"]


def verify_one(target: Target, *, strict: bool, links: bool, meter: bool = False) -> Verdict:
    """Verify one archive (in this process or a worker's)."""
    from archiver.cli.output import _escaped

    started = time.monotonic()
    path, fmt = target.path, target.format
    shown = _escaped(str(path))
    verdict: Verdict
    if fmt == "arc":
        from archiver.detect import refuse_arc

        refuse_arc(path)  # raises: ARC is not supported, convert it
    if fmt in ("warc", "wacz"):
        from archiver.warc.verify import verify as verify_warc

        report: Any = verify_warc(path)
        extra = f", {report.index_lines} index lines" if report.kind == "wacz" else ""
        counted = f"{report.kind}, {report.records} records{extra}"
        doc_of: Callable[[], dict[str, Any]] = report.to_json
    elif fmt == "tree":
        from archiver.tree_verify import verify_tree

        report = verify_tree(path, links=links)
        counted = f"{report.files} files, {report.links} links"
        doc_of = report.to_json
    elif fmt == "zim":
        from archiver import zim

        report = zim.verify(path, links=links)
        counted = f"{report.entries} entries"
        doc_of = lambda: {"format": "zim", **report.to_json()}  # noqa: E731
    else:
        from archiver import gwtar
        from archiver.progress import bytes_meter

        with bytes_meter(f"verify {path.name}", show=meter) as progress:
            g = gwtar.verify(path, progress=progress, links=links)
        if strict:
            g.strict()
        err = [f"archiver: {_escaped(p.line(str(g.path)))}" for p in g.problems] if g.unreadable else []
        out = [f"{shown}: UNREADABLE"] if g.unreadable else [_escaped(line) for line in g.lines()]
        verdict = Verdict(
            str(path), fmt, g.exit_code, out=out, err=err, doc=g.to_json(),
            problems=[p.line(str(g.path)) for p in g.problems],
            warnings=[p.line(str(g.path)) for p in g.warnings],
        )  # fmt: skip
        verdict.seconds = time.monotonic() - started
        return verdict
    if strict:
        report.strict()
    verdict = Verdict(
        str(path), fmt, 0 if report.ok else 1, out=_lines(shown, report, counted), doc=doc_of(),
        problems=[str(p) for p in report.problems], warnings=[str(w) for w in report.warnings],
    )  # fmt: skip
    verdict.seconds = time.monotonic() - started
    return verdict


def _guarded(target: Target, strict: bool, links: bool, meter: bool) -> Verdict:
    """:func:`verify_one`, with an archiver error (an unreadable file) as an exit-2 verdict."""
    from archiver.errors import ArchiverError

    started = time.monotonic()
    try:
        return verify_one(target, strict=strict, links=links, meter=meter)
    except ArchiverError as e:
        code = 2 if e.exit_code == 2 else 1
        return Verdict(str(target.path), target.format, code, out=[f"{target.path}: UNREADABLE"] if code == 2
                       else [f"{target.path}: INVALID ({e.message})"], err=[f"archiver: {e}"],
                       problems=[str(e)], seconds=time.monotonic() - started)  # fmt: skip


def run(
    items: list[Target | Verdict], *, strict: bool, links: bool, jobs: int, meter: bool
) -> Iterator[Verdict]:
    """The verdicts of ``items`` in their order, targets checked ``jobs`` at a time (worker
    processes when more than one), each yielded as soon as it and those before it are done."""
    targets = [i for i in items if isinstance(i, Target)]
    if jobs <= 1 or len(targets) <= 1:
        for item in items:
            yield item if isinstance(item, Verdict) else _guarded(item, strict, links, meter)
        return
    _preload(targets)  # imported once here, inherited by every worker
    context = multiprocessing.get_context("fork")  # the CLI holds no thread yet: a fork is cheap
    workers = min(jobs, len(targets))
    with concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=forks.leave_to_parent
    ) as pool:
        with forks.held():  # a "fork" pool forks every worker at the first submit (archiver/forks.py)
            futures = {id(t): pool.submit(_guarded, t, strict, links, False) for t in targets}
        try:
            for item in items:
                yield item if isinstance(item, Verdict) else futures[id(item)].result()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _preload(targets: Sequence[Target]) -> None:
    """Import the readers the targets need, so that the forked workers inherit them."""
    formats = {t.format for t in targets}
    names = {"warc": "archiver.warc.verify", "wacz": "archiver.warc.verify", "tree": "archiver.tree_verify",
             "zim": "archiver.zim"}  # fmt: skip
    for fmt in formats:
        importlib.import_module(names.get(fmt, "archiver.gwtar"))


#: Below this many bytes in all, archives are checked one by one: starting workers costs more.
PARALLEL_BYTES = 64 << 20
_TREE_GUESS = 16 << 20  # a tree's size is not known without walking it


def jobs_default(items: Sequence[Target | Verdict]) -> int:
    """Every core this process may run on, when the archives are large enough to be worth it (at
    least :data:`PARALLEL_BYTES` in all), else 1."""
    total = 0
    for item in items:
        if isinstance(item, Target):
            with contextlib.suppress(OSError):
                total += _TREE_GUESS if item.path.is_dir() else item.path.stat().st_size
    if total < PARALLEL_BYTES:
        return 1
    return forks.cpus()


# ------------------------------------------------------------------------------------------ JUnit XML


def _xml_safe(text: str) -> str:
    """``text`` with what XML 1.0 cannot carry (control characters, lone surrogates from names that
    are not UTF-8, U+FFFE/U+FFFF) written as escapes; ElementTree escapes the markup characters."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\t\n\r" or (0x20 <= code < 0xD800) or (0xE000 <= code < 0xFFFE) or code > 0xFFFF:
            out.append(ch)
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def junit_xml(verdicts: Sequence[Verdict], *, seconds: float, timestamp: str) -> bytes:
    """The JUnit XML report of a ``verify`` run: one test suite, one test case per archive (named by
    its path, class ``archiver.verify.<format>``), a ``failure`` with the problem lines for an
    invalid archive, an ``error`` for one that could not be read, warnings in ``system-out``."""
    failures = sum(1 for v in verdicts if v.code == 1)
    errors = sum(1 for v in verdicts if v.code >= 2)
    counts = {"tests": str(len(verdicts)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", {"name": "archiver verify", **counts, "time": f"{seconds:.3f}"})
    suite = ET.SubElement(root, "testsuite", {"name": "archiver verify", **counts, "skipped": "0",
                                              "time": f"{seconds:.3f}", "timestamp": timestamp})  # fmt: skip
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", {"name": _xml_safe(v.path),
                                                 "classname": f"archiver.verify.{v.format}",
                                                 "time": f"{v.seconds:.3f}"})  # fmt: skip
        if v.code == 1:
            n = len(v.problems)
            message = f"{n} problem{'s' * (n != 1)}"
            failure = ET.SubElement(case, "failure", {"type": "INVALID", "message": message})
            failure.text = _xml_safe("\n".join(v.problems))
        elif v.code >= 2:
            message = _xml_safe("; ".join(v.problems)[:500])
            error = ET.SubElement(case, "error", {"type": "UNREADABLE", "message": message})
            error.text = _xml_safe("\n".join(v.err or v.problems))
        text = "\n".join([*(f"warning: {w}" for w in v.warnings), *v.out[-1:]])
        if text:
            ET.SubElement(case, "system-out").text = _xml_safe(text)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: Path, data: bytes) -> None:
    """``data`` at ``path``, atomically (a temporary name beside it, then renamed)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
