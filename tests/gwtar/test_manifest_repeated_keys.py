"""A gwtar header whose ``let assets = {...}`` manifest holds 400,000 keys, one of them twice, as the
attack: each repeated key was found by ``keys.count`` of every key (dab4b1c: 40,000 keys took 9 s of
CPU, 400,000 would take 15 minutes; the header may be 32 MiB). Now one pass: the repeat is named, in a
child with a timeout, as it was."""

from __future__ import annotations

from pathlib import Path

from tests.timebox import child

CODE = """
import sys
from pathlib import Path
from archiver.gwtar import pack, parse, rules
folder = Path(sys.argv[1])
(folder / "tree").mkdir()
(folder / "tree" / "index.html").write_text("<html><title>t</title><body>hi</body></html>")
pack(folder / "tree", folder / "a.gwtar.html")
data = (folder / "a.gwtar.html").read_bytes()
head = data[: data.index(rules.END_MARK) + len(rules.END_MARK)]
start = head.index(b"let assets = ") + len(b"let assets = ")
close = head.index(b"</script>", start)
keys = b",".join(b'"k%d":{}' % i for i in range(400_000))
head = head[:start] + b"{" + keys + b',"k7":{}};' + head[close:]
ph = parse.parse_header(head)
print([p for p in ph.problems if "more than once" in str(p)])
"""


def test_a_manifest_of_400000_keys_with_one_repeated_is_read_in_linear_time(tmp_path: Path) -> None:
    done = child("-c", CODE, str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "manifest key 'k7' appears more than once" in done.stdout, done.stdout[-2000:]
