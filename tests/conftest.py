from __future__ import annotations

import os
import signal
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

# CI runs are reproducible (derandomize) and every property runs at least 1,000 examples.
settings.register_profile(
    "ci",
    max_examples=1000,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    """The suite proves what Ctrl-C, SIGTERM and SIGHUP do to archiver's commands, so it runs with
    them acting, whatever started it: `nohup` leaves SIGHUP ignored and a shell's `cmd &` without job
    control SIGINT, every child inherits that (archiver rightly keeps an ignored signal ignored), and
    35 signal tests failed when the suite ran so. Here (the main process and each xdist worker) an
    ignored SIGINT or SIGHUP gets its default again, which the commands the tests start inherit."""
    for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGHUP, signal.SIG_DFL)):
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, default)


#: The files that take longest, each a few tests around a fixture that records or mirrors the whole
#: fixture site and compares every page in Chromium: run first, so that on two workers (pytest-xdist,
#: ``--dist loadfile --no-loadscope-reorder`` in tools/bootstrap) neither ends waiting for the other.
#: After them, files with more tests first (what xdist's own reordering does).
SLOW_FIRST = (
    "tests/warc/test_import_pywb.py",
    "tests/warc/test_import_pack.py",
    "tests/warc/test_import_render.py",
    "tests/capture/test_offline.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    counts = Counter(item.nodeid.partition("::")[0] for item in items)
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}

    def order(item: pytest.Item) -> tuple[int, int]:
        name = item.nodeid.partition("::")[0]
        return rank.get(name, len(rank)), -counts[name]

    items.sort(key=order)  # stable: the tests of one file keep their order


@pytest.fixture(autouse=True, scope="session")
def _own_cache_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What archiver caches for the user (serve's postings tables: formats/search.md §6.5) goes to a
    folder of this run, not to the user's ``~/.cache``; every process a test starts inherits it."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
