"""``archiver serve``: one Range-correct local server for trees, gwtar and ZIM files.

- :mod:`archiver.serve.ranges`: pure RFC 9110 Range and conditional-request decisions;
- :mod:`archiver.serve.paths`: pure request-path checks (path safety) and hrefs;
- :mod:`archiver.serve.sources`: what the PATHs served become (mounts);
- :mod:`archiver.serve.mounts`, :mod:`~archiver.serve.tree_mount`, :mod:`~archiver.serve.zim_mount`:
  what a request path maps to inside a file, gwtar file, tree or ZIM file;
- :mod:`archiver.serve.representation`: what a request is answered with;
- :mod:`archiver.serve.site`: every mount, the index and search pages, the answer cache;
- :mod:`archiver.serve.app`: the ASGI application;
- :mod:`archiver.serve.send`: putting a representation on the wire (one write, sendfile, chunks);
- :mod:`archiver.serve.server`: binding, limits and start-up on uvicorn;
- :mod:`archiver.serve.config`: nginx and Caddy configuration for hosting the same files.

The behaviour is specified in ``formats/serve.md`` and held to ``formats/vectors/serve/ranges.json``.
"""

from __future__ import annotations

from archiver.serve.app import App
from archiver.serve.config import print_config
from archiver.serve.server import make_app, running, serve

__all__ = ["App", "make_app", "print_config", "running", "serve"]
