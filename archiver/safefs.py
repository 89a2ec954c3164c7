"""Safe writes on disk: extraction that never leaves its folder and leaves nothing behind on failure,
temporary files that a killed run leaves recognisable, and signals turned into a clean interruption.

:class:`Staging` is what ``extract`` (gwtar and ZIM) writes through. Every member goes into a fresh
private folder first, through folder descriptors opened one segment at a time with ``O_NOFOLLOW``
(a symbolic link is never walked through, whatever the names say), files created with ``O_EXCL``.
Symbolic links are made last, and only those whose target resolves (on disk, every link followed)
inside the output folder are kept. Then the result goes into place: a missing output folder is the
staging folder renamed; an existing one gets each member moved in, with a journal, so any failure
(an unsafe member, a hash mismatch, a full disk, a signal) undoes exactly what the run did.

:func:`temp_path` names the temporary file of an output ``OUT`` as ``.OUT.archiver-tmp-PID-RAND``
beside it; :func:`sweep_stale` removes those whose process is gone (after a ``kill -9``).
:func:`interruptible` makes SIGTERM and SIGHUP raise :class:`KeyboardInterrupt`, so the same cleanup
runs as for Ctrl-C (exit 130). Inside it, :func:`deferred` holds those signals and Ctrl-C back for
code that an exception raised between two of its bytecodes would leave unable to clean up; they are
raised at its :func:`checkpoint` calls or when it ends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from archiver import stopsignals
from archiver.errors import ArchiverError, FormatError, UsageError
from archiver.walk import rmtree

__all__ = [
    "TMP_TAG",
    "Staging",
    "checkpoint",
    "deferred",
    "interruptible",
    "io_error",
    "open_regular",
    "read_regular",
    "sweep_stale",
    "temp_dir",
    "temp_path",
]

TMP_TAG = ".archiver-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


def io_error(e: OSError, subject: str, doing: str = "") -> ArchiverError:
    """One line for a failed read or write: ``no space left on device while writing 'a/b.png'``."""
    what = (e.strerror or str(e)).lower() if e.errno != errno.ENOSPC else "no space left on device"
    return ArchiverError(f"{what}{' ' + doing if doing else ''}", subject=subject)


# ------------------------------------------------------------------------------- reading a file

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def open_regular(path: str | Path, *, follow: bool = False) -> int:
    """A read descriptor of the regular file ``path``: opened without blocking (a FIFO under that
    name never holds the caller), a symbolic link as its last component refused unless ``follow``,
    and checked with ``fstat`` on the descriptor opened. ``FormatError`` naming ``path`` otherwise."""
    try:
        fd = os.open(path, _READ_FLAGS | (0 if follow else os.O_NOFOLLOW))
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):
            raise FormatError("is a symbolic link, not a regular file", subject=str(path)) from None
        raise FormatError(f"cannot be read: {(e.strerror or str(e)).lower()}", subject=str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FormatError("is not a regular file", subject=str(path))
    return fd


def read_regular(path: str | Path, limit: int, *, follow: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), at most ``limit`` of them: a
    larger file is a ``FormatError`` naming it, read no further than ``limit`` + 1 bytes."""
    fd = open_regular(path, follow=follow)
    try:
        if os.fstat(fd).st_size > limit:  # refused unread (a sparse terabyte is no read of `limit`)
            raise FormatError(f"is larger than {limit} bytes", subject=str(path))
        with open(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise FormatError(f"cannot be read: {(e.strerror or str(e)).lower()}", subject=str(path)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FormatError(f"is larger than {limit} bytes", subject=str(path))
    return data


# -------------------------------------------------------------------------------- temporary files


def _prefix(out: Path) -> str:
    return f".{out.name[:80]}{TMP_TAG}"


def temp_path(out: Path, suffix: str = "") -> Path:
    """A fresh temporary name beside ``out``, recognisable as this process's (stale ones of dead
    processes are removed first)."""
    import secrets  # here, as shutil and ctypes below: not the import of a reader of the store

    sweep_stale(out)
    return out.with_name(f"{_prefix(out)}{os.getpid()}-{secrets.token_hex(4)}{suffix}")


@contextlib.contextmanager
def temp_dir(out: Path) -> Iterator[Path]:
    """A fresh private folder beside ``out`` (see :func:`temp_path`), removed on exit."""
    work = temp_path(out)

    try:  # made inside the try: a signal right after the mkdir still removes it
        os.mkdir(work, 0o700)
        yield work
    finally:
        with _signals_held():
            rmtree(work, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(out: Path) -> list[Path]:
    """Remove the temporary files and folders of ``out`` left by processes that no longer run;
    returns what was removed."""
    return _sweep(out.parent, _prefix(out))


def _sweep(folder: Path, prefix: str) -> list[Path]:
    removed: list[Path] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix) :].split("-", 1)[0]
        if not pid.isascii() or not pid.isdigit() or _alive(int(pid)):
            continue
        p = folder / name
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.is_symlink():
                rmtree(p)
            else:
                p.unlink()
            removed.append(p)
    return removed


#: the signal that last raised KeyboardInterrupt inside an :func:`interruptible` block (its name)
_signalled: str | None = None


def signalled() -> str | None:
    """The name of the signal that interrupted the current :func:`interruptible` block, if one did.
    (Code that calls a library calling back into Python, such as libzim, holds the signals with
    :func:`deferred` instead: raised in a callback, the library turned the interruption into an
    error of its own.)"""
    return _signalled


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`KeyboardInterrupt` inside the block (main thread only)."""
    global _signalled
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _signalled = None

    def handler(signum: int, frame: FrameType | None) -> None:
        global _signalled
        _signalled = signal.Signals(signum).name
        raise KeyboardInterrupt(_signalled)

    try:
        with stopsignals.installed(handler, stopsignals.STOP_SIGNALS):  # not one ignored (nohup)
            yield
    finally:
        _signalled = None


#: a signal received inside a :func:`deferred` block and not raised yet (its name)
_pending: str | None = None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP received inside the block are held, not raised where they land:
    :func:`checkpoint` raises :class:`KeyboardInterrupt` for a held one, and so does the block's end
    (when no other exception is leaving it). For code that a KeyboardInterrupt between any two of its
    bytecodes would leave unable to clean up: :mod:`zipfile` interrupted inside ``ZipFile.open`` keeps
    the archive "writing", and closing it then raises ValueError in place of the interruption (and
    again when the object is collected). Main thread only; elsewhere the block changes nothing."""
    global _pending, _signalled
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _pending = None

    def handler(signum: int, frame: FrameType | None) -> None:
        global _pending
        _pending = _pending or signal.Signals(signum).name

    try:
        with stopsignals.installed(handler, (signal.SIGINT, *stopsignals.STOP_SIGNALS)):
            yield
    finally:
        name, _pending = _pending, None
    if name is not None:
        _signalled = name
        raise KeyboardInterrupt(name)


def checkpoint() -> None:
    """Raise :class:`KeyboardInterrupt` if a signal is held by the enclosing :func:`deferred` block."""
    global _pending, _signalled
    if _pending is not None:
        name, _pending = _pending, None
        _signalled = name
        raise KeyboardInterrupt(name)


# ------------------------------------------------------------------------------------------ staging


def _open_dir(root: int, parts: list[str], *, create: bool, made: list[tuple[int, str]] | None = None) -> int:
    """A descriptor of the folder ``root/parts...``, walked with ``O_NOFOLLOW`` (never through a link);
    missing folders are created when ``create`` (recorded in ``made`` as (parent fd copy, name))."""
    fd = os.dup(root)
    try:
        for i, part in enumerate(parts):
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                if made is not None:
                    made.append((os.dup(fd), part))
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                where = "/".join(parts[: i + 1])
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    raise FormatError(
                        f"{where!r} is a symbolic link, not a folder; refusing to write through it"
                    ) from None
                if e.errno == errno.ENOTDIR:
                    raise FormatError(f"{where!r} is a file where a folder is needed") from None
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _inside(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip("/") + "/")


class Staging:
    """Write members under ``out`` safely (see the module's docstring). Use as a context manager; call
    :meth:`commit` at the end; leaving the block without it (an exception) undoes everything."""

    def __init__(self, out: Path, *, force: bool, subject: str) -> None:
        self.out = Path(os.path.abspath(out))
        self.subject = subject
        self.force = force
        self._made_parents: list[Path] = []
        self._order: list[tuple[str, str]] = []  # (relative path, kind) in creation order
        self._links: list[str] = []
        self._committed = False
        if os.path.lexists(self.out) and not self.out.is_dir():
            raise UsageError("exists and is not a folder", subject=str(out))
        self.merge = self.out.is_dir()
        if self.merge:  # what an extraction killed with -9 left in it
            _sweep(self.out, TMP_TAG)
        if self.merge and not force and any(os.scandir(self.out)):
            raise UsageError("the folder is not empty; use --force to write into it", subject=str(out))
        if self.merge:
            import secrets

            self.stage = self.out / f"{TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}"
        else:
            self.stage = temp_path(self.out)
        self._fd = -1
        self._dirs: dict[tuple[str, ...], int] = {}

    # -- writing into the staging folder

    def _parent(self, rel: str) -> tuple[int, str]:
        *folders, name = rel.split("/")
        return self._dir(folders), name

    def _dir(self, parts: list[str]) -> int:
        """A descriptor (the caller closes it) of the staged folder ``parts``, created if missing."""
        key = tuple(parts)
        cached = self._dirs.get(key)
        if cached is not None:
            return os.dup(cached)
        try:
            fd = _open_dir(self._fd, parts, create=True)
        except FormatError as e:
            e.subject = e.subject or self.subject
            raise
        if len(self._dirs) >= 256:
            for old in self._dirs.values():
                os.close(old)
            self._dirs.clear()
        self._dirs[key] = os.dup(fd)
        return fd

    def folder(self, rel: str) -> None:
        os.close(self._dir(rel.split("/")))
        self._order.append((rel, "dir"))

    def create(self, rel: str, mode: int = 0o644) -> int:
        """A new file at ``rel``: returns its descriptor (the caller writes and closes it)."""
        parent, name = self._parent(rel)
        try:
            fd = os.open(name, _FILE_FLAGS, mode, dir_fd=parent)
        except FileExistsError:
            raise FormatError(f"member {rel!r} appears twice", subject=self.subject) from None
        finally:
            os.close(parent)
        self._order.append((rel, "file"))
        return fd

    def hardlink(self, rel: str, target: str) -> None:
        parent, name = self._parent(rel)
        tparent, tname = self._parent(target)
        try:
            os.link(tname, name, src_dir_fd=tparent, dst_dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)
            os.close(tparent)
        self._order.append((rel, "file"))

    def symlink(self, rel: str, target: str) -> None:
        """A symbolic link (make them after every other member); checked at :meth:`commit`."""
        parent, name = self._parent(rel)
        try:
            os.symlink(target, name, dir_fd=parent)
        finally:
            os.close(parent)
        self._order.append((rel, "symlink"))
        self._links.append(rel)

    # -- into place

    def _check_links(self, root: Path) -> None:
        real = os.path.realpath(root)
        for rel in self._links:
            if not _inside(real, os.path.join(real, rel)):
                target = os.readlink(os.path.join(real, rel))
                raise FormatError(
                    f"refusing to extract member {rel!r}: symbolic link to {target!r} resolves outside "
                    "the output folder",
                    subject=self.subject,
                )

    def commit(self) -> None:
        """Check the links, then move everything into place (see the class docstring)."""
        _syncfs(self._fd)  # every staged file on disk before any of them is published
        if not self.merge:
            self._check_links(self.stage)
            os.chmod(self.stage, 0o777 & ~_umask())
            os.rename(self.stage, self.out)
            self._committed = True
            return
        journal: list[tuple[str, int, str, str]] = []
        out_fd = os.open(self.out, os.O_RDONLY | os.O_DIRECTORY)
        backups = self.stage / ".replaced"
        try:
            for n, (rel, kind) in enumerate(self._order):
                *folders, name = rel.split("/")
                made: list[tuple[int, str]] = []
                try:
                    dst = _open_dir(out_fd, folders, create=True, made=made)
                except FormatError as e:
                    e.subject = str(self.out)
                    raise
                finally:
                    journal += [("mkdir", d, nm, "") for d, nm in made]
                if kind == "dir":
                    made = []
                    try:
                        os.close(_open_dir(dst, [name], create=True, made=made))
                    finally:
                        journal += [("mkdir", d, nm, "") for d, nm in made]
                        os.close(dst)
                    continue
                try:
                    st = os.stat(name, dir_fd=dst, follow_symlinks=False)
                except FileNotFoundError:
                    st = None
                if st is not None:
                    if stat.S_ISDIR(st.st_mode):
                        os.close(dst)
                        raise FormatError(
                            f"{rel!r} is a folder; a member needs it as a file", subject=str(self.out)
                        )
                    backups.mkdir(exist_ok=True)
                    os.rename(name, str(backups / str(n)), src_dir_fd=dst)
                    journal.append(("backup", os.dup(dst), name, str(backups / str(n))))
                src = _open_dir(self._fd, folders, create=False)
                try:
                    os.rename(name, name, src_dir_fd=src, dst_dir_fd=dst)
                finally:
                    os.close(src)
                journal.append(("placed", dst, name, ""))
            self._check_links(self.out)
            os.fsync(out_fd)
        except BaseException:
            _undo(journal)
            raise
        finally:
            os.close(out_fd)
        for _, fd, _, _ in journal:
            os.close(fd)
        self._committed = True

    def __enter__(self) -> Staging:
        try:  # a signal between the mkdir and the open still removes the folder
            if not self.merge:
                missing = []
                p = self.out.parent
                while not p.exists():
                    missing.append(p)
                    p = p.parent
                for p in reversed(missing):
                    p.mkdir()
                    self._made_parents.append(p)
            os.mkdir(self.stage, 0o700)
            self._fd = os.open(self.stage, _DIR_FLAGS)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in [self._fd, *self._dirs.values()]:
            with contextlib.suppress(OSError):
                if fd >= 0:
                    os.close(fd)
        self._dirs.clear()
        if self._committed and not self.merge:
            return

        with _signals_held():
            rmtree(self.stage, ignore_errors=True)
            if not self._committed:
                for p in reversed(self._made_parents):
                    with contextlib.suppress(OSError):
                        p.rmdir()


def _undo(journal: list[tuple[str, int, str, str]]) -> None:
    with _signals_held():
        for what, fd, name, backup in reversed(journal):
            with contextlib.suppress(OSError):
                if what == "placed":
                    os.unlink(name, dir_fd=fd)
                elif what == "backup":
                    os.rename(backup, name, dst_dir_fd=fd)
                elif what == "mkdir":
                    os.rmdir(name, dir_fd=fd)
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Cleanup is not cut short by a second SIGTERM/SIGHUP/SIGINT."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _syncfs(fd: int) -> None:
    """Flush the filesystem holding ``fd`` (Linux ``syncfs``: one call instead of an fsync a file);
    ``os.sync`` where it is missing."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syncfs(fd) == 0:
            return
    except (OSError, AttributeError):
        pass
    os.sync()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
