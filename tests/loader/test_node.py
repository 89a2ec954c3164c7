"""The loader's pure part under node: its own unit tests (``node --test js/test/``), and a cross-check
of the JS ``rel``/``resolveRef`` against Python's ``archiver.urls.rel`` (tree.md section 5) on tree
paths hypothesis makes up."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver import urls

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node") or "node"


def test_node_unit_tests_pass() -> None:
    done = subprocess.run([NODE, "--test", "js/test/"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)$", done.stdout, re.M).group(1))
    failed = int(re.search(r"^# fail (\d+)$", done.stdout, re.M).group(1))
    assert failed == 0 and passed >= 25


_CHECK = """
const loader = require(process.argv[1]);
const pairs = JSON.parse(require("fs").readFileSync(0, "utf8"));
const check = ([from, to, href]) => [loader.rel(from, to), (loader.resolveRef(from, href) || {}).path];
process.stdout.write(JSON.stringify(pairs.map(check)));
"""

# Names as tree.md section 4.1 makes them: any text except "/", never "", "." or "..", and "%" only in
# "%XX" escapes (of "/", "%", control bytes).
_name = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/%\x00"),
    min_size=1,
    max_size=12,
).filter(lambda s: s not in (".", "..")) | st.sampled_from(
    ["a%2Fb", "100%25", "x%00y", "index.html", "what?.html", "hash#1.png"]
)
_path = st.lists(_name, min_size=1, max_size=4).map("/".join)


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.large_base_example, HealthCheck.data_too_large, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(_path, _path), min_size=100, max_size=300))
def test_js_and_python_agree_on_hrefs(pairs: list[tuple[str, str]]) -> None:
    rows = [[a, b, urls.rel(a, b)] for a, b in pairs]
    done = subprocess.run(
        [NODE, "-e", _CHECK, str(ROOT / "js" / "loader.js")],
        input=json.dumps(rows),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for (a, b, href), (js_rel, js_path) in zip(rows, json.loads(done.stdout), strict=True):
        assert js_rel == href, (a, b)
        assert js_path == b, (a, href)
