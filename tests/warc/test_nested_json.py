"""JSON nested thousands deep in a WACZ, as the attack (formats/warc.md §6.2, "Nesting"): 5,000 open
brackets as datapackage.json, as a pages.jsonl line, as the JSON of a CDXJ line. Python's decoder
raises RecursionError near 1,000 levels, which no ``except ValueError`` caught: the old code (dab4b1c)
ended ``verify`` and ``pack --format gwtar|zim`` in a traceback and exit 70 (``RecursionError: maximum
recursion depth exceeded while decoding a JSON array``). Now ``verify`` names the entry (exit 1) and
``pack`` reads around it (exit 0). Each run is its own process (the CLI's own stack depth)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.warc import corpus
from tests.warc.test_strangers import repackage
from tests.warc.test_warc import run

DEEP = 5000


@pytest.fixture(scope="module")
def good_wacz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nested")
    warc = corpus.warcio_warc(folder / "good.warc.gz")
    assert run("pack", warc, "--format", "wacz", "-o", folder / "good.wacz").returncode == 0
    return folder / "good.wacz"


def _hostile(good: Path, dst: Path, where: str) -> Path:
    with zipfile.ZipFile(good) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    if where == "datapackage":  # the package itself: no digest can agree with it, so none is made again
        entries["datapackage.json"] = b"[" * DEEP + b"]" * DEEP
        with zipfile.ZipFile(dst, "w") as z:
            for name, data in entries.items():
                z.writestr(name, data)
        return dst
    if where == "pages":
        change = {"pages/pages.jsonl": entries["pages/pages.jsonl"] + b"[" * DEEP + b"\n"}
    else:
        line = b"com,example)/ 20200101000000 " + b'{"a":' * DEEP + b"\n"
        change = {"indexes/index.cdxj": line + entries["indexes/index.cdxj"]}
    return repackage(good, dst, change)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("where", ["datapackage", "pages", "cdxj"])
def test_json_nested_thousands_deep_is_a_problem_not_a_traceback(
    good_wacz: Path, tmp_path: Path, where: str
) -> None:
    wacz = _hostile(good_wacz, tmp_path / f"{where}.wacz", where)
    r = run("verify", wacz, process=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-300:])
    assert "nested too deep" in r.stdout, r.stdout
    for fmt in ("gwtar", "zim"):
        r = run("pack", wacz, "--format", fmt, "-o", tmp_path / f"out.{fmt}", process=True)
        assert "Traceback" not in r.stderr and r.returncode == 0, (fmt, r.returncode, r.stderr[-300:])
