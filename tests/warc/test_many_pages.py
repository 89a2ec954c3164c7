"""A WACZ whose pages/pages.jsonl lists 300,000 pages, as the attack: the seed pages of ``pack`` (and
the import) were kept in a list and each page looked up in it (dab4b1c: 40,000 pages took 5 s of CPU,
300,000 would take five minutes). Now a set beside the list: the same pages in the same order, in a
child with a timeout."""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.timebox import child
from tests.warc import corpus
from tests.warc.test_warc import run

PAGES = 300_000


def test_the_seed_pages_of_a_wacz_of_300000_pages_in_linear_time(tmp_path: Path) -> None:
    warc = corpus.warcio_warc(tmp_path / "good.warc.gz")
    assert run("pack", warc, "--format", "wacz", "-o", tmp_path / "good.wacz").returncode == 0
    with zipfile.ZipFile(tmp_path / "good.wacz") as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    lines = b"".join(
        b'{"url":"http://example.test/some/page/%d","ts":"2020"}\n' % (i % (PAGES - 7)) for i in range(PAGES)
    )
    entries["pages/pages.jsonl"] = b'{"format":"json-pages-1.0"}\n' + lines
    with zipfile.ZipFile(tmp_path / "many.wacz", "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    code = (
        "import sys\nfrom pathlib import Path\nfrom archiver.warc import sources\n"
        "_, pages = sources.sources_of([Path(sys.argv[1]), Path(sys.argv[1])])\n"
        "print(len(pages), pages[0], pages[-1])\n"
    )
    done = child("-c", code, str(tmp_path / "many.wacz"))
    assert done.returncode == 0, done.stderr[-2000:]
    main = "http://example.test/p0"
    assert done.stdout.split() == [str(PAGES - 7 + 1), main, f"http://example.test/some/page/{PAGES - 8}"], (
        done.stdout
    )
