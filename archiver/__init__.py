"""archiver: turn live websites into durable, self-contained archives and serve them back.

The flow is one way: capture → tree → pack → archive → read / verify / serve.
The tree contract lives in ``formats/tree.md``; its pure core is :mod:`archiver.urls`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("archiver")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
