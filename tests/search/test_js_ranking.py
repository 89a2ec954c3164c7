"""js/search.js ranks as archiver/search/query.py does (formats/search.md §6): the same index, the
same queries, the same documents in the same order and the same snippets, under node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from archiver.search import query
from tests.search.helpers import build_files, html, plain_files

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node") or "node"

_JS = """
const s = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const files = input.files;
const m = files.manifest;
const ix = { documents: m.documents, avgdl: m.avgdl || 1 };
const out = input.queries.map((q) => {
  const clauses = s.parse(q);
  if (!clauses.length) return [];
  const looked = clauses.map((c) => c.terms.map((term, k) => {
    const prefix = c.prefix && k === c.terms.length - 1;
    const maps = s.shardsFor(m.shards, term, prefix).map((i) => new Map(files["t/" + i]));
    return s.pick(maps, term, prefix, m.lengths ? s.unpack(m.lengths) : null);
  }));
  const wanted = new Set();
  clauses.forEach((c) => (c.prefix ? c.terms.slice(0, -1) : c.terms).forEach((t) => wanted.add(t)));
  const last = clauses[clauses.length - 1];
  const prefix = last.prefix ? last.terms[last.terms.length - 1] : "";
  return s.rank([ix], clauses, [looked]).map((r) => {
    const g = m.docs.findIndex((d) => d[0] <= r[3] && r[3] <= d[1]);
    const f = files["d/" + g][r[3] - m.docs[g][0]];
    let k = 0;
    f[3].forEach((start, i) => { if (start <= r[4]) k = i; });
    const key = (a, b) => a * 1e6 + b;
    const x = m.text.findIndex((t) => key(t[0], t[1]) <= key(r[3], k) && key(r[3], k) <= key(t[2], t[3]));
    const row = x < 0 ? null : files["x/" + x].find((c) => c[0] === r[3] && c[1] === k);
    const sn = s.snippet(row ? row[2] : "", wanted, prefix);
    const more = k < f[3].length - 1;
    return [f[0], Math.round(r[1] * 1e6) / 1e6, sn.text, sn.marks, sn.before || k > 0, sn.after || more];
  });
});
process.stdout.write(JSON.stringify(out));
"""

PAGES = [
    ("a.html", html("Alpha guide", "<h1>Alpha</h1><p>the quick brown fox jumps over the lazy dog</p>")),
    ("b.html", html("Beta", "<p>brown bears and quick rivers; the fox is elsewhere</p><p>guide</p>")),
    ("c.html", html("Gamma guide to foxes", "<h2>Fox</h2><p>foxes, foxglove, fox fox fox</p>")),
    ("d.html", html("東京", "<p>東京都の天気予報です。中华人民共和国。Café ÉCOLE straße</p>")),
    ("e.html", html("Quick", "<p>" + "filler " * 300 + "quick brown</p>")),
    (
        "f.html",
        html(
            "Long", "".join(f"<p>{'padding ' * 120} part{i}</p>" for i in range(6)) + "<p>a rare needle</p>"
        ),
    ),
]
QUERIES = ["fox", "fox ", "quick brown", '"quick brown"', "guide", "alpha guide", "天気", "人民共和",
           "cafe ecole", "strasse", "fo", "the", "brown fox ", "nothing", "東", "needle", "padding part4 ",
           "part"]  # fmt: skip


def test_js_ranks_like_python() -> None:
    files = build_files(PAGES, shard_bytes=256, group_bytes=128)
    decoded = plain_files(files)
    index = query.Index(files.__getitem__, "mem")
    expected = []
    for q in QUERIES:
        found = query.search([index], q, limit=100)
        expected.append(
            [
                [
                    r.path,
                    r.score,
                    r.snippet.text,
                    [list(m) for m in r.snippet.marks],
                    r.snippet.before,
                    r.snippet.after,
                ]
                for r in found.results
            ]
        )
    done = subprocess.run(
        [NODE, "-e", _JS, str(ROOT / "js" / "search.js")],
        input=json.dumps({"files": decoded, "queries": QUERIES}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(done.stdout)
    assert len(decoded) > 4  # several shards and fragment groups
    for q, want, have in zip(QUERIES, expected, got, strict=True):
        assert [r[0] for r in have] == [r[0] for r in want], q
        assert [r[1] for r in have] == [r[1] for r in want], q
        assert [r[2:] for r in have] == [r[2:] for r in want], q
    assert any(expected)
    needle = expected[QUERIES.index("needle")][0]
    assert needle[0] == "f.html" and "needle" in needle[2] and needle[4]  # the last chunk, not the first
    assert "part4" in expected[QUERIES.index("padding part4 ")][0][2]


_FORGED_JS = """
const s = require(process.argv[1]);
const out = JSON.parse(require("fs").readFileSync(0, "utf8")).map((flat) => {
  try {
    const found = s.pick([new Map([["w", flat]])], "w", false, null);
    return ["ok", [...found.get("w").values()].map((p) => p.positions.length)];
  } catch (e) {
    return ["error", e.message];
  }
});
process.stdout.write(JSON.stringify(out));
"""


def test_js_refuses_forged_format_1_postings_as_python_does() -> None:
    """The attack: a format 1 shard whose positions count is negative walked the search page's
    decoder back for good (the tab hung; Python's core was fixed for the same, query.valid_counts),
    and a count of 10**9 pushed a billion positions. Now the page says the index is damaged (the
    reader wraps the error) where Python refuses, and a count past the postings' end is cut there."""
    forged = [[0, 1, 0, 0, 5, 2, -7], [0, 1, 0, 0, 5, 2, -10, 0, 0, 0, 0, 0, 0, 0], [0, 1.5, 0, 0, 5, 2, 0],
              ["0", 1, 0, 0, 5, 2, 0], {"a": 1}]  # fmt: skip
    long = [0, 1, 0, 0, 5, 2, 10**9, 3, 4]
    done = subprocess.run(
        [NODE, "-e", _FORGED_JS, str(ROOT / "js" / "search.js")],
        input=json.dumps([*forged, long]),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out[:-1] == [["error", "postings are not a list of counts"]] * len(forged)
    assert out[-1] == ["ok", [2]]
    for flat in forged:
        assert not query.valid_counts(flat)
