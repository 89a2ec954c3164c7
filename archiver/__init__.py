"""archiver: turn live websites into durable, self-contained archives and serve them back.

The flow is one way: capture → tree → pack → archive → read / verify / serve.
The tree contract lives in ``formats/tree.md``; its pure core is :mod:`archiver.urls`.
"""

from __future__ import annotations

import sys


class _DatetimeBeforeMsgspec:
    """Imports datetime before msgspec, whichever module imports msgspec first, then leaves.

    msgspec's C part (0.23.0) takes datetime's C API as it is initialised and does not look at the
    result. When datetime was not yet imported, that import ran Python code, and a Ctrl-C (or
    SIGTERM/SIGHUP as one) landing in it (~1 ms) was lost: CPython dropped the pending error while
    msgspec set up its types, the import succeeded with the API pointer NULL, and the first Decoder
    whose type reached the datetime checks dereferenced it: a segmentation fault at archiver.tree's
    module-level decoders (random-signal stress of extract: 20 of 1,800 runs). Imported here, an
    interruption is a KeyboardInterrupt out of ``import msgspec`` (the next import tries again), and
    msgspec's own import of datetime is a lookup that runs no Python code. Not an ``import datetime``
    at the top of this module: that ~1 ms would come before a command's stop signals are held
    (archiver.start), and every import before msgspec's would pay it (``map``, ``ls``)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "msgspec":
            import datetime  # noqa: F401

            # a new list: the lookup under way goes on through the one it holds, no finder skipped
            sys.meta_path = [finder for finder in sys.meta_path if finder is not self]


if "msgspec" not in sys.modules:
    sys.meta_path.insert(0, _DatetimeBeforeMsgspec())

# The one place the version is written: pyproject.toml reads it from here ([tool.hatch.version]), so
# starting any command costs no importlib.metadata lookup (~0.1 s).
__version__ = "0.1.0"

__all__ = ["__version__"]
