"""A real redis-server for the shared crawl state's tests: Debian's binary on a free loopback port,
its files in a temporary folder, AOF on when a test needs it (``appendfsync everysec``, the
setting formats/crawl-state.md §6.6 documents), stopped when the test ends."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """``start()``, ``stop()``, ``restart()``; ``url`` is ``redis://127.0.0.1:PORT/0``."""

    def __init__(self, folder: Path, *, aof: bool = False) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.aof = aof
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)

    def start(self) -> RedisServer:
        assert Path(REDIS_SERVER).exists(), "redis-server is installed (tools/bootstrap installs it)"
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        args += ["--save", "", "--daemonize", "no", "--logfile", str(self.folder / "redis.log")]
        args += ["--appendonly", "yes" if self.aof else "no", "--appendfsync", "everysec"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(redis.exceptions.ConnectionError):
                if self.client().ping():
                    return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.folder / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server did not start on port {self.port}:\n{log}")
            time.sleep(0.05)

    def stop(self, *, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        else:
            proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self, *, down: float = 0.0) -> None:
        """Kill the server (no shutdown save: only the AOF survives), wait ``down`` seconds, start it
        again on the same port."""
        self.stop(kill=True)
        time.sleep(down)
        self.start()


@contextlib.contextmanager
def redis_server(folder: Path, *, aof: bool = False) -> Iterator[RedisServer]:
    server = RedisServer(folder, aof=aof).start()
    try:
        yield server
    finally:
        server.stop()
