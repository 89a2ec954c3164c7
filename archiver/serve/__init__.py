"""``archiver serve``: one Range-correct local server for trees, gwtar and ZIM files.

- :mod:`archiver.serve.ranges`: pure RFC 9110 Range and conditional-request decisions;
- :mod:`archiver.serve.sources`: what a request path maps to, and path safety;
- :mod:`archiver.serve.app`: the ASGI application and the uvicorn server;
- :mod:`archiver.serve.config`: nginx and Caddy configuration for hosting the same files.

The behaviour is specified in ``formats/serve.md`` and held to ``formats/vectors/serve/ranges.json``.
"""

from __future__ import annotations

from archiver.serve.app import App, make_app, running, serve
from archiver.serve.config import print_config

__all__ = ["App", "make_app", "print_config", "running", "serve"]
