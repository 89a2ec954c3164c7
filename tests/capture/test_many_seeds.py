"""A capture of 300,000 seeds (a seeds file of 11 MB; the file may hold 256 MiB), as the attack: the
crawler kept the seeds' keys in a list and looked each up in it (dab4b1c: 40,000 seeds took 5.5 s of
CPU to start, 300,000 would take five minutes). Now each key once, in order, in one pass; the crawler
is built in a child with a timeout."""

from __future__ import annotations

from pathlib import Path

from tests.timebox import child

CODE = """
import sys
from pathlib import Path
from archiver.capture.crawl import Crawler
from archiver.capture.options import CaptureOptions
seeds = [f"http://example.test/seed/{i}" for i in range(300_000)] + ["http://example.test/seed/7"]
crawler = Crawler(seeds, Path(sys.argv[1]) / "out", CaptureOptions())
keys = crawler.seed_keys
print(len(keys), keys[7], keys[-1])
crawler.state.close()
"""


def test_a_crawler_of_300000_seeds_starts_in_linear_time(tmp_path: Path) -> None:
    done = child("-c", CODE, str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["300000", "http://example.test/seed/7", "http://example.test/seed/299999"]
