"""Write a big gzip WARC (many records) and report ``archiver verify``'s peak memory on it: the check
that verify streams (formats/warc.md §2). Not run in CI (a 1 GB file takes minutes to write).

    python tools/make_warcs.py /tmp/big.warc.gz --mib 1024
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import os
import resource
import subprocess
import sys
from pathlib import Path


def write(path: Path, mib: int, record_kib: int = 512) -> int:
    """A WARC of ``mib`` MiB of payload in records of ``record_kib`` KiB, one gzip member each."""
    body = os.urandom(record_kib * 1024)  # incompressible: the file is as big as its payload
    http = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n"
    block = http + body
    digest = "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode()
    count = mib * 1024 // record_kib
    with path.open("wb") as f:
        for i in range(count):
            head = (
                f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0-0-0-0-{i:012d}>\r\n"
                f"WARC-Date: 2026-01-02T03:04:05Z\r\nWARC-Target-URI: http://example.test/{i}\r\n"
                f"Content-Type: application/http;msgtype=response\r\nWARC-Block-Digest: {digest}\r\n"
                f"Content-Length: {len(block)}\r\n\r\n"
            )
            f.write(gzip.compress(head.encode() + block + b"\r\n\r\n", compresslevel=1, mtime=0))
    return count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--mib", type=int, default=1024)
    args = ap.parse_args()
    out = Path(args.out)
    count = write(out, args.mib)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    r = subprocess.run([sys.executable, "-m", "archiver", "verify", str(out)], env=env, text=True,
                       capture_output=True)  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(r.stdout.strip())
    print(
        f"{out}: {out.stat().st_size} bytes, {count} records; verify exit {r.returncode}, peak RSS {peak} KiB"
    )
    return r.returncode


if __name__ == "__main__":
    raise SystemExit(main())
