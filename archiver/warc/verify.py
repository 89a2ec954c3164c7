"""``verify`` and ``ls`` of WARC and WACZ files (formats/warc.md §6).

A WARC: every record parsed and its digests checked (:mod:`archiver.warc.read`). A WACZ: its zip
entry names (no ``..``, no absolute names, no duplicates), ``datapackage.json`` (every resource's
size and SHA-256), ``datapackage-digest.json``, the ``pages.jsonl`` header, each ``archive/`` WARC
(STORED, every record), and every CDXJ line against the records (a record at that offset, of that
length, URL and digest). Findings go in two lists as for ZIM (formats/zim.md §7.2): problems (exit
1) and warnings (exit 0 unless ``--strict``). Memory is bounded except for the map of records a
WACZ's index is checked against (one small tuple a record).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from archiver.errors import FormatError, UsageError
from archiver.findings import Verdict
from archiver.warc import cdxj
from archiver.warc import digest as digests
from archiver.warc.read import Finding, Record, iter_records

__all__ = ["Report", "is_wacz", "ls", "verify"]

_LISTED = frozenset({"response", "resource", "revisit"})
MAX_JSON = 64 << 20  # datapackage.json larger than this is hostile


@dataclass
class Report(Verdict):
    path: Path
    kind: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    records: int = 0
    index_lines: int = 0

    def add(self, findings: list[Finding], where: str = "") -> None:
        for x in findings:
            (self.warnings if x.warning else self.problems).append(f"{where}{x}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict; bytes that are not UTF-8 (read as surrogates) become ``\\udcXX`` text."""
        problems, warnings = [_printable(x) for x in self.problems], [_printable(x) for x in self.warnings]
        return {
            "format": self.kind,
            "path": _printable(str(self.path)),
            "ok": self.ok,
            "records": self.records,
            "index_lines": self.index_lines,
            "problems": problems,
            "warnings": warnings,
        }


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def is_wacz(path: Path) -> bool:
    return path.name.lower().endswith(".wacz")


def _open(path: Path) -> IO[bytes]:
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise UsageError("no such file", subject=str(path)) from None
    except OSError as e:
        raise UsageError(f"cannot read: {e.strerror}", subject=str(path)) from None


def verify(path: Path) -> Report:
    """Check the WARC or WACZ at ``path``."""
    if is_wacz(path):
        return _verify_wacz(path)
    report = Report(path, "warc")
    findings: list[Finding] = []
    with _open(path) as f:
        for _ in iter_records(f, findings):
            report.records += 1
    report.add(findings)
    if not report.records and not findings:
        report.problems.append("no WARC records")
    return report


def ls(path: Path) -> Iterator[tuple[str, Record]]:
    """(WARC name, record) for every response, resource and revisit record, in file order; a fault
    ends the listing with a :class:`FormatError`."""
    if is_wacz(path):
        try:
            zf = zipfile.ZipFile(_open(path))
        except (zipfile.BadZipFile, OSError) as e:
            raise FormatError(f"not a readable WACZ (zip): {e}", subject=str(path)) from None
        with zf:
            bad = _unsafe_names(zf)
            if bad:
                raise FormatError(bad[0], subject=str(path))
            warcs = sorted(n for n in zf.namelist() if n.startswith("archive/") and not n.endswith("/"))
            if not warcs:
                raise FormatError("no WARC in archive/", subject=str(path))  # verify's problem too
            for name in warcs:
                try:
                    with zf.open(name) as f:
                        yield from _ls_warc(f, str(path), name)
                except (zipfile.BadZipFile, zlib.error, EOFError, ValueError) as e:
                    raise FormatError(f"{name}: damaged zip data: {e}", subject=str(path)) from None
        return
    with _open(path) as f:
        yield from _ls_warc(f, str(path), path.name)


def _ls_warc(f: IO[bytes], subject: str, name: str) -> Iterator[tuple[str, Record]]:
    findings: list[Finding] = []
    for rec in iter_records(f, findings):
        if rec.type in _LISTED:
            yield name, rec
    bad = [x for x in findings if not x.warning]
    if bad:
        raise FormatError(f"{name}: {bad[0]}" if subject.endswith(".wacz") else str(bad[0]), subject=subject)


def _unsafe_names(zf: zipfile.ZipFile) -> list[str]:
    out, seen = [], set()
    for info in zf.infolist():
        n = info.filename
        parts = n.split("/")
        if (
            n.startswith("/")
            or "\\" in n
            or ".." in parts
            or (len(n) > 1 and n[1] == ":")
            or any(ord(c) < 32 for c in n)
        ):
            out.append(f"unsafe zip entry name {n[:200]!r} (hostile)")
        if n in seen:
            out.append(f"zip entry {n[:200]!r} appears twice (hostile)")
        seen.add(n)
    return out


