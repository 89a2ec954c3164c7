"""Refuse HTML whose parsing would cost far more than its size, before archiver parses it
(formats/tree.md §9.5).

:func:`archiver.html_depth.bound_depth` bounds the nesting the tokenizer can see, but the HTML tree
builder has moves a linear text pass does not follow (an end tag that closes through elements, the
adoption agency, formatting elements reopened in every paragraph): a page of 160 KiB can make
Lexbor build millions of elements (3 GiB) or take seconds (tools/markup_bombs.py). So a page with
more than :data:`TRUSTED_TAGS` ``<`` is parsed first in a child process of its own, under an
address-space limit and a time limit; only a page that child parsed within both is parsed here.
Below :data:`TRUSTED_TAGS` no construction found costs more than about 0.1 s and 100 MB (the
worst known: a few hundred formatting elements reopened in each of a few hundred paragraphs).

The child is started on first use (one a process, a fresh interpreter that imports only the depth
pass and Lexbor; or, in a process that called :func:`fork_children`, a fork of it), reads pages
from a pipe and answers each; one that went over a limit, or died, is killed and the next page
starts another. Its time is its CPU, read from /proc while it parses, so a
loaded machine refuses no more than a quiet one. It dies with its parent (``PR_SET_PDEATHSIG``: with
the thread that started it, so one whose thread has ended is replaced).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO

from archiver.errors import EnvironmentProblem

__all__ = [
    "LIMIT_MIB",
    "LIMIT_SECONDS",
    "LIMIT_SECONDS_A_MIB",
    "MAX_RESULT",
    "SEARCH_TEXT",
    "TRUSTED_TAGS",
    "CostlyMarkup",
    "close_child",
    "fork_children",
    "limit_seconds",
    "needs_check",
    "run",
    "start_forked_child",
    "vet",
]

#: pages with at most this many "<" are parsed without the child's check
TRUSTED_TAGS = 1500
#: the child's address space, MiB (Lexbor's DOM of a 13 MB single-page specification fits easily)
LIMIT_MIB = 2048
#: seconds of CPU the child may take to parse one page: this, and LIMIT_SECONDS_A_MIB more for
#: each MiB of it (Lexbor parses documentation at 50-100 MiB/s: ten times the room at least). CPU,
#: not wall time, so that a loaded machine refuses no more than a quiet one.
LIMIT_SECONDS = 2.0
LIMIT_SECONDS_A_MIB = 1.0
#: seconds (wall) the child may take to start, or to answer once past its CPU (a backstop)
_START_SECONDS = 60.0
#: how often the parent reads the child's CPU while it parses, seconds
_POLL = 0.05

_OK, _MEMORY, _READY = b"k", b"m", b"r"
_HEAD = struct.Struct(">Qc")  # the document's length, and b"t" (UTF-8 text) or b"b" (bytes as fetched)
_RESULT = struct.Struct(">Q")  # a job's result's length
#: a job's result larger than this is taken for the child's fault (a search page's text is 1 MiB at most)
MAX_RESULT = 64 << 20
#: jobs the child does with a document (besides parsing it) and answers with a result: b"s" the
#: search text of a decoded page (:func:`archiver.search.text.page_of`, as JSON)
SEARCH_TEXT = b"s"
_JOBS = frozenset({SEARCH_TEXT})
_TICKS = os.sysconf("SC_CLK_TCK")


class CostlyMarkup(ValueError):
    """The page's markup would cost the parser more than the limits: the message says which."""


class _Forked:
    """A child forked from this process (:func:`fork_children`), as much of ``subprocess.Popen``
    as :class:`_Child` uses."""

    def __init__(self) -> None:
        import ctypes  # noqa: F401 - imported once, here: the children inherit them, import nothing
        import gc
        import resource  # noqa: F401

        to_child, self._to_child = os.pipe()
        self._from_child, from_child = os.pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except BaseException:
            for fd in (to_child, self._to_child, self._from_child, from_child):
                os.close(fd)
            raise
        if pid == 0:  # pragma: no cover - the child (tests/test_markup_guard.py drives it)
            code = 1
            try:
                keep = sorted((to_child, from_child))
                os.closerange(3, keep[0])  # the parent's pipes, files and sockets are none of its business
                os.closerange(keep[0] + 1, keep[1])
                os.closerange(keep[1] + 1, os.sysconf("SC_OPEN_MAX"))
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # the pipes are its input and output
                    os.dup2(null, fd)
                os.close(null)
                _die_with_parent(parent)
                gc.freeze()  # the objects it inherited are never scanned (nor copied by the scan)
                # what it inherited, and the same room as a fresh interpreter's child on top of it
                limit = _address_space() + (LIMIT_MIB << 20)
                _loop(limit, os.fdopen(to_child, "rb"), os.fdopen(from_child, "wb"))
                code = 0
            finally:
                os._exit(code)  # never back into the caller's code (nor its atexit functions)
        os.close(to_child)
        os.close(from_child)
        self.pid = pid
        self.stdin: BinaryIO | None = os.fdopen(self._to_child, "wb")
        self.stdout: BinaryIO | None = os.fdopen(self._from_child, "rb")

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _address_space() -> int:
    """Bytes of this process's address space (what ``RLIMIT_AS`` counts)."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _die_with_parent(parent: int) -> None:  # pragma: no cover - runs in the child
    """``PR_SET_PDEATHSIG``: SIGKILL when the thread that started this process ends; if it already
    has, end now."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


