"""archiver: turn live websites into durable, self-contained archives and serve them back.

The flow is one way: capture → tree → pack → archive → read / verify / serve.
The tree contract lives in ``formats/tree.md``; its pure core is :mod:`archiver.urls`.
"""

from __future__ import annotations

# The one place the version is written: pyproject.toml reads it from here ([tool.hatch.version]), so
# starting any command costs no importlib.metadata lookup (~0.1 s).
__version__ = "0.1.0"

__all__ = ["__version__"]