def _verify_wacz(path: Path) -> Report:
    report = Report(path, "wacz")
    try:
        zf = zipfile.ZipFile(_open(path))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        report.problems.append(f"not a readable WACZ (zip): {e}")
        return report
    with zf:
        try:
            _check_wacz(zf, report)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError) as e:
            report.problems.append(f"damaged zip data: {e}")
    return report


def _hash_entry(zf: zipfile.ZipFile, name: str, algorithm: str = "sha256") -> tuple[str, int]:
    sha, size = hashlib.new(algorithm), 0
    with zf.open(name) as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
    return sha.hexdigest(), size


def _json_entry(zf: zipfile.ZipFile, name: str, report: Report) -> Any:
    if zf.getinfo(name).file_size > MAX_JSON:
        report.problems.append(f"{name}: larger than {MAX_JSON} bytes")
        return None
    try:
        return json.loads(zf.read(name))
    except ValueError as e:
        report.problems.append(f"{name}: not JSON ({e})")
        return None
    except RecursionError:  # arrays or objects nested past the decoder's stack (§6.2)
        report.problems.append(f"{name}: JSON nested too deep")
        return None


def _check_wacz(zf: zipfile.ZipFile, report: Report) -> None:
    bad = _unsafe_names(zf)
    if bad:
        report.problems += bad
        return  # nothing else is read from a hostile zip
    names = set(zf.namelist())
    files = sorted(n for n in names if not n.endswith("/"))
    package = _json_entry(zf, "datapackage.json", report) if "datapackage.json" in names else None
    if "datapackage.json" not in names:
        report.problems.append("no datapackage.json")
    listed: set[str] = set()
    if isinstance(package, dict):
        if package.get("profile") not in ("data-package", "wacz-package", None):
            report.problems.append(
                f"datapackage.json: profile {package.get('profile')!r} (readers refuse it)"
            )
        if package.get("wacz_version") != "1.1.1":
            report.warnings.append(
                f"datapackage.json: wacz_version {package.get('wacz_version')!r}, not 1.1.1"
            )
        resources = package.get("resources")
        if not isinstance(resources, list):
            report.problems.append("datapackage.json: no resources list")
            resources = []
        for res in resources:
            if not isinstance(res, dict) or not isinstance(res.get("path"), str):
                report.problems.append("datapackage.json: a resource without a path")
                continue
            p = res["path"]
            listed.add(p)
            if p not in names:
                report.problems.append(f"datapackage.json: {p[:200]!r} is listed but not in the zip")
                continue
            declared = _declared(res)
            if isinstance(declared, str):
                report.problems.append(f"datapackage.json: {p[:200]!r}: {declared}")
                continue
            algorithm, want, want_size = declared
            digest, size = _hash_entry(zf, p, algorithm)
            if want_size != size:
                report.problems.append(f"{p}: {size} bytes, datapackage.json says {want_size!r}")
            if want != digest:
                report.problems.append(
                    f"{p}: {algorithm.upper()} {digest} does not match datapackage.json's {want!r}"
                )
    elif package is not None:
        report.problems.append("datapackage.json: not a JSON object")
    for n in files:
        if n not in listed and n not in ("datapackage.json", "datapackage-digest.json"):
            report.problems.append(f"{n}: not listed in datapackage.json")
    if "datapackage-digest.json" not in names:
        report.warnings.append("no datapackage-digest.json")
    elif "datapackage.json" in names:
        doc = _json_entry(zf, "datapackage-digest.json", report)
        want = f"sha256:{hashlib.sha256(zf.read('datapackage.json')).hexdigest()}"
        if not isinstance(doc, dict) or str(doc.get("hash", "")).lower() != want:
            report.problems.append("datapackage-digest.json: its hash does not match datapackage.json")
    _check_pages(zf, names, report)
    records = _check_warcs(zf, files, report)
    _check_index(zf, names, records, report)


def _declared(res: dict[str, Any]) -> tuple[str, str, object] | str:
    """(hashlib's algorithm, the hex digest, the size) a datapackage.json resource declares: WACZ
    1.1.x ``hash`` (``sha256:<hex>`` or ``md5:<hex>``) and ``bytes``, or WACZ 1.0.0 ``stats``
    (``{"hash": "<hex>", "bytes": N}``) with ``hashing`` (``sha256`` or ``md5``); else the reason
    it cannot be checked."""
    stats = res.get("stats")
    if "hash" not in res and isinstance(stats, dict):  # WACZ 1.0.0 (py-wacz before 0.3)
        label, value, size = str(res.get("hashing", "sha256")), str(stats.get("hash", "")), stats.get("bytes")
    elif "hash" in res:
        label, _, value = str(res["hash"]).rpartition(":")
        size = res.get("bytes")
    else:
        return "no hash (WACZ 1.1.1: hash and bytes; 1.0.0: stats)"
    algorithm = label.lower().replace("-", "")
    if algorithm not in ("sha256", "md5"):
        return f"hash algorithm {label[:40]!r} is not sha256 or md5"
    return algorithm, value.lower(), size