#: Set by :func:`fork_children`: this process starts its child by forking itself.
_fork = False


def fork_children() -> None:
    """This process starts its child by forking itself (~1 ms) instead of a fresh interpreter that
    imports the depth pass and Lexbor (25-35 ms of CPU, which a search index's pool paid once a
    worker, on its first page of many tags): for a process that has Lexbor and the search text
    imported and no other thread (a pool worker; one with another thread starts an interpreter, as
    a fork copies no other thread). The child's address-space limit is :data:`LIMIT_MIB` on top of
    what it inherited; its time is its own CPU, as a fresh child's."""
    global _fork
    _fork = True


class _Child:
    def __init__(self, fork: bool = False) -> None:
        self.proc: Any
        if (fork or _fork) and threading.active_count() == 1:
            self.proc = _Forked()
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from archiver.markup_guard import _serve; _serve()", str(LIMIT_MIB)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], _START_SECONDS)
        if not ready or self.proc.stdout.read(1) != _READY:  # its start is not counted in a page's limit
            self.close()
            raise EnvironmentProblem(f"the markup check's process ({sys.executable}) did not start")

    def cpu(self) -> float:
        """Seconds of CPU the child has used (user and system, from /proc)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14, 15)

    def ask(self, data: bytes, kind: bytes, seconds: float) -> tuple[bytes, bytes]:
        """The child's answer about ``data``: b"k" parsed (with the job's result, if it has one), b"m"
        out of memory (or the child died parsing it), b"" not parsed within ``seconds`` of its CPU."""
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        start = self.cpu()
        try:
            proc.stdin.write(_HEAD.pack(len(data), kind))
            proc.stdin.write(data)
            proc.stdin.flush()
        except OSError:
            return _MEMORY, b""  # it died
        deadline = time.monotonic() + seconds + _START_SECONDS
        while not select.select([proc.stdout], [], [], _POLL)[0]:
            if self.cpu() - start > seconds or time.monotonic() > deadline:
                return b"", b""
        answer = proc.stdout.read(1) or _MEMORY  # no byte: it died (Lexbor failing to allocate may abort)
        if answer != _OK or kind not in _JOBS:
            return answer, b""
        head = proc.stdout.read(_RESULT.size)
        (n,) = _RESULT.unpack(head) if len(head) == _RESULT.size else (MAX_RESULT + 1,)
        result = proc.stdout.read(n) if n <= MAX_RESULT else b""
        return (answer, result) if len(result) == n else (_MEMORY, b"")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                with contextlib.suppress(OSError):  # a page left in the buffer of a dead child's pipe
                    f.close()


_lock = threading.Lock()
_child: _Child | None = None
_owner = 0  # the pid that started _child: a forked worker starts its own
#: the thread that started _child: the kernel sends ``PR_SET_PDEATHSIG`` when that thread ends (not
#: the process), so a child started by a thread that has ended is gone or going, and is replaced
_starter: threading.Thread | None = None


def _close() -> None:
    global _child
    if _child is not None and _owner == os.getpid():
        _child.close()
    _child = None


def _ensure_child() -> _Child:
    """This process's child, started when there is none (or the one there is not this process's or
    outlived the thread that started it). Under ``_lock``."""
    global _child, _owner, _starter
    if _child is not None and _owner == os.getpid() and _starter is not None and _starter.is_alive():
        return _child
    _close()
    _child, _owner, _starter = _Child(), os.getpid(), threading.current_thread()
    return _child


atexit.register(_close)


def start_forked_child() -> None:
    """Start this process's child now as a fork of it, as :func:`fork_children` makes a worker do
    (~1 ms against an interpreter's 25-35 ms of CPU), for a process that has Lexbor and the search
    text imported, no other thread yet and will have some (a search index's builder, about to start
    its pool: a fork copies no other thread, so the child could not be forked later). Nothing when
    it has a child already, or another thread (its child is then started on first use, as ever).
    :func:`close_child` ends it."""
    global _child, _owner, _starter
    with _lock:
        live = _child is not None and _owner == os.getpid() and _starter is not None and _starter.is_alive()
        if live or threading.active_count() != 1:
            return
        _close()
        _child, _owner, _starter = _Child(fork=True), os.getpid(), threading.current_thread()


def close_child() -> None:
    """End this process's child, if it started one, and wait for it (a forked worker, which runs no
    ``atexit`` function, calls it before it exits); the next check starts another."""
    with _lock:
        _close()


def needs_check(doc: str | bytes) -> bool:
    """Whether :func:`vet` would ask the child about ``doc`` (False: it returns at once)."""
    return (doc.count(b"<") if isinstance(doc, bytes) else doc.count("<")) > TRUSTED_TAGS


def vet(doc: str | bytes) -> None:
    """Return if parsing ``doc`` is bounded (few tags, or the child parsed it within the limits);
    raise :class:`CostlyMarkup` otherwise. ``doc`` is a decoded document or, as bytes, one that
    :func:`archiver.html_depth.bound_depth_bytes` reads."""
    if needs_check(doc):
        if isinstance(doc, bytes):
            _ask(doc, b"b")
        else:
            _ask(doc.encode("utf-8", "surrogatepass"), b"t")


def run(text: str, job: bytes) -> bytes:
    """The result of ``job`` (:data:`SEARCH_TEXT`) done by the child with the decoded document
    ``text`` under its limits, so that a document that needs the check is parsed once, there;
    :class:`CostlyMarkup` when it goes over them."""
    return _ask(text.encode("utf-8", "surrogatepass"), job)


def _ask(data: bytes, kind: bytes) -> bytes:
    with _lock:
        child = _ensure_child()
        seconds = limit_seconds(len(data))
        try:
            answer, result = child.ask(data, kind, seconds)
        except BaseException:  # it did not start, or an interruption: the next check starts another
            _close()
            raise
        if answer == _OK:
            return result
        _close()
    if answer == _MEMORY:
        raise CostlyMarkup(f"markup too costly to parse (more than {LIMIT_MIB} MiB)")
    raise CostlyMarkup(f"markup too costly to parse (more than {seconds:.1f} s of CPU)")


def limit_seconds(size: int) -> float:
    """Seconds the check of a page of ``size`` bytes may take."""
    return LIMIT_SECONDS + LIMIT_SECONDS_A_MIB * size / (1 << 20)


def _serve() -> None:  # pragma: no cover - runs in the child (tests/test_markup_guard.py drives it)
    """The child: limits itself, then parses each page it is sent and answers b"k", or b"m" when
    memory ran out (Lexbor failing to allocate may also end the process: the parent sees it die)."""
    _die_with_parent(os.getppid())
    _loop(int(sys.argv[1]) << 20, sys.stdin.buffer, sys.stdout.buffer)


def _loop(limit: int, stdin: BinaryIO, stdout: BinaryIO) -> None:  # pragma: no cover - the child
    """The child's work, once it dies with its parent: ``limit`` bytes of address space at most, then
    each page read from ``stdin`` answered on ``stdout``."""
    import json
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from selectolax.lexbor import LexborHTMLParser

    from archiver.html_depth import bound_depth, bound_depth_bytes

    stdout.write(_READY)
    stdout.flush()
    while head := stdin.read(_HEAD.size):
        n, kind = _HEAD.unpack(head)
        data = stdin.read(n)
        result = b""
        try:
            if kind == b"b":
                LexborHTMLParser(bound_depth_bytes(data))
            elif kind == SEARCH_TEXT:
                # imported by the first such job (a capture's child never gets one): its CPU counts
                # against that job's limit, a few tens of milliseconds of its seconds
                from archiver.search.text import page_of

                page = page_of(data.decode("utf-8", "surrogatepass"))
                result = json.dumps([page.title, page.blocks, page.cut]).encode()
            else:
                LexborHTMLParser(bound_depth(data.decode("utf-8", "surrogatepass")))
            answer = _OK
        except MemoryError:
            answer = _MEMORY
        del data
        stdout.write(answer)
        if answer == _OK and kind in _JOBS:
            stdout.write(_RESULT.pack(len(result)))
            stdout.write(result)
        stdout.flush()
