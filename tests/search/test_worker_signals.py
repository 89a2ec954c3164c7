"""The index build's worker processes leave signals to their parent (archiver/search/store.py).

A fork copies the parent's signal handlers. Inside ``safefs.interruptible`` (pack, import, extract)
SIGTERM raises :class:`KeyboardInterrupt`, so the pool's own ``terminate`` at the end of a good build
made each worker print a traceback, now and then, under a one-line success; and Ctrl-C, which the
terminal sends to the whole process group, one from each worker beside the parent's message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _tree(root: Path, pages: int) -> Path:
    for i in range(pages):
        (root / f"p{i}.html").write_text(
            f"<!DOCTYPE html><title>Page {i}</title><h1>Heading {i}</h1><p>word{i} shared text</p>",
            encoding="utf-8",
        )
    return root


_HANDLERS = """
import signal
import sys
from pathlib import Path
from archiver import safefs
from archiver.search import store
with safefs.interruptible(), store._Extractor(Path(sys.argv[1]), workers=2) as ex:
    assert ex._pool is not None, "the test needs the pool of two workers"
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)  # the parent's handler
    got = [ex._pool.apply(signal.getsignal, (s,)) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]
print(got == [signal.SIG_DFL, signal.SIG_DFL, signal.SIG_IGN], got)
"""


def test_a_worker_dies_by_sigterm_and_ignores_sigint_inside_an_interruptible_block(tmp_path: Path) -> None:
    # In a process of its own: the pool forks only from a single-threaded process, and a test
    # process that ran a browser or a server before keeps threads (seen under xdist in CI).
    run = subprocess.run(
        [sys.executable, "-c", _HANDLERS, str(_tree(tmp_path, 4))],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("True "), run.stdout


_BUILD = """
import sys
from pathlib import Path
from archiver import safefs
from archiver.search import store
root = Path(sys.argv[1])
for _ in range(int(sys.argv[2])):
    with safefs.interruptible(), store._Extractor(root, workers=2) as ex:
        assert ex._pool is not None
        for _page in ex.pages(store._pages(root)):
            pass
print("built")
"""


def test_builds_inside_an_interruptible_block_print_nothing_but_their_result(tmp_path: Path) -> None:
    root = _tree(tmp_path, 40)
    run = subprocess.run(
        [sys.executable, "-c", _BUILD, str(root), "8"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "built\n"
    assert run.stderr == ""


_INDEX = """
import os, signal, sys
from archiver.search import store
sig, tree = int(sys.argv[1]), sys.argv[2]
real = store._Extractor.__enter__
def trap(self):
    got = real(self)
    assert self._pool is not None, "the test needs the pool"
    os.kill(os.getpid(), sig)
    return got
store._Extractor.__enter__ = trap
from archiver.cli import entry
sys.argv = ["archiver", "index", tree]
sys.exit(entry())
"""


def test_index_stopped_by_sigterm_or_sighup_is_an_interruption(tmp_path: Path) -> None:
    """`archiver index` while its pool works: SIGTERM and SIGHUP end it as Ctrl-C does (exit 130,
    one line, no index and no temporary left). Before, they killed it (the default action) and the
    workers, writing to a dead parent, printed BrokenPipeError tracebacks (a random-signal stress:
    10 of 12 runs)."""
    import signal

    from tests.zim.conftest import build_tree

    text = "word shared text " * 1200
    files = {
        f"p{i}.html": f"<!DOCTYPE html><title>Page {i}</title><p>{text}{i}</p>".encode() for i in range(120)
    }
    tree = build_tree(tmp_path / "tree", files)  # past the pool's thresholds (store.workers_for)
    before = sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        run = subprocess.run(
            [sys.executable, "-c", _INDEX, str(int(sig)), str(tree)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 130, (sig.name, run.returncode, run.stderr[-2000:])
        assert run.stderr.strip().splitlines() == ["archiver: interrupted"], run.stderr[-2000:]
        after = sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))
        # nothing added but the private working folder (tree.md section 9.2), empty
        assert [p for p in after if p != "_archiver/tmp"] == before
        assert not (tree / "_archiver" / "tmp").exists() or list((tree / "_archiver" / "tmp").iterdir()) == []
