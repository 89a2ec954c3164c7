"""``merge`` of shards whose headers each hold 300,000 seeds (a capture of a large seeds file), as the
attack: the merged header's seeds were collected by looking each up in a list (dab4b1c: 40,000 seeds
in two shards took 5 s of CPU, 300,000 would take five minutes). Now each shard's seeds in order, each
once, as before, in one pass; run in a child with a timeout."""

from __future__ import annotations

from tests.timebox import child

CODE = """
from types import SimpleNamespace as N
from archiver import merge
a = [f"http://example.test/seed/{i}" for i in range(300_000)]
b = a[::-1] + ["http://example.test/last"]
shards = [N(header=N(seeds=s, options={}, home="http://example.test/", created="2026-01-01T00:00:00Z"))
          for s in (a, b)]
seeds = merge._header(shards, True).seeds
print(len(seeds), seeds == a + ["http://example.test/last"])
"""


def test_the_seeds_of_shards_of_300000_seeds_merge_in_linear_time() -> None:
    done = child("-c", CODE)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["300001", "True"], done.stdout