def _lines(f: IO[bytes]) -> Iterator[str]:
    """The lines of ``f``, each read with a bound: a line longer than :data:`cdxj.MAX_LINE` is yielded
    cut there (and then fails to parse), and ends the walk (a zip bomb of one endless line)."""
    while line := f.readline(cdxj.MAX_LINE + 1):
        yield line.decode("utf-8", "replace")
        if len(line) > cdxj.MAX_LINE:
            return


def _check_pages(zf: zipfile.ZipFile, names: set[str], report: Report) -> None:
    if "pages/pages.jsonl" not in names:
        report.warnings.append("no pages/pages.jsonl (WACZ 1.1.1 requires one; wacz create leaves it out)")
        return
    with zf.open("pages/pages.jsonl") as raw:
        for number, line in enumerate(_lines(raw), 1):
            if len(line) > cdxj.MAX_LINE:
                report.problems.append(f"pages/pages.jsonl line {number}: longer than {cdxj.MAX_LINE}")
                return
            try:
                doc = json.loads(line)
            except ValueError:
                report.problems.append(f"pages/pages.jsonl line {number}: not JSON")
                continue
            except RecursionError:  # nested past the decoder's stack (§6.2)
                report.problems.append(f"pages/pages.jsonl line {number}: JSON nested too deep")
                continue
            if number == 1:
                if not isinstance(doc, dict) or not str(doc.get("format", "")).startswith("json-pages-"):
                    report.problems.append("pages/pages.jsonl line 1: not the json-pages-1.0 header")
            elif not isinstance(doc, dict) or not isinstance(doc.get("url"), str) or "ts" not in doc:
                report.problems.append(f"pages/pages.jsonl line {number}: a page needs url and ts")


def _check_warcs(zf: zipfile.ZipFile, files: list[str], report: Report) -> dict[tuple[str, int], tuple]:
    records: dict[tuple[str, int], tuple] = {}
    warcs = [n for n in files if n.startswith("archive/")]
    if not warcs:
        report.problems.append("no WARC in archive/")
    for name in warcs:
        if zf.getinfo(name).compress_type != zipfile.ZIP_STORED:
            report.problems.append(f"{name}: DEFLATE-compressed (must be STORED: replay cannot seek in it)")
        findings: list[Finding] = []
        with zf.open(name) as f:
            for rec in iter_records(f, findings):
                report.records += 1
                records[(name.split("/", 1)[1], rec.offset)] = (rec.length, rec.uri, rec.payload_digest)
        report.add(findings, f"{name}: ")
    return records


def _index_lines(zf: zipfile.ZipFile, names: set[str], report: Report) -> Iterator[tuple[str, str]]:
    plain = sorted(n for n in names if n.startswith("indexes/") and n.endswith((".cdx", ".cdxj")))
    for name in plain:
        with zf.open(name) as raw:
            for line in _lines(raw):
                yield name, line
    if "indexes/index.idx" in names and "indexes/index.cdx.gz" in names:
        with zf.open("indexes/index.cdx.gz") as raw, gzip.open(raw, "rb") as g:
            for line in _lines(g):  # type: ignore[arg-type]
                yield "indexes/index.cdx.gz", line
    elif not plain:
        report.problems.append("no index (indexes/index.cdxj, or index.idx with index.cdx.gz)")


def _check_index(zf: zipfile.ZipFile, names: set[str], records: dict, report: Report) -> None:
    last = b""
    for name, line in _index_lines(zf, names, report):
        if not line.strip():
            continue
        report.index_lines += 1
        where = f"{name} line {report.index_lines}"
        entry = cdxj.parse_line(line)
        if isinstance(entry, str):
            report.problems.append(f"{where}: {entry}")
            continue
        key = line.encode("utf-8")
        if key < last:
            report.warnings.append(f"{where}: not sorted")
        last = key
        f = entry.fields
        try:
            at = (str(f["filename"]), int(f["offset"]))
        except (KeyError, ValueError, TypeError):
            report.problems.append(f"{where}: no filename and offset")
            continue
        found = records.get(at)
        if found is None:
            report.problems.append(f"{where}: no record at offset {at[1]} of {at[0][:200]!r}")
            continue
        length, url, digest = found
        if str(f.get("length")) != str(length):
            report.problems.append(f"{where}: length {f.get('length')!r}, the record's is {length}")
        if f.get("url") != url:
            report.problems.append(f"{where}: url {str(f.get('url'))[:200]!r}, the record's is {url[:200]!r}")
        if (
            "digest" in f
            and not str(digest).startswith("sha256:")
            and not digests.same(str(f["digest"]), digest)
        ):
            report.problems.append(f"{where}: digest {f['digest']!r}, the record's is {digest!r}")
