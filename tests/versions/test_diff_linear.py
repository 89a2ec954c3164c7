"""``archiver diff`` of a page whose new version adds a line after each of its 100,000 lines, as the
attack: difflib's time grows with the product of the lines that differ for such pages (dab4b1c:
8,000 lines took 5.4 s of CPU, 100,000 would take a quarter of an hour). Past MAX_DIFF_WORK the diff
is one hunk, in the format difflib writes (checked against difflib where its diff is one hunk too);
below it, difflib's, as before. The attack runs in a child with a timeout."""

from __future__ import annotations

import difflib
import random

import pytest

from archiver.versions import diff
from tests.timebox import child


def _difflib(a: list[str], b: list[str]) -> list[str]:
    return list(difflib.unified_diff(a, b, "before", "after", n=1, lineterm=""))[2:]


def test_one_hunk_is_what_difflib_writes_when_its_diff_is_one_hunk(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(32)
    monkeypatch.setattr(diff, "MAX_DIFF_WORK", 0)
    checked = 0
    for _ in range(3000):
        common = [f"c{i}" for i in range(rng.randint(0, 4))]
        end = [f"e{i}" for i in range(rng.randint(0, 4))]
        a = common + [f"a{i}" for i in range(rng.randint(1, 5))] + end
        b = common + [f"b{i}" for i in range(rng.randint(1, 5))] + end
        assert diff._one_hunk(a, b) == _difflib(a, b), (a, b)
        checked += 1
    assert checked == 3000


def test_below_the_bound_the_diff_is_difflibs() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = [f"l{rng.randint(0, 30)}" for _ in range(rng.randint(0, 60))]
        b = [f"l{rng.randint(0, 30)}" for _ in range(rng.randint(0, 60))]
        want = _difflib("\n".join(a).split("\n"), "\n".join(b).split("\n"))  # as the texts split
        if len(want) > diff.MAX_DIFF_LINES:
            want = [*want[: diff.MAX_DIFF_LINES], f"… {len(want) - diff.MAX_DIFF_LINES} more lines"]
        assert diff.text_diff("\n".join(a), "\n".join(b)) == want


def test_a_line_added_after_each_of_100000_is_diffed_in_linear_time() -> None:
    code = (
        "from archiver.versions.diff import text_diff\n"
        "a = [f'line {i}' for i in range(100_000)]\n"
        "b = [x for i in range(100_000) for x in (f'line {i}', f'new {i}')]\n"
        "out = text_diff('\\n'.join(a), '\\n'.join(b))\n"
        "print(out[0]); print(out[1]); print(out[-1])\n"
    )
    done = child("-c", code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[:2] == ["@@ -1,100000 +1,200000 @@", " line 0"], done.stdout[:500]
